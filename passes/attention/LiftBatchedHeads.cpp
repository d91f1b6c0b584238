//===- passes/attention/LiftBatchedHeads.cpp - Heads out of the batch, into 4-D ---===//
//
// torch's nn.MultiheadAttention and the HF models copied from BART (BART,
// Whisper, CLIP, Marian, ...) compute attention with the heads folded into
// the batch: [b*h, S, d] operands, batched MatMuls, a [b*h, Sq, Sk] Softmax.
// fuse-attention matches one form, [b, h, S, d]; rather than a second
// matcher, this pass rewrites the folded core into that form:
//
//   %s = MatMul(%q3, %kt3)           [b*h, Sq, Sk]
//   ... masks and scales (Add, Sub, Mul, Div, Where; BART's Reshape to
//       [b, h, Sq, Sk] around its Add) ...
//   %p = Softmax(%s) {axis = -1}
//   %o3 = MatMul(%p, %v3)            [b*h, Sq, dv]
//
// becomes the same ops on [b, h, ., .] tensors, followed by one Reshape of
// the result back to [b*h, Sq, dv] for its users. The 4-D operands are read
// from the plumbing that folded them, so that fuse-attention sees the split
// heads it knows and reads the projections in place:
//
//   %q3 = Reshape(%q4 [b, h, S, d])                      (BART)   -> %q4
//   %q3 = Transpose(Reshape(%p [S, b, h*d] -> [S, b*h, d]))
//                             {perm = [1, 0, 2]}         (torch)  ->
//         Transpose(Reshape(%p -> [S, b, h, d])) {perm = [1, 2, 0, 3]}
//   %kt3 = Transpose(%k3) {perm = [0, 2, 1]}                      -> Kᵀ of the 4-D K
//
// torch's head merge of the result, Transpose {[1, 0, 2]} to [Sq, b*h, dv],
// is rebuilt from the 4-D result as Transpose {[2, 0, 1, 3]} and a Reshape:
// the sequence-first form fuse-attention reads and writes in place
// (Attention's seq_first).
//
// and scalar scales on them are carried over. DeBERTa's XSoftmax takes its
// Softmax on the [b, h, Sq, Sk] view and zeroes the hidden probabilities
// (Where(hidden, 0, p)) before folding them back for the value MatMul:
//
//   %p4 = Softmax(Reshape(%s -> [b, h, Sq, Sk]))
//   %o3 = MatMul(Reshape(Where(%hidden, 0, %p4) -> [b*h, Sq, Sk]), %v3)
//
// is lifted the same way, the Where kept on the 4-D probabilities for
// fuse-attention to read. A mask or other operand of
// rank 3 with a first dim of b*h is lifted the same way (Unsqueeze, then a
// Reshape to [-1, h, ., .]); one of rank <= 2, or with a first dim of 1,
// broadcasts to the same values in 4-D and is used as it is. The number of
// heads comes from the plumbing (or BART's Reshape of the scores); when no
// operand says it, the candidate is left alone (--explain says why). The old
// chain is left dead for dce; the cleanup after this pass merges the Reshape
// pairs the rewrite creates.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

#include <algorithm>
#include <optional>

