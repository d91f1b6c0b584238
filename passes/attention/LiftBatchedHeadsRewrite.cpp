//===- passes/attention/LiftBatchedHeadsRewrite.cpp - The folded core rewritten in 4-D ---===//
//
// lift-batched-heads' rewrite of a matched folded core: the same ops on
// [b, h, ., .] tensors read from the plumbing, one Reshape of the result
// back to [b*h, Sq, dv], and the Shape nodes of the old chain moved to the
// lifted one. Apart from the matcher because it is the part that changes
// the graph: anything it created is rolled back when it refuses.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "passes/MatchSupport.h"
#include "passes/attention/LiftBatchedHeadsLifter.h"

#include <algorithm>

namespace onnxc::lift {

using match::matched;
using match::soleUser;

Node *Lifter::create(OpKind kind, const std::vector<Value *> &operands, const std::string &name,
                     const std::vector<std::pair<std::string, Attribute>> &attributes) {
  Node *node = graph_.createNode(kind, operands, 1, name, {graph_.uniqueName(name)}, insertBefore_);
  created_.push_back(node);
  for (const auto &[key, value] : attributes)
    node->setAttr(key, value);
  inferNodeShapes(*node, inference_);
  return node;
}

Value *Lifter::constantI64(const std::string &base, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return graph_.addConstant(graph_.uniqueName(base), Tensor::fromVector<int64_t>({n}, values));
}

/// [b*h, A, B] -> [b, h, A, B].
Value *Lifter::liftGeneric(Value *folded, const std::string &name) {
  Value *unsqueezed =
      create(OpKind::Unsqueeze, {folded, constantI64(name + ".axes", {1})}, name)->result(0);
  return create(OpKind::Reshape, {unsqueezed, constantI64(name + ".shape", {-1, heads_, 0, 0})},
                name)
      ->result(0);
}

Value *Lifter::lift(const FoldedOperand &op, const std::string &name) {
  Value *value = op.source;
  if (op.form == FoldedOperand::SeqFirstProjection) {
    // [S, b, h*d] -> [S, b, h, d] -> [b, h, S, d]: the sequence-first
    // head split, which batch-first-heads rewrites into the batch-first one.
    Value *split =
        create(OpKind::Reshape, {value, constantI64(name + ".split", {0, 0, op.heads, op.size})},
               name + ".split")
            ->result(0);
    value = create(OpKind::Transpose, {split}, name + ".heads",
                   {{"perm", Attribute(std::vector<int64_t>{1, 2, 0, 3})}})
                ->result(0);
  }
  for (auto it = op.scales.rbegin(); it != op.scales.rend(); ++it) {
    std::vector<Value *> operands = it->constantFirst ? std::vector<Value *>{it->constant, value}
                                                      : std::vector<Value *>{value, it->constant};
    value = create(it->kind, operands, name + ".scale")->result(0);
  }
  return value;
}

/// A side operand (mask, fill) of an elementwise link, in 4-D.
MatchResult<Value *> Lifter::liftSide(Value *side, const Dim &foldedBatch,
                                      const std::string &name) {
  const Shape &shape = side->shape();
  if (!shape.isRanked())
    return Rejection{"a mask of unknown rank meets the folded scores"};
  if (shape.rank() <= 2 || (shape.rank() == 3 && shape[0] == Dim(1)))
    return side;
  if (shape.rank() == 3 && shape[0] == foldedBatch)
    return liftGeneric(side, name);
  return Rejection{"a mask broadcasts against the folded scores in a way 4-D cannot"};
}

MatchStatus Lifter::rewrite() {
  std::string base = softmax_.name().empty() ? "attention" : softmax_.name();
  size_t assumptionsBefore = graph_.assumptions().size();
  MatchStatus lifted;
  try {
    lifted = liftCore(base);
  } catch (const Error &) {
    lifted = Rejection{"shape inference rejects the lifted ops"};
  }
  if (!lifted)
    rollBack(assumptionsBefore);
  return lifted;
}

/// The 4-D core in place of the folded one; what it created is rolled back
/// by rewrite when it refuses.
MatchStatus Lifter::liftCore(const std::string &base) {
  Value *q4 = lift(*q_, base + ".q4");
  Value *k4 = lift(*k_, base + ".k4");
  Value *v4 = lift(*v_, base + ".v4");
  Value *kt4 = create(OpKind::Transpose, {k4}, base + ".kt4",
                      {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 2})}})
                   ->result(0);
  Value *scores4 = create(OpKind::MatMul, {q4, kt4}, base + ".scores4")->result(0);
  MatchResult<Value *> scores = liftChain(scores4, base);
  if (!scores)
    return scores.rejection();
  const Shape &lifted = (*scores)->shape();
  if (!lifted.isRanked() || lifted.rank() != 4)
    return Rejection{"a mask broadcasts the lifted scores beyond 4-D"};
  MatchResult<Value *> probs = liftProbabilities(*scores);
  if (!probs)
    return probs.rejection();
  Value *o4 = create(OpKind::MatMul, {*probs, v4}, output_->name())->result(0);
  MatchResult<Value *> o3 = foldResult(o4, base);
  if (!o3)
    return o3.rejection();
  if (MatchStatus status = replaceOutput(o4, *o3, base); !status)
    return status;
  if (q_->form == FoldedOperand::SeqFirstProjection)
    mergeSequenceFirst(o4, *o3, base);
  return matched();
}

