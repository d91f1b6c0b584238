//===- passes/attention/LiftBatchedHeadsOperands.cpp - Reading heads folded into the batch ---===//
//
// lift-batched-heads' readers of the plumbing around the folded core: how
// each [b*h, S, d] operand was folded (BART's Reshape, torch's sequence-first
// projection), how many heads a Reshape of the scores splits off, and the
// fold after a 4-D Softmax (DeBERTa). Apart from the matcher because the
// pass also asks them before matching, to pick its candidates.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/attention/LiftBatchedHeadsLifter.h"

namespace onnxc::lift {

using match::definedBy;
using match::scalarConstant;
using match::transposePerm;

bool isPerm(const Node *node, const std::vector<int64_t> &perm) {
  return node && node->kind() == OpKind::Transpose && transposePerm(*node) == perm;
}

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

} // namespace onnxc::lift