namespace onnxc {

namespace {

using match::definedBy;
using match::scalarConstant;
using match::soleUser;
using match::transposePerm;

struct Rejection {
  const char *reason;
};

bool hasRank(const Value *value, size_t rank) {
  return value->shape().isRanked() && value->shape().rank() == rank;
}

bool isPerm(const Node *node, const std::vector<int64_t> &perm) {
  return node && node->kind() == OpKind::Transpose && transposePerm(*node) == perm;
}

/// A scalar Mul/Div on a folded operand: reapplied to the lifted one.
struct ScalarStep {
  OpKind kind;
  Value *constant;
  bool constantFirst;
};

/// How one folded operand [b*h, S, d] is read in 4-D.
struct FoldedOperand {
  enum Form { Split4d, SeqFirstProjection } form;
  Value *source = nullptr; // the [b, h, S, d] tensor, or the [S, b, h*d] projection
  int64_t heads = 0, size = 0;
  std::vector<ScalarStep> scales; // outermost first
};

Value *peelScalarSteps(Value *value, std::vector<ScalarStep> &steps) {
  while (Node *node = value->definingNode()) {
    if (node->kind() != OpKind::Mul && node->kind() != OpKind::Div)
      break;
    if (scalarConstant(node->operand(1))) {
      steps.push_back({node->kind(), node->operand(1), false});
      value = node->operand(0);
    } else if (node->kind() == OpKind::Mul && scalarConstant(node->operand(0))) {
      steps.push_back({node->kind(), node->operand(0), true});
      value = node->operand(1);
    } else {
      break;
    }
  }
  return value;
}

/// The projection P [S, b, h*d] of `merged` = Reshape(P) -> [S, b*h, d].
std::optional<FoldedOperand> seqFirstKeys(Value *merged) {
  Node *reshape = definedBy(merged, OpKind::Reshape);
  if (!reshape || !hasRank(reshape->operand(0), 3) || !hasRank(merged, 3))
    return std::nullopt;
  const Shape &in = reshape->operand(0)->shape(), &mid = merged->shape();
  std::optional<int64_t> channels = in[2].constant(), size = mid[2].constant();
  if (!channels || !size || *size <= 0 || *channels % *size != 0 || !(in[0] == mid[0]))
    return std::nullopt;
  int64_t heads = *channels / *size;
  if (!(in[1] * Dim(heads) == mid[1]))
    return std::nullopt;
  FoldedOperand op;
  op.form = FoldedOperand::SeqFirstProjection;
  op.source = reshape->operand(0);
  op.heads = heads;
  op.size = *size;
  return op;
}

/// The 4-D reading of `folded` [b*h, S, d], if the plumbing says it.
std::optional<FoldedOperand> foldedOperand(Value *folded) {
  FoldedOperand op;
  Value *value = peelScalarSteps(folded, op.scales);
  if (!hasRank(value, 3))
    return std::nullopt;
  const Shape &shape = value->shape();
  if (Node *reshape = definedBy(value, OpKind::Reshape)) {
    // BART: Reshape([b, h, S, d] -> [b*h, S, d]).
    Value *split = reshape->operand(0);
    if (!hasRank(split, 4))
      return std::nullopt;
    const Shape &in = split->shape();
    std::optional<int64_t> heads = in[1].constant(), size = in[3].constant();
    if (!heads || !size || !(in[0] * in[1] == shape[0]) || !(in[2] == shape[1]) ||
        !(in[3] == shape[2]))
      return std::nullopt;
    op.form = FoldedOperand::Split4d;
    op.source = split;
    op.heads = *heads;
    op.size = *size;
    return op;
  }
  if (Node *transpose = definedBy(value, OpKind::Transpose); isPerm(transpose, {1, 0, 2})) {
    // torch: Transpose(Reshape([S, b, h*d] -> [S, b*h, d])) {perm = [1, 0, 2]}.
    std::optional<FoldedOperand> keys = seqFirstKeys(transpose->operand(0));
    if (keys)
      keys->scales = op.scales;
    return keys;
  }
  return std::nullopt;
}

/// The number of heads a Reshape between [b*h, A, B] and [b, h, A, B] (either
/// way) splits off, when its shapes say so.
std::optional<int64_t> reshapeFoldsHeads(const Node &reshape) {
  const Shape &in = reshape.operand(0)->shape(), &out = reshape.result(0)->shape();
  if (!in.isRanked() || !out.isRanked())
    return std::nullopt;
  const Shape &four = in.rank() == 4 ? in : out, &three = in.rank() == 4 ? out : in;
  if (four.rank() != 4 || three.rank() != 3 || !(four[0] * four[1] == three[0]) ||
      !(four[2] == three[1]) || !(four[3] == three[2]) || !four[1].constant())
    return std::nullopt;
  return *four[1].constant();
}

/// Which operand of `node` carries `probs` when `node` is Where(c, 0, probs)
/// or Where(c, probs, 0): probabilities zeroed where c says (XSoftmax).
std::optional<size_t> zeroedProbabilities(const Node &node, const Value *probs) {
  if (node.kind() != OpKind::Where)
    return std::nullopt;
  for (size_t kept : {size_t(1), size_t(2)}) {
    std::optional<double> other = scalarConstant(node.operand(kept == 1 ? 2 : 1));
    if (node.operand(kept) == probs && other && *other == 0)
      return kept;
  }
  return std::nullopt;
}

/// The one user of `value` other than Shape nodes (DeBERTa measures its
/// probabilities to fold them back), or null.
Node *soleUserButShapes(const Graph &graph, const Value *value) {
  if (graph.isOutput(value))
    return nullptr;
  Node *user = nullptr;
  for (const Use &use : value->uses()) {
    if (use.user->kind() == OpKind::Shape)
      continue;
    if (user && user != use.user)
      return nullptr;
    user = use.user;
  }
  return user;
}

/// A 4-D Softmax whose probabilities (zeroed or not) are folded back to
/// [b*h, Sq, Sk] for a 3-D value MatMul: the Reshape that folds them.
Node *foldAfterSoftmax(const Graph &graph, Node &softmax, std::vector<Node *> *zeroing) {
  Value *probs = softmax.result(0);
  Node *user = soleUserButShapes(graph, probs);
  while (user && zeroedProbabilities(*user, probs)) {
    if (zeroing)
      zeroing->push_back(user);
    probs = user->result(0);
    user = soleUserButShapes(graph, probs);
  }
  if (!user || user->kind() != OpKind::Reshape || user->operand(0) != probs ||
      !hasRank(user->result(0), 3) || !reshapeFoldsHeads(*user))
    return nullptr;
  return user;
}

/// One link of the chain from the score MatMul to Softmax.
struct ChainLink {
  Node *node;
  size_t scoreOperand; // which operand carries the scores (elementwise links)
};

class Lifter {
public:
  Lifter(Graph &graph, Node &softmax) : graph_(graph), softmax_(softmax), inference_(graph) {}

