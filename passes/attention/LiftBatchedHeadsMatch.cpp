//===- passes/attention/LiftBatchedHeadsMatch.cpp - The folded attention core ---===//
//
// lift-batched-heads' matcher: from a [b*h, Sq, Sk] Softmax (or DeBERTa's
// 4-D one folded back) to the value MatMul, back through the masks and
// scales to the score MatMul, and the Q, K and V folds. Apart from the
// rewrite because it only reads the graph: every refusal happens here or
// leaves nothing behind.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/attention/LiftBatchedHeadsLifter.h"

namespace onnxc::lift {

using match::definedBy;
using match::matched;
using match::scalarConstant;
using match::soleUser;

namespace {

size_t rankOf(const Value *value) { return value->shape().isRanked() ? value->shape().rank() : 0; }

} // namespace

MatchStatus Lifter::match() {
  MatchResult<std::optional<int64_t>> foldedHeads = matchValueProduct();
  if (!foldedHeads)
    return foldedHeads.rejection();
  if (MatchStatus status = matchScoreChain(*foldedHeads); !status)
    return status;
  return matchOperands(*foldedHeads);
}

/// From Softmax to the value MatMul (output_), through the fold back to
/// [b*h, Sq, Sk] after a 4-D Softmax: the heads that fold says, if any.
MatchResult<std::optional<int64_t>> Lifter::matchValueProduct() {
  const bool fourD = hasRank(softmax_.result(0), 4);
  int64_t axis = softmax_.getInt("axis", -1);
  if (axis != -1 && axis != (fourD ? 3 : 2))
    return Rejection{"Softmax is not over the last (key) axis"};
  std::optional<int64_t> foldedHeads; // from a Reshape of the scores to or from 4-D
  Value *probs = softmax_.result(0);
  if (fourD) {
    Node *fold = foldAfterSoftmax(graph_, softmax_, &zeroing_);
    if (!fold)
      return Rejection{"the 4-D probabilities are not folded back to [b*h, Sq, Sk]"};
    foldedHeads = reshapeFoldsHeads(*fold);
    probs = fold->result(0);
  }
  output_ = soleUser(graph_, probs);
  if (!output_ || output_->kind() != OpKind::MatMul || output_->operand(0) != probs ||
      !hasRank(output_->operand(1), 3))
    return Rejection{"Softmax output is not multiplied by a 3-D V alone"};
  return foldedHeads;
}

/// From Softmax back to the score MatMul (scores_), collecting the links
/// in between (chain_); a Reshape of the scores says the heads
/// (`foldedHeads`).
MatchStatus Lifter::matchScoreChain(std::optional<int64_t> &foldedHeads) {
  Value *value = softmax_.operand(0);
  for (int steps = 0;; ++steps) {
    if (steps > 16)
      return Rejection{"too many ops between the score MatMul and Softmax"};
    Node *node = value->definingNode();
    if (!node)
      return Rejection{"scores do not come from a MatMul"};
    // Shape nodes may measure the scores (DeBERTa sizes its Reshapes so):
    // those of a 4-D view are moved to the lifted copy, those of the
    // folded scores die with the Reshape targets they compute.
    Node *consumer = chain_.empty() ? &softmax_ : chain_.back().node;
    if (soleUserButShapes(graph_, value) != consumer)
      return Rejection{"an intermediate score tensor is used elsewhere"};
    if (node->kind() == OpKind::MatMul) {
      scores_ = node;
      return matched();
    }
    switch (node->kind()) {
    case OpKind::Reshape: {
      // BART's view of the scores as [b, h, Sq, Sk] around its mask Add
      // (DeBERTa's, before its Softmax).
      if (!node->operand(0)->shape().isRanked() || !node->result(0)->shape().isRanked())
        return Rejection{"a Reshape of the scores has an unknown shape"};
      std::optional<int64_t> heads = reshapeFoldsHeads(*node);
      if (!heads)
        return Rejection{"a Reshape of the scores does not split [b*h] into [b, h]"};
      if (foldedHeads && *foldedHeads != *heads)
        return Rejection{"the scores are split into different numbers of heads"};
      foldedHeads = heads;
      chain_.push_back({node, 0});
      value = node->operand(0);
      continue;
    }
    case OpKind::Add:
    case OpKind::Sub:
    case OpKind::Mul:
    case OpKind::Div: {
      MatchResult<size_t> score = scoreOperand(*node, 0, 1);
      if (!score)
        return score.rejection();
      chain_.push_back({node, *score});
      value = node->operand(*score);
      continue;
    }
    case OpKind::Where: {
      MatchResult<size_t> score = scoreOperand(*node, 1, 2);
      if (!score)
        return score.rejection();
      chain_.push_back({node, *score});
      value = node->operand(*score);
      continue;
    }
    default:
      return Rejection{"an unexpected op sits between the score MatMul and Softmax"};
    }
  }
}

/// The folds of Q, K and V, and the number of heads (heads_) they and the
/// scores agree on.
MatchStatus Lifter::matchOperands(std::optional<int64_t> foldedHeads) {
  if (!hasRank(scores_->result(0), 3) && !hasRank(scores_->result(0), 4))
    return Rejection{"the score MatMul is not 3-D"};
  if (!hasRank(scores_->result(0), 3))
    return Rejection{"the score MatMul is already 4-D"};
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
    return Rejection{"the keys are not transposed by [0, 2, 1] before the score MatMul"};
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
    return Rejection{"no operand says how many heads are folded into the batch"};
  for (const std::optional<FoldedOperand> *op : {&q_, &k_, &v_})
    if (*op && (*op)->heads != heads_)
      return Rejection{"Q, K and V fold different numbers of heads"};
  if (foldedHeads && *foldedHeads != heads_)
    return Rejection{"the scores and the operands fold different numbers of heads"};
  if (!q_ || !k_ || !v_)
    return Rejection{"Q, K or V is not split into heads by a recognized Reshape/Transpose"};
  // Each operand's fold was checked against its own [b*h, S, d], and the
  // folded MatMuls agree on b*h: with h the same constant, so does b.
  return matched();
}

/// Which of operands `a` and `b` of an elementwise link leads back to the
/// score MatMul (exactly one must).
MatchResult<size_t> Lifter::scoreOperand(const Node &node, size_t a, size_t b) {
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
    return Rejection{"an op before Softmax does not apply a mask or scale to the scores"};
  return first ? a : b;
}

} // namespace onnxc::lift