/// The links between the score MatMul and Softmax, copied onto the lifted
/// `scores` (their masks lifted too): the lifted scores before Softmax.
MatchResult<Value *> Lifter::liftChain(Value *scores, const std::string &base) {
  const Dim foldedBatch = scores_->result(0)->shape()[0];
  for (auto it = chain_.rbegin(); it != chain_.rend(); ++it) {
    Node *node = it->node;
    if (node->kind() == OpKind::Reshape)
      continue; // a view between [b*h] and [b, h]: the 4-D scores already are it
    // On BART's 4-D view of the scores a mask applies as it is; on the
    // folded scores it is lifted.
    bool onFoldedScores = hasRank(node->operand(it->scoreOperand), 3);
    std::vector<Value *> operands;
    for (size_t i = 0; i < node->numOperands(); ++i) {
      Value *operand = node->operand(i);
      if (i == it->scoreOperand)
        operands.push_back(scores);
      else if (!onFoldedScores)
        operands.push_back(operand);
      else if (hasRank(operand, 4))
        return Rejection{"a 4-D mask meets the folded 3-D scores"};
      else if (MatchResult<Value *> side = liftSide(operand, foldedBatch, base + ".mask4"))
        operands.push_back(*side);
      else
        return side.rejection();
    }
    Node *copy =
        graph_.createNode(node->kind(), operands, 1, node->name(),
                          {graph_.uniqueName(node->result(0)->name() + ".4d")}, insertBefore_);
    created_.push_back(copy);
    for (const auto &[key, value] : node->attributes())
      copy->setAttr(key, value);
    inferNodeShapes(*copy, inference_);
    scores = copy->result(0);
    if (hasRank(node->result(0), 4)) {
      if (MatchStatus status = measureInstead(node->result(0), scores); !status)
        return status.rejection();
    }
  }
  return scores;
}

/// Softmax of the lifted scores, and the zeroing Wheres after it: the
/// lifted probabilities.
MatchResult<Value *> Lifter::liftProbabilities(Value *scores) {
  Value *probs =
      create(OpKind::Softmax, {scores}, softmax_.name(), {{"axis", Attribute(int64_t(-1))}})
          ->result(0);
  if (hasRank(softmax_.result(0), 4)) {
    if (MatchStatus status = measureInstead(softmax_.result(0), probs); !status)
      return status.rejection();
  }
  // Zeroing Wheres were on the 4-D view already: the same ones on the
  // lifted probabilities.
  for (Value *unlifted = softmax_.result(0); Node * zero : zeroing_) {
    size_t kept = *zeroedProbabilities(*zero, unlifted);
    std::vector<Value *> operands = {zero->operand(0), zero->operand(1), zero->operand(2)};
    operands[kept] = probs;
    probs = create(OpKind::Where, operands, zero->name())->result(0);
    unlifted = zero->result(0);
    if (MatchStatus status = measureInstead(unlifted, probs); !status)
      return status.rejection();
  }
  return probs;
}

/// The lifted result `o4` back to [b*h, Sq, dv] for the users: [-1] ++
/// dims 2.. of o4.
MatchResult<Value *> Lifter::foldResult(Value *o4, const std::string &base) {
  Value *tail =
      create(OpKind::Shape, {o4}, base + ".o3.dims", {{"start", Attribute(int64_t(2))}})->result(0);
  Value *target = create(OpKind::Concat, {constantI64(base + ".o3.batch", {-1}), tail},
                         base + ".o3.dims", {{"axis", Attribute(int64_t(0))}})
                      ->result(0);
  Value *o3 = create(OpKind::Reshape, {o4, target}, base + ".o3")->result(0);
  if (o3->type() != output_->result(0)->type()) {
    return Rejection{"the lifted attention's result type differs from the pattern's"};
  }
  return o3;
}

/// `o3` in place of the value MatMul's result, and the Shape nodes that
/// measured that result reading `o4` instead.
MatchStatus Lifter::replaceOutput(Value *o4, Value *o3, const std::string &base) {
  if (MatchStatus status = remeasureFolded(output_->result(0), o4, base); !status)
    return status;
  std::string name = output_->result(0)->name();
  graph_.replaceAllUsesWith(output_->result(0), o3);
  graph_.eraseNode(output_);
  graph_.renameValue(o3, name);
  for (auto [reader, picked] : remeasuredFolded_) {
    std::string measured = reader->result(0)->name();
    graph_.replaceAllUsesWith(reader->result(0), picked);
    graph_.eraseNode(reader);
    graph_.renameValue(picked, measured);
  }
  remeasuredFolded_.clear();
  return matched();
}