  void run() {
    match();
    insertBefore_ = output_;
    rewrite();
  }

private:
  Graph &graph_;
  Node &softmax_;
  Node *scores_ = nullptr, *output_ = nullptr;
  std::vector<ChainLink> chain_; // from the score MatMul's user up to Softmax's producer
  std::vector<Node *> zeroing_;  // Where(hidden, 0, p) links after a 4-D Softmax (DeBERTa)
  struct Remeasured {
    Node *reader;
    size_t index;
    Value *old;
  };
  std::vector<Remeasured> remeasured_; // Shape readers moved to lifted values
  // Shape readers of the folded result and what replaces each once lifted.
  std::vector<std::pair<Node *, Value *>> remeasuredFolded_;
  std::optional<FoldedOperand> q_, k_, v_;
  int64_t heads_ = 0;
  std::vector<Node *> created_;
  Node *insertBefore_ = nullptr; // where created nodes go: before the value MatMul
  // One context for every created node, so that the contents of the Shape
  // and Concat computing a Reshape target reach the Reshape's rule.
  InferenceContext inference_;

  void match() {
    const bool fourD = hasRank(softmax_.result(0), 4);
    int64_t axis = softmax_.getInt("axis", -1);
    if (axis != -1 && axis != (fourD ? 3 : 2))
      throw Rejection{"Softmax is not over the last (key) axis"};
    std::optional<int64_t> foldedHeads; // from a Reshape of the scores to or from 4-D
    Value *probs = softmax_.result(0);
    if (fourD) {
      Node *fold = foldAfterSoftmax(graph_, softmax_, &zeroing_);
      if (!fold)
        throw Rejection{"the 4-D probabilities are not folded back to [b*h, Sq, Sk]"};
      foldedHeads = reshapeFoldsHeads(*fold);
      probs = fold->result(0);
    }
    output_ = soleUser(graph_, probs);
    if (!output_ || output_->kind() != OpKind::MatMul || output_->operand(0) != probs ||
        !hasRank(output_->operand(1), 3))
      throw Rejection{"Softmax output is not multiplied by a 3-D V alone"};
    Value *value = softmax_.operand(0);
    for (int steps = 0;; ++steps) {
      if (steps > 16)
        throw Rejection{"too many ops between the score MatMul and Softmax"};
      Node *node = value->definingNode();
      if (!node)
        throw Rejection{"scores do not come from a MatMul"};
      // Shape nodes may measure the scores (DeBERTa sizes its Reshapes so):
      // those of a 4-D view are moved to the lifted copy, those of the
      // folded scores die with the Reshape targets they compute.
      Node *consumer = chain_.empty() ? &softmax_ : chain_.back().node;
      if (soleUserButShapes(graph_, value) != consumer)
        throw Rejection{"an intermediate score tensor is used elsewhere"};
      if (node->kind() == OpKind::MatMul) {
        scores_ = node;
        break;
      }
      switch (node->kind()) {
      case OpKind::Reshape: {
        // BART's view of the scores as [b, h, Sq, Sk] around its mask Add
        // (DeBERTa's, before its Softmax).
        if (!node->operand(0)->shape().isRanked() || !node->result(0)->shape().isRanked())
          throw Rejection{"a Reshape of the scores has an unknown shape"};
        std::optional<int64_t> heads = reshapeFoldsHeads(*node);
        if (!heads)
          throw Rejection{"a Reshape of the scores does not split [b*h] into [b, h]"};
        if (foldedHeads && *foldedHeads != *heads)
          throw Rejection{"the scores are split into different numbers of heads"};
        foldedHeads = heads;
        chain_.push_back({node, 0});
        value = node->operand(0);
        continue;
      }
      case OpKind::Add:
      case OpKind::Sub:
      case OpKind::Mul:
      case OpKind::Div: {
        size_t score = scoreOperand(*node, 0, 1);
        chain_.push_back({node, score});
        value = node->operand(score);
        continue;
      }
      case OpKind::Where: {
        size_t score = scoreOperand(*node, 1, 2);
        chain_.push_back({node, score});
        value = node->operand(score);
        continue;
      }
      default:
        throw Rejection{"an unexpected op sits between the score MatMul and Softmax"};
      }
    }
    if (!hasRank(scores_->result(0), 3) && !hasRank(scores_->result(0), 4))
      throw Rejection{"the score MatMul is not 3-D"};
    if (!hasRank(scores_->result(0), 3))
      throw Rejection{"the score MatMul is already 4-D"};
    Value *kt = scores_->operand(1);
    std::vector<ScalarStep> ktScales;
    Value *ktBare = peelScalarSteps(kt, ktScales);
    Node *transpose = definedBy(ktBare, OpKind::Transpose);
    if (isPerm(transpose, {0, 2, 1})) {
      k_ = foldedOperand(transpose->operand(0));
    } else if (isPerm(transpose, {1, 2, 0})) {
      // torch's exporter merges the head transpose [1, 0, 2] of the keys
      // with the score transpose [0, 2, 1]: Kᵀ = Transpose(Reshape(P)) {[1, 2, 0]}.
      k_ = seqFirstKeys(transpose->operand(0));
    } else {
      throw Rejection{"the keys are not transposed by [0, 2, 1] before the score MatMul"};
    }
    q_ = foldedOperand(scores_->operand(0));
    v_ = foldedOperand(output_->operand(1));
    if (k_)
      k_->scales.insert(k_->scales.begin(), ktScales.begin(), ktScales.end());
    for (const std::optional<FoldedOperand> *op : {&q_, &k_, &v_})
      if (*op)
        heads_ = heads_ ? heads_ : (*op)->heads;
    if (!heads_ && foldedHeads)
      heads_ = *foldedHeads;
    if (!heads_)
      throw Rejection{"no operand says how many heads are folded into the batch"};
    for (const std::optional<FoldedOperand> *op : {&q_, &k_, &v_})
      if (*op && (*op)->heads != heads_)
        throw Rejection{"Q, K and V fold different numbers of heads"};
    if (foldedHeads && *foldedHeads != heads_)
      throw Rejection{"the scores and the operands fold different numbers of heads"};
    if (!q_ || !k_ || !v_)
      throw Rejection{"Q, K or V is not split into heads by a recognized Reshape/Transpose"};
    // Each operand's fold was checked against its own [b*h, S, d], and the
    // folded MatMuls agree on b*h: with h the same constant, so does b.
  }

