//===- passes/attention/FuseAttentionCore.cpp - The scaled dot-product core ---===//
//
// fuse-attention's matcher of the core, anchored at Softmax: the score
// MatMul, the scales and masks between it and Softmax, and the value MatMul
// (an XSoftmax's zeroing after Softmax is expand-xsoftmax's to rewrite
// first). Kept apart from the head plumbing and the mask plan: its
// rejections say whether the candidate is attention at all, and they come
// in a fixed order (the first failing check is the reason --explain prints).
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/attention/FuseAttentionMatch.h"

#include <algorithm>

namespace onnxc::attention {

using match::matched;
using match::scalarConstant;
using match::soleUser;

namespace {

/// A hidden score must not leak through softmax: only fills this negative.
constexpr double kHidingFill = -1e4;

/// Whether `value` is computed (through masks and scales) from a MatMul.
bool leadsToScoreMatMul(const Value *value, int depth = 0) {
  const Node *node = value ? value->definingNode() : nullptr;
  if (!node || depth > 8)
    return false;
  switch (node->kind()) {
  case OpKind::MatMul:
    return true;
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::Div:
    return leadsToScoreMatMul(node->operand(0), depth + 1) ||
           leadsToScoreMatMul(node->operand(1), depth + 1);
  case OpKind::Sub:
    return leadsToScoreMatMul(node->operand(0), depth + 1);
  case OpKind::Where:
    return leadsToScoreMatMul(node->operand(1), depth + 1) ||
           leadsToScoreMatMul(node->operand(2), depth + 1);
  default:
    return false;
  }
}

bool isHidingFill(std::optional<double> fill) { return fill && *fill <= kHidingFill; }

/// Whether `value` feeds `consumer` and is otherwise only measured by Shape
/// nodes (collected into `shapeReaders`).
bool feedsOnly(const Graph &graph, const Value *value, const Node *consumer,
               std::vector<Node *> &shapeReaders) {
  if (graph.isOutput(value))
    return false;
  bool consumed = false;
  for (const Use &use : value->uses()) {
    if (use.user == consumer) {
      consumed = true;
    } else if (use.user->kind() == OpKind::Shape) {
      if (std::find(shapeReaders.begin(), shapeReaders.end(), use.user) == shapeReaders.end())
        shapeReaders.push_back(use.user);
    } else {
      return false;
    }
  }
  return consumed;
}

/// Whether the Softmax input is a MatMul's result under masks, scales and
/// Casts (the scores of a dot-product attention of any rank).
bool scoresFromMatMul(const Value *value) {
  for (int depth = 0; value && depth < 16; ++depth) {
    const Node *node = value->definingNode();
    if (!node)
      return false;
    switch (node->kind()) {
    case OpKind::MatMul:
      return true;
    case OpKind::Cast:
    case OpKind::Reshape:
      value = node->operand(0);
      continue;
    case OpKind::Where:
      return leadsToScoreMatMul(node->operand(1)) || leadsToScoreMatMul(node->operand(2));
    case OpKind::Sub: // either side: the matcher then says which way round it is
      return leadsToScoreMatMul(node->operand(0)) || leadsToScoreMatMul(node->operand(1));
    default:
      return leadsToScoreMatMul(value);
    }
  }
  return false;
}

/// The checks that tell what the candidate is, on Softmax alone.
MatchStatus checkSoftmax(const Node &softmax) {
  const Shape &shape = softmax.result(0)->shape();
  // The first check is the one that tells what the candidate is: additive
  // (Bahdanau) or graph attention scores come from no MatMul, whatever
  // their rank.
  if (!scoresFromMatMul(softmax.operand(0)))
    return Rejection{"scores do not come from a MatMul (not dot-product attention)"};
  if (!shape.isRanked() || shape.rank() != 4)
    return Rejection{shape.isRanked() && shape.rank() == 3
                         ? "scores are 3-D and lift-batched-heads did not split their heads"
                         : "scores are not 4-D [batch, heads, q, k]"};
  int64_t axis = softmax.getInt("axis", -1);
  if (axis != -1 && axis != 3)
    return Rejection{"Softmax is not over the last (key) axis"};
  return matched();
}

/// From Softmax to the value MatMul, MatMul(p, V): sets m.output.
MatchStatus matchValueProduct(const Graph &graph, CoreMatch &m) {
  Value *probs = m.softmax->result(0);
  m.output = soleUser(graph, probs);
  if (m.output && m.output->kind() == OpKind::Where) {
    std::optional<double> onTrue = scalarConstant(m.output->operand(1));
    std::optional<double> onFalse = scalarConstant(m.output->operand(2));
    bool zeroing = (onTrue && *onTrue == 0 && m.output->operand(2) == probs) ||
                   (onFalse && *onFalse == 0 && m.output->operand(1) == probs);
    return Rejection{zeroing ? "probabilities are zeroed after Softmax in a form expand-xsoftmax "
                               "leaves alone (see its reason)"
                             : "a Where after Softmax does not zero hidden probabilities"};
  }
  if (!m.output || m.output->kind() != OpKind::MatMul || m.output->operand(0) != probs)
    return Rejection{"Softmax output is not multiplied by V alone"};
  return matched();
}

/// Add(scores, mask) or Sub(scores, bias) producing `value`: its mask term
/// appended to m.masks; returns the scores operand.
MatchResult<Value *> absorbAdditiveMask(const Node &node, const Value *value, CoreMatch &m) {
  if (node.kind() == OpKind::Add) {
    bool first = leadsToScoreMatMul(node.operand(0)), second = leadsToScoreMatMul(node.operand(1));
    if (first == second)
      return Rejection{"an Add before Softmax does not add a mask to the scores"};
    Value *mask = node.operand(first ? 1 : 0);
    if (mask->dtype() != value->dtype() || mask->shape().rank() == 0 || mask->shape().rank() > 4)
      return Rejection{"an additive mask is not a float tensor of rank 1 to 4"};
    m.masks.push_back({mask, MaskEncoding::Additive});
    return node.operand(first ? 0 : 1);
  }
  // scores - bias: an additive mask of -bias.
  if (!leadsToScoreMatMul(node.operand(0)) || leadsToScoreMatMul(node.operand(1)))
    return Rejection{"a Sub before Softmax does not subtract a bias from the scores"};
  Value *bias = node.operand(1);
  if (bias->dtype() != value->dtype() || bias->shape().rank() == 0 || bias->shape().rank() > 4)
    return Rejection{"a subtracted bias is not a float tensor of rank 1 to 4"};
  m.masks.push_back({bias, MaskEncoding::Additive, 0, /*negated=*/true});
  return node.operand(0);
}

/// Where(hidden, fill, scores) or Where(visible, scores, fill): its mask
/// term appended to m.masks; returns the scores operand.
MatchResult<Value *> absorbWhereMask(const Node &node, CoreMatch &m) {
  std::optional<double> onTrue = scalarConstant(node.operand(1));
  std::optional<double> onFalse = scalarConstant(node.operand(2));
  Value *cond = node.operand(0);
  Value *scores = nullptr;
  if (isHidingFill(onTrue) && leadsToScoreMatMul(node.operand(2))) {
    m.masks.push_back({cond, MaskEncoding::HiddenWhereTrue, *onTrue});
    scores = node.operand(2);
  } else if (isHidingFill(onFalse) && leadsToScoreMatMul(node.operand(1))) {
    m.masks.push_back({cond, MaskEncoding::HiddenWhereFalse, *onFalse});
    scores = node.operand(1);
  } else {
    return Rejection{"a Where before Softmax does not replace scores by a large negative constant"};
  }
  if (cond->shape().rank() == 0 || cond->shape().rank() > 4)
    return Rejection{"a Where mask is not of rank 1 to 4"};
  return scores;
}

/// Div or Mul of the scores by a scalar constant, folded into m.scale;
/// returns the scores operand.
MatchResult<Value *> absorbScale(const Node &node, CoreMatch &m) {
  bool isDiv = node.kind() == OpKind::Div;
  std::optional<double> c1 = scalarConstant(node.operand(1));
  std::optional<double> c0 = isDiv ? std::nullopt : scalarConstant(node.operand(0));
  if (c1 && *c1 != 0) {
    m.scale = isDiv ? m.scale / *c1 : m.scale * *c1;
    return node.operand(0);
  }
  if (c0) {
    m.scale *= *c0;
    return node.operand(1);
  }
  return Rejection{"the scores are multiplied by something other than a scalar constant"};
}

/// Walks from Softmax back to the score MatMul (m.scores), collecting the
/// masks and scales in between.
MatchStatus matchScoreChain(const Graph &graph, CoreMatch &m) {
  const Shape &shape = m.softmax->result(0)->shape();
  Value *value = m.softmax->operand(0);
  Node *consumer = m.softmax;
  // Walking backwards, masks come first; a scale seen before a mask means
  // the mask was scaled too.
  bool sawScale = false;
  for (;;) {
    Node *node = value->definingNode();
    if (!node)
      return Rejection{"scores do not come from a MatMul"};
    if (!feedsOnly(graph, value, consumer, m.shapeReaders))
      return Rejection{"an intermediate score tensor is used elsewhere"};
    if (node->result(0)->shape() != shape)
      return Rejection{"a mask or scale broadcasts the scores to another shape"};
    if (node->kind() == OpKind::MatMul) {
      m.scores = node;
      return matched();
    }
    OpKind kind = node->kind();
    if (kind == OpKind::Add || kind == OpKind::Sub || kind == OpKind::Where) {
      MatchResult<Value *> scores =
          kind == OpKind::Where ? absorbWhereMask(*node, m) : absorbAdditiveMask(*node, value, m);
      if (!scores)
        return scores.rejection();
      value = *scores;
      if (sawScale)
        return Rejection{"the scores are scaled after the mask"};
    } else if (kind == OpKind::Div || kind == OpKind::Mul) {
      sawScale = true;
      MatchResult<Value *> scores = absorbScale(*node, m);
      if (!scores)
        return scores.rejection();
      value = *scores;
    } else {
      return Rejection{"an unexpected op sits between the score MatMul and Softmax"};
    }
    consumer = node;
  }
}

/// Q, Kᵀ and V as one 4-D dot-product attention reads them.
MatchStatus checkOperands(const CoreMatch &m) {
  const Shape &q = m.q->shape(), &kt = m.kt->shape(), &v = m.v->shape();
  if (!q.isRanked() || !kt.isRanked() || !v.isRanked() || q.rank() != 4 || kt.rank() != 4 ||
      v.rank() != 4)
    return Rejection{"Q, Kᵀ or V is not 4-D"};
  if (q[0] != kt[0] || q[0] != v[0] || q[1] != kt[1] || q[1] != v[1])
    return Rejection{"Q, K and V do not share batch and heads (broadcast or grouped heads)"};
  if (q[3] != kt[2] || kt[3] != v[2])
    return Rejection{"Q·Kᵀ·V dimensions do not chain"};
  if (!isFloat(m.q->dtype()) || m.q->dtype() != m.kt->dtype() || m.q->dtype() != m.v->dtype())
    return Rejection{"Q, K and V do not share one floating type"};
  return matched();
}

} // namespace

MatchResult<CoreMatch> matchCore(const Graph &graph, Node &softmax) {
  CoreMatch m;
  m.softmax = &softmax;
  if (MatchStatus status = checkSoftmax(softmax); !status)
    return status.rejection();
  if (MatchStatus status = matchValueProduct(graph, m); !status)
    return status.rejection();
  if (MatchStatus status = matchScoreChain(graph, m); !status)
    return status.rejection();
  m.q = stripScale(m.scores->operand(0), m.scale);
  m.kt = stripScale(m.scores->operand(1), m.scale);
  m.v = m.output->operand(1);
  if (MatchStatus status = checkOperands(m); !status)
    return status.rejection();
  return m;
}

} // namespace onnxc::attention
