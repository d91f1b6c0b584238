//===- passes/attention/FuseAdditiveAttentionMatch.cpp - Attention over 3-D scores ---===//
//
// fuse-additive-attention's matcher: from a [batch, Sq, Sk] Softmax back
// over one mask and scalar scales and shifts to the scores, and, for
// additive attention, below them to the tanh of the broadcast sum of query
// and key. Apart from the rewrite because it only reads the graph; its
// refusals come in a fixed order (the first failing check is the reason
// --explain prints).
//
//===----------------------------------------------------------------------===//
#include "passes/attention/FuseAdditiveAttentionMatch.h"

namespace onnxc::additive {

using match::definedBy;
using match::matched;
using match::scalarConstant;
using match::soleUser;

namespace {

bool sameShape(const Shape &a, std::initializer_list<Dim> dims) {
  return match::provablySameShape(a, Shape(std::vector<Dim>(dims)));
}

/// Whether `value` is read by `consumer` alone.
MatchStatus requireSoleUse(const Graph &graph, const Value *value, const Node *consumer) {
  if (soleUser(graph, value) != consumer)
    return Rejection{"an intermediate tensor is used elsewhere"};
  return matched();
}

/// Whether `value` is computed (through masks, scales and views) from a
/// MatMul or ReduceSum: the scores side of an Add or Where.
bool leadsToScores(const Value *value, int depth = 0) {
  const Node *node = value ? value->definingNode() : nullptr;
  if (!node || depth > 8)
    return false;
  switch (node->kind()) {
  case OpKind::MatMul:
  case OpKind::ReduceSum:
    return true;
  case OpKind::Squeeze:
  case OpKind::Reshape:
    return leadsToScores(node->operand(0), depth + 1);
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::Div:
    return leadsToScores(node->operand(0), depth + 1) || leadsToScores(node->operand(1), depth + 1);
  case OpKind::Where:
    return leadsToScores(node->operand(1), depth + 1) || leadsToScores(node->operand(2), depth + 1);
  default:
    return false;
  }
}

/// Folds an Add, Mul or Div of the scores by a scalar constant into
/// chain.scale / chain.shift and sets `next` to the scores operand; false
/// when `node` is not one.
bool absorbAffine(const Node &node, ScoreChain &chain, Value *&next) {
  if (node.numOperands() != 2)
    return false;
  std::optional<double> c0 = scalarConstant(node.operand(0));
  std::optional<double> c1 = scalarConstant(node.operand(1));
  if (bool(c0) == bool(c1))
    return false;
  double c = c1 ? *c1 : *c0;
  Value *scores = node.operand(c1 ? 0 : 1);
  switch (node.kind()) {
  case OpKind::Add:
    chain.shift += chain.scale * c;
    break;
  case OpKind::Mul:
    chain.scale *= c;
    break;
  case OpKind::Div:
    if (!c1 || c == 0)
      return false;
    chain.scale /= c;
    break;
  default:
    return false;
  }
  next = scores;
  return true;
}

/// Reads the mask of an Add or Where on the scores into `mask` and sets
/// `next` to the scores operand; false when `node` is neither.
MatchResult<bool> absorbMask(const Node &node, MaskTerm &mask, Value *&next) {
  if (node.kind() == OpKind::Add) {
    bool first = leadsToScores(node.operand(0)), second = leadsToScores(node.operand(1));
    if (first == second)
      return Rejection{"an Add before Softmax does not add a mask to the scores"};
    mask = {node.operand(first ? 1 : 0), true};
    next = node.operand(first ? 0 : 1);
    if (mask.mask->dtype() != next->dtype())
      return Rejection{"an additive mask is not of the scores' type"};
    return true;
  }
  if (node.kind() != OpKind::Where)
    return false;
  std::optional<double> onTrue = scalarConstant(node.operand(1));
  std::optional<double> onFalse = scalarConstant(node.operand(2));
  if (onTrue && !onFalse && leadsToScores(node.operand(2))) {
    mask = {node.operand(0), false, true, *onTrue};
    next = node.operand(2);
  } else if (onFalse && !onTrue && leadsToScores(node.operand(1))) {
    mask = {node.operand(0), false, false, *onFalse};
    next = node.operand(1);
  } else {
    return Rejection{"a Where before Softmax does not replace scores by a constant"};
  }
  if (mask.mask->dtype() != DType::Bool)
    return Rejection{"a Where mask condition is not bool"};
  return true;
}

} // namespace

/// Walks back from Softmax over the mask, scales and shifts.
MatchResult<ScoreChain> matchScoreChain(const Graph &graph, Node &softmax) {
  ScoreChain chain;
  chain.softmax = &softmax;
  const Shape &shape = softmax.result(0)->shape();
  int64_t axis = softmax.getInt("axis", -1);
  if (axis != -1 && axis != 2)
    return Rejection{"Softmax is not over the last (source) axis"};
  chain.output = soleUser(graph, softmax.result(0));
  if (!chain.output || chain.output->kind() != OpKind::MatMul ||
      chain.output->operand(0) != softmax.result(0))
    return Rejection{"Softmax output is not multiplied by the values alone"};

  Value *value = softmax.operand(0);
  Node *consumer = &softmax;
  bool sawAffine = false;
  for (;;) {
    Node *node = value->definingNode();
    if (!node)
      return Rejection{"the scores are not computed from the queries and keys"};
    if (MatchStatus used = requireSoleUse(graph, value, consumer); !used)
      return used.rejection();
    if (node->kind() != OpKind::Add && node->kind() != OpKind::Mul && node->kind() != OpKind::Div &&
        node->kind() != OpKind::Where)
      break;
    if (!match::provablySameShape(node->result(0)->shape(), shape))
      return Rejection{"a mask or scale broadcasts the scores to another shape"};
    Value *next = nullptr;
    MaskTerm mask;
    if (absorbAffine(*node, chain, next)) {
      sawAffine = true;
    } else {
      MatchResult<bool> masked = absorbMask(*node, mask, next);
      if (!masked)
        return masked.rejection();
      if (!*masked)
        return Rejection{"an unexpected op sits between the scores and Softmax"};
      if (sawAffine)
        return Rejection{"the scores are scaled or shifted after the mask"};
      if (chain.mask.mask)
        return Rejection{"more than one mask"};
      chain.mask = mask;
    }
    value = next;
    consumer = node;
  }
  chain.source = value;
  return chain;
}

namespace {

/// Below the 3-D score source, a Squeeze or Reshape of [b, Sq, Sk, 1] (w
/// is then [d, 1]) with Linear(d, 1)'s bias under it: the value the scores
/// are read from, with `columnScore` set when the unit axis was there.
MatchResult<Value *> peelUnitScoreAxis(const Graph &graph, ScoreChain &chain, bool &columnScore) {
  const Shape &scores = chain.softmax->result(0)->shape();
  Value *value = chain.source;
  Node *node = value->definingNode();
  if (node->kind() != OpKind::Squeeze && node->kind() != OpKind::Reshape)
    return value;
  Value *input = node->operand(0);
  if (!sameShape(input->shape(), {scores[0], scores[1], scores[2], Dim(1)}))
    return Rejection{"the squeezed scores are not [batch, query, source, 1]"};
  if (MatchStatus used = requireSoleUse(graph, input, node); !used)
    return used.rejection();
  value = input;
  node = value->definingNode();
  // Linear(d, 1)'s bias, added before the squeeze.
  for (Value *next = nullptr; node && absorbAffine(*node, chain, next);
       node = value->definingNode()) {
    if (MatchStatus used = requireSoleUse(graph, next, node); !used)
      return used.rejection();
    value = next;
  }
  columnScore = true;
  return value;
}

/// `node`, the projection of tanh by w (MatMul, or ReduceSum of a Mul):
/// sets core.score and `reducer` (the node reading tanh) and returns tanh.
MatchResult<Value *> matchScoreProjection(const Graph &graph, Node *node, AdditiveCore &core,
                                          bool &columnScore, Node *&reducer) {
  reducer = node;
  if (node && node->kind() == OpKind::MatMul) {
    core.score = node->operand(1);
    return node->operand(0);
  }
  if (!node || node->kind() != OpKind::ReduceSum)
    return Rejection{"the scores do not come from a MatMul"};
  const Value *axes = node->numOperands() > 1 ? node->operand(1) : nullptr;
  std::optional<double> axis = scalarConstant(axes);
  bool keep = node->getInt("keepdims", 1) != 0;
  if (!axis || (*axis != -1 && *axis != 3) || keep != columnScore)
    return Rejection{"the scores reduce tanh over another axis than the last"};
  Node *mul = definedBy(node->operand(0), OpKind::Mul);
  if (!mul)
    return Rejection{"the scores are not a projection of tanh"};
  if (MatchStatus used = requireSoleUse(graph, mul->result(0), node); !used)
    return used.rejection();
  bool first = definedBy(mul->operand(0), OpKind::Tanh) != nullptr;
  core.score = mul->operand(first ? 1 : 0);
  reducer = mul;
  columnScore = false;
  return mul->operand(first ? 0 : 1);
}

/// The sum under tanh [b, Sq, Sk, d]: query [b, Sq, 1, d] + key [b, 1, Sk, d],
/// with a bias [d] added inside the tanh; sets core.query, core.key and
/// core.bias.
MatchStatus matchTanhSum(const Graph &graph, Node &tanhNode, AdditiveCore &core) {
  const Shape &t = tanhNode.result(0)->shape();
  const Dim &size = t[3];
  Node *sum = definedBy(tanhNode.operand(0), OpKind::Add);
  if (!sum)
    return Rejection{"tanh is not of a sum"};
  if (MatchStatus used = requireSoleUse(graph, sum->result(0), &tanhNode); !used)
    return used;
  // A bias inside the tanh: Add(Add(qu, ku), bias [d]).
  for (int side = 0; side < 2; ++side) {
    Value *inner = sum->operand(size_t(side)), *bias = sum->operand(size_t(1 - side));
    Node *innerSum = definedBy(inner, OpKind::Add);
    const Shape &b = bias->shape();
    bool vector = b.isRanked() && b.rank() >= 1 && b.rank() <= 4 && b[b.rank() - 1] == size;
    for (size_t i = 0; vector && i + 1 < b.rank(); ++i)
      vector = b[i] == Dim(1);
    if (innerSum && vector && sameShape(inner->shape(), {t[0], t[1], t[2], size})) {
      if (MatchStatus used = requireSoleUse(graph, inner, sum); !used)
        return used;
      core.bias = bias;
      sum = innerSum;
      break;
    }
  }
  for (int side = 0; side < 2; ++side) {
    Value *a = sum->operand(size_t(side)), *b = sum->operand(size_t(1 - side));
    if (sameShape(a->shape(), {t[0], t[1], Dim(1), size}) &&
        sameShape(b->shape(), {t[0], Dim(1), t[2], size})) {
      core.query = a;
      core.key = b;
      break;
    }
  }
  if (!core.query)
    return Rejection{"the tanh's sum is not [batch, query, 1, size] + [batch, 1, source, size]"};
  return matched();
}

} // namespace

/// Below the (3-D) score source: the tanh of the broadcast sum, reduced by w.
MatchResult<AdditiveCore> matchAdditiveCore(const Graph &graph, ScoreChain &chain) {
  const Shape &scores = chain.softmax->result(0)->shape();
  AdditiveCore core;
  bool columnScore = false; // w is [d, 1] (or the reduction keeps the axis)
  MatchResult<Value *> value = peelUnitScoreAxis(graph, chain, columnScore);
  if (!value)
    return value.rejection();
  Node *reducer = nullptr;
  MatchResult<Value *> projected =
      matchScoreProjection(graph, (*value)->definingNode(), core, columnScore, reducer);
  if (!projected)
    return projected.rejection();
  Value *tanh = *projected;
  Node *tanhNode = definedBy(tanh, OpKind::Tanh);
  if (!tanhNode)
    return Rejection{"the scores are not a projection of tanh"};
  if (MatchStatus used = requireSoleUse(graph, tanh, reducer); !used)
    return used.rejection();
  const Shape &t = tanh->shape();
  if (!t.isRanked() || t.rank() != 4 || !t[0].provablyEqual(scores[0]) ||
      !t[1].provablyEqual(scores[1]) || !t[2].provablyEqual(scores[2]))
    return Rejection{"tanh is not [batch, query, source, size]"};
  const Dim &size = t[3];
  const Shape &w = core.score->shape();
  bool wOk = columnScore ? sameShape(w, {size, Dim(1)}) : sameShape(w, {size});
  if (!wOk)
    return Rejection{"the score vector is not [size] or [size, 1]"};
  if (MatchStatus sum = matchTanhSum(graph, *tanhNode, core); !sum)
    return sum.rejection();
  return core;
}

/// The mask as an operand of the fused op: dims 1 or the scores' own (the
/// fused op broadcasts no other way).
MatchStatus checkMaskShape(const MaskTerm &mask, const Shape &scores) {
  const Shape &m = mask.mask->shape();
  if (!m.isRanked() || m.rank() == 0 || m.rank() > 3)
    return Rejection{"the mask is not of rank 1 to 3"};
  size_t skip = 3 - m.rank();
  for (size_t i = 0; i < m.rank(); ++i)
    if (!(m[i] == Dim(1)) && !m[i].provablyEqual(scores[skip + i]))
      return Rejection{"the mask broadcasts over an axis of unknown extent"};
  return matched();
}

} // namespace onnxc::additive