  static size_t rankOf(const Value *value) {
    return value->shape().isRanked() ? value->shape().rank() : 0;
  }

  /// Which of operands `a` and `b` of an elementwise link leads back to the
  /// score MatMul (exactly one must).
  static size_t scoreOperand(const Node &node, size_t a, size_t b) {
    auto leads = [](const Value *value) {
      for (int depth = 0; value && depth < 16; ++depth) {
        const Node *producer = value->definingNode();
        if (!producer)
          return false;
        if (producer->kind() == OpKind::MatMul)
          return true;
        if (producer->numOperands() == 0)
          return false;
        // Follow the widest operand (the scores are the full-size one).
        const Value *next = producer->operand(0);
        for (size_t i = 1; i < producer->numOperands(); ++i)
          if (producer->operand(i) && rankOf(producer->operand(i)) > rankOf(next))
            next = producer->operand(i);
        value = next;
      }
      return false;
    };
    // The score MatMul itself (under scalar scales), when both sides lead
    // to some MatMul: DeBERTa adds position terms gathered from Q·Kᵣᵀ.
    auto isScoreMatMul = [](const Value *value) {
      while (const Node *producer = value->definingNode()) {
        if (producer->kind() == OpKind::MatMul)
          return true;
        if (producer->kind() != OpKind::Mul && producer->kind() != OpKind::Div)
          return false;
        if (scalarConstant(producer->operand(1)))
          value = producer->operand(0);
        else if (producer->kind() == OpKind::Mul && scalarConstant(producer->operand(0)))
          value = producer->operand(1);
        else
          return false;
      }
      return false;
    };
    bool first = leads(node.operand(a)), second = leads(node.operand(b));
    if (first && second) {
      first = isScoreMatMul(node.operand(a));
      second = isScoreMatMul(node.operand(b)) && !first; // two such: either reads the same
    }
    if (first == second)
      throw Rejection{"an op before Softmax does not apply a mask or scale to the scores"};
    return first ? a : b;
  }