/// Shape nodes measuring the folded result [b*h, Sq, dv] (DeBERTa sizes
/// its head merge from it) read the same dims from the 4-D result, so that
/// the Reshape back to [b*h, Sq, dv] keeps one user and the cleanup can
/// merge it with the head merge's Reshape.
MatchStatus Lifter::remeasureFolded(Value *folded, Value *o4, const std::string &base) {
  std::vector<Node *> readers;
  for (const Use &use : folded->uses())
    if (use.user->kind() == OpKind::Shape &&
        std::find(readers.begin(), readers.end(), use.user) == readers.end())
      readers.push_back(use.user);
  for (Node *reader : readers) {
    insertBefore_ = reader;
    auto dims = [&](int64_t start, int64_t end) {
      return create(OpKind::Shape, {o4}, base + ".o3.dims",
                    {{"start", Attribute(start)}, {"end", Attribute(end)}})
          ->result(0);
    };
    Value *foldedBatch =
        create(OpKind::Mul, {dims(0, 1), dims(1, 2)}, base + ".o3.dims")->result(0);
    Value *full = create(OpKind::Concat, {foldedBatch, dims(2, 4)}, base + ".o3.dims",
                         {{"axis", Attribute(int64_t(0))}})
                      ->result(0);
    auto clamp = [](int64_t axis) { return std::clamp<int64_t>(axis < 0 ? axis + 3 : axis, 0, 3); };
    int64_t start = clamp(reader->getInt("start", 0)), end = clamp(reader->getInt("end", 3));
    Value *picked = full;
    if (start != 0 || end != 3)
      picked = create(OpKind::Slice,
                      {full, constantI64(base + ".o3.start", {start}),
                       constantI64(base + ".o3.end", {std::max(start, end)})},
                      base + ".o3.dims")
                   ->result(0);
    if (picked->type() != reader->result(0)->type())
      return Rejection{"the folded result's dims do not come out of the lifted one"};
    remeasuredFolded_.emplace_back(reader, picked);
  }
  insertBefore_ = output_;
  return matched();
}

/// Shape nodes measuring a 4-D value of the old chain measure its lifted
/// copy (the same shape), so that the old chain is left dead. A reader may
/// come before the copy (which is created before the value MatMul): the
/// pass sorts the graph after lifting. Undone by rollBack.
MatchStatus Lifter::measureInstead(Value *old, Value *lifted) {
  if (!match::provablySameShape(old->shape(), lifted->shape()))
    return Rejection{"the lifted probabilities' shape differs from the pattern's"};
  std::vector<std::pair<Node *, size_t>> readers;
  for (const Use &use : old->uses())
    if (use.user->kind() == OpKind::Shape)
      readers.emplace_back(use.user, use.operandIndex);
  for (auto [reader, index] : readers) {
    reader->setOperand(index, lifted);
    remeasured_.push_back({reader, index, old});
  }
  return matched();
}

/// torch merges the heads of the folded result with Transpose {[1, 0, 2]}
/// to [Sq, b*h, dv] (then a Reshape to [Sq*b, h*dv]): that Transpose is
/// rebuilt from the 4-D result as Transpose {[2, 0, 1, 3]} to [Sq, b, h, dv]
/// and a Reshape, which the cleanup merges with the Reshape after it: the
/// sequence-first head merge batch-first-heads rewrites into the batch-first one.
void Lifter::mergeSequenceFirst(Value *o4, Value *o3, const std::string &base) {
  Node *merge = soleUser(graph_, o3);
  if (!isPerm(merge, {1, 0, 2}))
    return;
  created_.clear(); // what was created so far stays whatever happens here
  insertBefore_ = merge;
  std::optional<int64_t> size = o4->shape()[3].constant();
  if (!size)
    return;
  try {
    Value *heads = create(OpKind::Transpose, {o4}, base + ".merge",
                          {{"perm", Attribute(std::vector<int64_t>{2, 0, 1, 3})}})
                       ->result(0);
    Value *folded =
        create(OpKind::Reshape, {heads, constantI64(base + ".merge.shape", {0, -1, *size})},
               base + ".merge")
            ->result(0);
    if (folded->type() != merge->result(0)->type()) {
      rollBack(graph_.assumptions().size());
      return;
    }
    std::string name = merge->result(0)->name();
    graph_.replaceAllUsesWith(merge->result(0), folded);
    graph_.eraseNode(merge);
    graph_.renameValue(folded, name);
  } catch (const Error &) {
    rollBack(graph_.assumptions().size());
  }
}

void Lifter::rollBack(size_t assumptionsBefore) {
  for (const Remeasured &r : remeasured_)
    r.reader->setOperand(r.index, r.old);
  remeasured_.clear();
  remeasuredFolded_.clear();
  graph_.truncateAssumptions(assumptionsBefore);
  for (auto it = created_.rbegin(); it != created_.rend(); ++it)
    graph_.eraseNode(*it);
  created_.clear();
}

} // namespace onnxc::lift