  Node *create(OpKind kind, const std::vector<Value *> &operands, const std::string &name,
               const std::vector<std::pair<std::string, Attribute>> &attributes = {}) {
    Node *node =
        graph_.createNode(kind, operands, 1, name, {graph_.uniqueName(name)}, insertBefore_);
    created_.push_back(node);
    for (const auto &[key, value] : attributes)
      node->setAttr(key, value);
    inferNodeShapes(*node, inference_);
    return node;
  }

  Value *constantI64(const std::string &base, std::vector<int64_t> values) {
    int64_t n = int64_t(values.size());
    return graph_.addConstant(graph_.uniqueName(base), Tensor::fromVector<int64_t>({n}, values));
  }

  /// [b*h, A, B] -> [b, h, A, B].
  Value *liftGeneric(Value *folded, const std::string &name) {
    Value *unsqueezed =
        create(OpKind::Unsqueeze, {folded, constantI64(name + ".axes", {1})}, name)->result(0);
    return create(OpKind::Reshape, {unsqueezed, constantI64(name + ".shape", {-1, heads_, 0, 0})},
                  name)
        ->result(0);
  }

  Value *lift(const FoldedOperand &op, const std::string &name) {
    Value *value = op.source;
    if (op.form == FoldedOperand::SeqFirstProjection) {
      // [S, b, h*d] -> [S, b, h, d] -> [b, h, S, d]: the sequence-first
      // head split fuse-attention reads in place (seq_first).
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
  Value *liftSide(Value *side, const Dim &foldedBatch, const std::string &name) {
    const Shape &shape = side->shape();
    if (!shape.isRanked())
      throw Rejection{"a mask of unknown rank meets the folded scores"};
    if (shape.rank() <= 2 || (shape.rank() == 3 && shape[0] == Dim(1)))
      return side;
    if (shape.rank() == 3 && shape[0] == foldedBatch)
      return liftGeneric(side, name);
    throw Rejection{"a mask broadcasts against the folded scores in a way 4-D cannot"};
  }

  void rewrite() {
    std::string base = softmax_.name().empty() ? "attention" : softmax_.name();
    size_t assumptionsBefore = graph_.assumptions().size();
    try {
      const Dim foldedBatch = scores_->result(0)->shape()[0];
      Value *q4 = lift(*q_, base + ".q4");
      Value *k4 = lift(*k_, base + ".k4");
      Value *v4 = lift(*v_, base + ".v4");
      Value *kt4 = create(OpKind::Transpose, {k4}, base + ".kt4",
                          {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 2})}})
                       ->result(0);
      Value *scores = create(OpKind::MatMul, {q4, kt4}, base + ".scores4")->result(0);
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
            throw Rejection{"a 4-D mask meets the folded 3-D scores"};
          else
            operands.push_back(liftSide(operand, foldedBatch, base + ".mask4"));
        }
        Node *copy =
            graph_.createNode(node->kind(), operands, 1, node->name(),
                              {graph_.uniqueName(node->result(0)->name() + ".4d")}, insertBefore_);
        created_.push_back(copy);
        for (const auto &[key, value] : node->attributes())
          copy->setAttr(key, value);
        inferNodeShapes(*copy, inference_);
        scores = copy->result(0);
        if (hasRank(node->result(0), 4))
          measureInstead(node->result(0), scores);
      }
      const Shape &lifted = scores->shape();
      if (!lifted.isRanked() || lifted.rank() != 4)
        throw Rejection{"a mask broadcasts the lifted scores beyond 4-D"};
      Value *probs =
          create(OpKind::Softmax, {scores}, softmax_.name(), {{"axis", Attribute(int64_t(-1))}})
              ->result(0);
      if (hasRank(softmax_.result(0), 4))
        measureInstead(softmax_.result(0), probs);
      // Zeroing Wheres were on the 4-D view already: the same ones on the
      // lifted probabilities.
      for (Value *unlifted = softmax_.result(0); Node * zero : zeroing_) {
        size_t kept = *zeroedProbabilities(*zero, unlifted);
        std::vector<Value *> operands = {zero->operand(0), zero->operand(1), zero->operand(2)};
        operands[kept] = probs;
        probs = create(OpKind::Where, operands, zero->name())->result(0);
        unlifted = zero->result(0);
        measureInstead(unlifted, probs);
      }
      Value *o4 = create(OpKind::MatMul, {probs, v4}, output_->name())->result(0);
      // Back to [b*h, Sq, dv] for the users: [-1] ++ dims 2.. of o4.
      Value *tail =
          create(OpKind::Shape, {o4}, base + ".o3.dims", {{"start", Attribute(int64_t(2))}})
              ->result(0);
      Value *target = create(OpKind::Concat, {constantI64(base + ".o3.batch", {-1}), tail},
                             base + ".o3.dims", {{"axis", Attribute(int64_t(0))}})
                          ->result(0);
      Value *o3 = create(OpKind::Reshape, {o4, target}, base + ".o3")->result(0);
      if (o3->type() != output_->result(0)->type()) {
        throw Rejection{"the lifted attention's result type differs from the pattern's"};
      }
      remeasureFolded(output_->result(0), o4, base);
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
      if (q_->form == FoldedOperand::SeqFirstProjection)
        mergeSequenceFirst(o4, o3, base);
    } catch (const Error &) {
      rollBack(assumptionsBefore);
      throw Rejection{"shape inference rejects the lifted ops"};
    } catch (const Rejection &) {
      rollBack(assumptionsBefore);
      throw;
    }
  }

  /// Shape nodes measuring the folded result [b*h, Sq, dv] (DeBERTa sizes
  /// its head merge from it) read the same dims from the 4-D result, so that
  /// the Reshape back to [b*h, Sq, dv] keeps one user and the cleanup can
  /// merge it with the head merge's Reshape.
  void remeasureFolded(Value *folded, Value *o4, const std::string &base) {
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
      auto clamp = [](int64_t axis) {
        return std::clamp<int64_t>(axis < 0 ? axis + 3 : axis, 0, 3);
      };
      int64_t start = clamp(reader->getInt("start", 0)), end = clamp(reader->getInt("end", 3));
      Value *picked = full;
      if (start != 0 || end != 3)
        picked = create(OpKind::Slice,
                        {full, constantI64(base + ".o3.start", {start}),
                         constantI64(base + ".o3.end", {std::max(start, end)})},
                        base + ".o3.dims")
                     ->result(0);
      if (picked->type() != reader->result(0)->type())
        throw Rejection{"the folded result's dims do not come out of the lifted one"};
      remeasuredFolded_.emplace_back(reader, picked);
    }
    insertBefore_ = output_;
  }

  /// Shape nodes measuring a 4-D value of the old chain measure its lifted
  /// copy (the same shape), so that the old chain is left dead. Undone by
  /// rollBack.
  void measureInstead(Value *old, Value *lifted) {
    if (!match::provablySameShape(old->shape(), lifted->shape()))
      throw Rejection{"the lifted probabilities' shape differs from the pattern's"};
    std::vector<std::pair<Node *, size_t>> readers;
    for (const Use &use : old->uses())
      if (use.user->kind() == OpKind::Shape)
        readers.emplace_back(use.user, use.operandIndex);
    for (auto [reader, index] : readers) {
      reader->setOperand(index, lifted);
      remeasured_.push_back({reader, index, old});
    }
  }

  /// torch merges the heads of the folded result with Transpose {[1, 0, 2]}
  /// to [Sq, b*h, dv] (then a Reshape to [Sq*b, h*dv]): that Transpose is
  /// rebuilt from the 4-D result as Transpose {[2, 0, 1, 3]} to [Sq, b, h, dv]
  /// and a Reshape, which the cleanup merges with the Reshape after it, so
  /// that fuse-attention finds the sequence-first head merge it reads in place.
  void mergeSequenceFirst(Value *o4, Value *o3, const std::string &base) {
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

  void rollBack(size_t assumptionsBefore) {
    for (const Remeasured &r : remeasured_)
      r.reader->setOperand(r.index, r.old);
    remeasured_.clear();
    remeasuredFolded_.clear();
    graph_.truncateAssumptions(assumptionsBefore);
    for (auto it = created_.rbegin(); it != created_.rend(); ++it)
      graph_.eraseNode(*it);
    created_.clear();
  }
};

class LiftBatchedHeads : public Pass {
public:
  std::string_view name() const override { return "lift-batched-heads"; }
  std::string_view description() const override {
    return "rewrite attention with heads folded into the batch ([b*h, S, d], as "
           "nn.MultiheadAttention and BART write it) into the [b, h, S, d] form fuse-attention "
           "matches";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("lifted", 0);
    bool changed = false;
    // Softmaxes first: a lift erases the value MatMul and the head merge
    // after its Softmax, which a snapshot of every node would still hold.
    for (Node *node : graph.nodesOfKind(OpKind::Softmax)) {
      if (!node->result(0)->hasUses())
        continue;
      // A 4-D Softmax is fuse-attention's form unless its probabilities are
      // folded back into the batch (DeBERTa): only those are candidates.
      bool folded = hasRank(node->result(0), 4) && foldAfterSoftmax(graph, *node, nullptr);
      if (!hasRank(node->result(0), 3) && !folded)
        continue;
      try {
        Lifter(graph, *node).run();
        context.count("lifted");
        changed = true;
      } catch (const Rejection &r) {
        context.reject(*node, r.reason);
      }
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createLiftBatchedHeadsPass() { return std::make_unique<LiftBatchedHeads>(); }

} // namespace onnxc
