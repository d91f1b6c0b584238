//===- passes/attention/FuseAttention.cpp - Exported attention -> one Attention op ---===//
//
// The scaled dot-product core, as exporters write it (anchored at Softmax):
//
//   %s = MatMul(%q, %kt)            q [b,h,Sq,d] (optionally * c), kt [b,h,d,Skv]
//   %s = Div(%s, √d) | Mul(%s, 1/√d)   (or the scale folded into q and/or k)
//   %s = Add(%s, %mask)             zero or more masks: additive,
//   %s = Sub(%s, %bias)             a subtracted bias (ALiBi), or
//   %s = Where(%hidden, -inf, %s)   Where replacing hidden scores
//   %p = Softmax(%s) {axis = -1}
//   %o = MatMul(%p, %v)             v [b,h,Skv,dv]
//
// and the multi-head wrapper around it:
//
//   %q = Transpose(Reshape(%q_proj [b,S,h*d] -> [b,S,h,d])) {perm = [0,2,1,3]}
//   %kt = Transpose(Reshape(%k_proj ...)) {perm = [0,2,3,1]}   (or Kᵀ of the 4-D k)
//   %y = Reshape(Transpose(%o) {perm = [0,2,1,3]}) -> [b,Sq,h*dv]
//   ViT: %q = Gather(Transpose(Reshape(%qkv [b,S,3hd] -> [b,S,3,h,d])) {perm = [2,0,3,1,4]}, 0)
//
// become %y = Attention(%q_proj, %k_proj, %v_proj, [%mask]) {q_num_heads = h,
// kv_num_heads = h, scale, [is_causal], [window]}: the 3-D form, which reads
// the projections in place and writes the merged heads (a ViT's packed qkv
// is sliced first). When the plumbing is not recognized, the 4-D form
// Attention(%q, %k, %v) replaces %o. K and V repeated for grouped-query
// attention (LLaMA's repeat_kv: Unsqueeze, Expand, Reshape) are read before
// the repeat, with kv_num_heads (3-D) or the 4-D operands' heads saying so.
//
// Masks that depend only on the sequence length are proven (see
// AttentionMasks.h): one that is a causal triangle at every length becomes
// is_causal, a band |i-j| <= r the onnxc attribute window = r; any other
// mask stays an operand (--explain says why): an additive one as is, a
// Where as a bool "visible" mask. A Where filling a finite value (HF's
// torch.finfo(f32).min) sets mask_fill, so hidden keys keep that score and
// a row hiding every key stays uniform as in the unfused graph (planMasks
// says which mask orders that covers).
//
// DeBERTa's XSoftmax also zeroes the hidden probabilities after Softmax,
// %p = Where(%hidden, 0, Softmax(Where(%hidden, finfo.min, %s + %rel))):
// a key the Where hides has probability exactly 0 already wherever its row
// sees some key (exp(finfo.min - max) underflows for every finite score), so
// the zeroing changes only rows hiding every key, which it makes 0. The
// fused op then reads the position terms and the Where as one additive
// operand Where(%hidden, finfo.min, %rel), and its rows that see no key are
// set to 0 by Where(any visible key in the row, %y, 0). Dead nodes are left
// for dce.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/attention/AttentionMasks.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <limits>

namespace onnxc {

namespace {

using match::definedBy;
using match::scalarConstant;
using match::soleUser;
using match::transposePerm;

/// A hidden score must not leak through softmax: only fills this negative.
constexpr double kHidingFill = -1e4;

/// Where a head's [b, S, h*d] tensor comes from: a value, or a slice of the
/// last axis of one (a ViT's packed qkv projection).
struct Heads3d {
  Value *source = nullptr;
  int64_t heads = 0, size = 0;
  bool sliced = false;
  int64_t begin = 0, end = 0;
  bool seqFirst = false; // source is [S, b, h*d] (torch's nn.MultiheadAttention)
};

/// A mask term between the scale and Softmax.
struct MaskTerm {
  Value *mask;
  MaskEncoding encoding;
  double fill = 0;      // Where forms only
  bool negated = false; // subtracted (scores - bias, as ALiBi is often written)
};

/// A rejected candidate's reason (a static string, so equal reasons tally).
struct Rejection {
  const char *reason;
};

/// Peels Mul/Div by scalar constants off `value`, folding them into `scale`.
Value *stripScale(Value *value, double &scale) {
  while (Node *node = value->definingNode()) {
    if (node->kind() == OpKind::Div) {
      std::optional<double> c = scalarConstant(node->operand(1));
      if (!c || *c == 0)
        break;
      scale /= *c;
      value = node->operand(0);
    } else if (node->kind() == OpKind::Mul) {
      std::optional<double> c0 = scalarConstant(node->operand(0));
      std::optional<double> c1 = scalarConstant(node->operand(1));
      if (c1) {
        scale *= *c1;
        value = node->operand(0);
      } else if (c0) {
        scale *= *c0;
        value = node->operand(1);
      } else {
        break;
      }
    } else {
      break;
    }
  }
  return value;
}

bool isPerm(const Node *node, std::initializer_list<int64_t> perm) {
  return node && node->kind() == OpKind::Transpose &&
         transposePerm(*node) == std::vector<int64_t>(perm);
}

std::optional<int64_t> constantDim(const Shape &shape, size_t i) {
  return shape.isRanked() && i < shape.rank() ? shape[i].constant() : std::nullopt;
}

/// LLaMA's repeat_kv, x [b, g, S, d] -> Reshape(Expand(Unsqueeze(x) ->
/// [b, g, n, S, d])) -> [b, g*n, S, d]: each of x's g heads serves n
/// consecutive heads, which is the Attention op's grouping. Returns x and
/// sets `group` to n, or returns null. Checked on the inferred shapes alone:
/// a unit dim inserted next to another unit dim lays the data out the same.
Value *repeatedKvSource(Value *repeated, int64_t &group) {
  Node *reshape = definedBy(repeated, OpKind::Reshape);
  Node *expand = reshape ? definedBy(reshape->operand(0), OpKind::Expand) : nullptr;
  Node *unsqueeze = expand ? definedBy(expand->operand(0), OpKind::Unsqueeze) : nullptr;
  if (!unsqueeze)
    return nullptr;
  Value *source = unsqueeze->operand(0);
  const Shape &x = source->shape(), &unit = expand->operand(0)->shape(),
              &wide = expand->result(0)->shape(), &out = repeated->shape();
  if (!x.isRanked() || !unit.isRanked() || !wide.isRanked() || !out.isRanked() || x.rank() != 4 ||
      unit.rank() != 5 || wide.rank() != 5 || out.rank() != 4)
    return nullptr;
  std::optional<int64_t> kvHeads = x[1].constant(), copies = wide[2].constant();
  std::optional<int64_t> heads = out[1].constant();
  bool sameOthers = unit[0] == x[0] && unit[1] == x[1] && unit[3] == x[2] && unit[4] == x[3] &&
                    wide[0] == x[0] && wide[1] == x[1] && wide[3] == x[2] && wide[4] == x[3] &&
                    out[0] == x[0] && out[2] == x[2] && out[3] == x[3];
  if (!sameOthers || !(unit[2] == Dim(1)) || !kvHeads || !copies || !heads ||
      *heads != *kvHeads * *copies)
    return nullptr;
  group = *copies;
  return source;
}

/// `reshaped` = Reshape(P [b, S, C]) -> [b, S, dims...] with C the product
/// of the (constant) trailing dims: P, or null.
Value *splitLastAxisSource(const Value *reshaped, size_t trailing) {
  Node *reshape = definedBy(reshaped, OpKind::Reshape);
  if (!reshape)
    return nullptr;
  Value *source = reshape->operand(0);
  const Shape &in = source->shape(), &out = reshaped->shape();
  if (!in.isRanked() || !out.isRanked() || in.rank() != 3 || out.rank() != 2 + trailing)
    return nullptr;
  if (in[0] != out[0] || in[1] != out[1])
    return nullptr;
  int64_t product = 1;
  for (size_t i = 2; i < out.rank(); ++i) {
    std::optional<int64_t> d = out[i].constant();
    if (!d)
      return nullptr;
    product *= *d;
  }
  std::optional<int64_t> channels = in[2].constant();
  return channels && *channels == product ? source : nullptr;
}

/// The [b, S, h*d] form of a [b, h, S, d] head tensor, if the graph split
/// heads out of one.
std::optional<Heads3d> headsSource(const Value *v4) {
  const Shape &shape = v4->shape();
  std::optional<int64_t> heads = constantDim(shape, 1), size = constantDim(shape, 3);
  if (!heads || !size)
    return std::nullopt;
  Node *node = v4->definingNode();
  if (isPerm(node, {0, 2, 1, 3})) {
    if (Value *source = splitLastAxisSource(node->operand(0), 2))
      return Heads3d{source, *heads, *size};
    return std::nullopt;
  }
  // Sequence-first: Transpose(Reshape(P [S, b, h*d] -> [S, b, h, d])) {perm = [1, 2, 0, 3]}.
  if (isPerm(node, {1, 2, 0, 3})) {
    if (Value *source = splitLastAxisSource(node->operand(0), 2))
      return Heads3d{source, *heads, *size, false, 0, 0, /*seqFirst=*/true};
    return std::nullopt;
  }
  // ViT: Gather(Transpose(Reshape(qkv -> [b,S,k,h,d])) {perm = [2,0,3,1,4]}, i).
  if (node && node->kind() == OpKind::Gather && node->getInt("axis", 0) == 0) {
    std::optional<double> index = scalarConstant(node->operand(1));
    Node *transpose = node->operand(0)->definingNode();
    if (!index || node->operand(1)->shape().rank() != 0 || !isPerm(transpose, {2, 0, 3, 1, 4}))
      return std::nullopt;
    Value *source = splitLastAxisSource(transpose->operand(0), 3);
    std::optional<int64_t> parts =
        source ? constantDim(transpose->operand(0)->shape(), 2) : std::nullopt;
    int64_t i = int64_t(*index);
    if (!parts || i < 0 || i >= *parts)
      return std::nullopt;
    int64_t width = *heads * *size;
    return Heads3d{source, *heads, *size, true, i * width, (i + 1) * width};
  }
  return std::nullopt;
}

/// What Kᵀ [b, h, d, Skv] was made from.
struct KeyForms {
  Value *k4 = nullptr;            // [b, h, Skv, d] (or [b, g, Skv, d]), when the graph has it
  int64_t group = 1;              // query heads per K head, when repeat_kv was peeled
  Value *splitHeads = nullptr;    // Reshape result [b, Skv, h, d] of perm (0,2,3,1)
  std::vector<int64_t> splitToK4; // the perm from splitHeads to the 4-D K
  Value *repeated = nullptr;      // the repeated K, when repeat_kv was peeled
  std::optional<Heads3d> k3;
};

KeyForms keyForms(Value *kt, double &scale) {
  KeyForms forms;
  Node *node = kt->definingNode();
  if (isPerm(node, {0, 2, 3, 1}) || isPerm(node, {1, 2, 3, 0})) {
    // [b, Skv, h, d] (or sequence-first [Skv, b, h, d]) straight to Kᵀ.
    bool seqFirst = isPerm(node, {1, 2, 3, 0});
    forms.splitHeads = node->operand(0);
    forms.splitToK4 =
        seqFirst ? std::vector<int64_t>{1, 2, 0, 3} : std::vector<int64_t>{0, 2, 1, 3};
    const Shape &shape = kt->shape();
    std::optional<int64_t> heads = constantDim(shape, 1), size = constantDim(shape, 2);
    if (Value *source = splitLastAxisSource(forms.splitHeads, 2); source && heads && size)
      forms.k3 = Heads3d{source, *heads, *size, false, 0, 0, seqFirst};
  } else if (isPerm(node, {0, 1, 3, 2})) {
    forms.k4 = stripScale(node->operand(0), scale);
    if (Value *kv = repeatedKvSource(forms.k4, forms.group)) {
      forms.repeated = forms.k4;
      forms.k4 = kv;
    }
    forms.k3 = headsSource(forms.k4);
  }
  return forms;
}

/// The Reshape merging heads after the transposed output.
struct MergeRoot {
  Node *reshape = nullptr;
  bool seqFirst = false; // [Sq, b, h*dv] (or its [Sq*b, h*dv] view)
};

/// The Reshape merging heads after the transposed output: its node, or null.
/// [b, h, Sq, dv] -> Transpose [0, 2, 1, 3] -> Reshape [b, Sq, h*dv], or the
/// sequence-first Transpose [2, 0, 1, 3] -> Reshape [Sq, b, h*dv] or the
/// [Sq*b, h*dv] that torch's out_proj reads.
MergeRoot mergeHeadsRoot(const Graph &graph, const Value *o4) {
  Node *transpose = soleUser(graph, o4);
  bool seqFirst = isPerm(transpose, {2, 0, 1, 3});
  if (!isPerm(transpose, {0, 2, 1, 3}) && !seqFirst)
    return {};
  Node *reshape = soleUser(graph, transpose->result(0));
  if (!reshape || reshape->kind() != OpKind::Reshape || reshape->operand(0) != transpose->result(0))
    return {};
  const Shape &in = o4->shape(), &out = reshape->result(0)->shape();
  std::optional<int64_t> heads = constantDim(in, 1), size = constantDim(in, 3);
  if (!out.isRanked() || !heads || !size)
    return {};
  std::optional<int64_t> merged = constantDim(out, out.rank() - 1);
  if (!merged || *merged != *heads * *size)
    return {};
  const Dim &outer = seqFirst ? in[2] : in[0], &inner = seqFirst ? in[0] : in[2];
  bool split = out.rank() == 3 && out[0] == outer && out[1] == inner;
  bool flat = seqFirst && out.rank() == 2 && out[0] == outer * inner;
  if (!split && !flat)
    return {};
  return {reshape, seqFirst};
}

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

/// Everything found between the score MatMul and the value MatMul.
struct CoreMatch {
  Node *scores = nullptr, *softmax = nullptr, *output = nullptr;
  Value *q = nullptr, *kt = nullptr, *v = nullptr;
  double scale = 1.0;
  std::vector<MaskTerm> masks;
  // Where(cond, 0, p) or Where(cond, p, 0) between Softmax and the value
  // MatMul: probabilities zeroed where `cond` hides (XSoftmax).
  Node *zeroing = nullptr;
  MaskEncoding zeroingEncoding = MaskEncoding::HiddenWhereTrue;
  // Shape nodes reading an intermediate score tensor (a mask sized from
  // the scores): rewired to the Attention's operands' dims.
  std::vector<Node *> shapeReaders;
};

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

CoreMatch matchCore(const Graph &graph, Node &softmax) {
  CoreMatch m;
  m.softmax = &softmax;
  const Shape &shape = softmax.result(0)->shape();
  // The first check is the one that tells what the candidate is: additive
  // (Bahdanau) or graph attention scores come from no MatMul, whatever
  // their rank.
  if (!scoresFromMatMul(softmax.operand(0)))
    throw Rejection{"scores do not come from a MatMul (not dot-product attention)"};
  if (!shape.isRanked() || shape.rank() != 4)
    throw Rejection{shape.isRanked() && shape.rank() == 3
                        ? "scores are 3-D and lift-batched-heads did not split their heads"
                        : "scores are not 4-D [batch, heads, q, k]"};
  int64_t axis = softmax.getInt("axis", -1);
  if (axis != -1 && axis != 3)
    throw Rejection{"Softmax is not over the last (key) axis"};
  Value *probs = softmax.result(0);
  m.output = soleUser(graph, probs);
  if (m.output && m.output->kind() == OpKind::Where) {
    std::optional<double> onTrue = scalarConstant(m.output->operand(1));
    std::optional<double> onFalse = scalarConstant(m.output->operand(2));
    if (onTrue && *onTrue == 0 && m.output->operand(2) == probs)
      m.zeroingEncoding = MaskEncoding::HiddenWhereTrue;
    else if (onFalse && *onFalse == 0 && m.output->operand(1) == probs)
      m.zeroingEncoding = MaskEncoding::HiddenWhereFalse;
    else
      throw Rejection{"a Where after Softmax does not zero hidden probabilities"};
    if (m.output->operand(0)->dtype() != DType::Bool)
      throw Rejection{"a Where zeroing probabilities has a condition that is not bool"};
    m.zeroing = m.output;
    probs = m.zeroing->result(0);
    m.output = soleUser(graph, probs);
  }
  if (!m.output || m.output->kind() != OpKind::MatMul || m.output->operand(0) != probs)
    throw Rejection{"Softmax output is not multiplied by V alone"};

  Value *value = softmax.operand(0);
  Node *consumer = &softmax;
  // Walking backwards, masks come first; a scale seen before a mask means
  // the mask was scaled too.
  bool sawScale = false;
  for (;;) {
    Node *node = value->definingNode();
    if (!node)
      throw Rejection{"scores do not come from a MatMul"};
    if (!feedsOnly(graph, value, consumer, m.shapeReaders))
      throw Rejection{"an intermediate score tensor is used elsewhere"};
    if (node->result(0)->shape() != shape)
      throw Rejection{"a mask or scale broadcasts the scores to another shape"};
    if (node->kind() == OpKind::MatMul) {
      m.scores = node;
      break;
    }
    if (node->kind() == OpKind::Add) {
      bool first = leadsToScoreMatMul(node->operand(0)),
           second = leadsToScoreMatMul(node->operand(1));
      if (first == second)
        throw Rejection{"an Add before Softmax does not add a mask to the scores"};
      Value *mask = node->operand(first ? 1 : 0);
      if (mask->dtype() != value->dtype() || mask->shape().rank() == 0 || mask->shape().rank() > 4)
        throw Rejection{"an additive mask is not a float tensor of rank 1 to 4"};
      m.masks.push_back({mask, MaskEncoding::Additive});
      value = node->operand(first ? 0 : 1);
      if (sawScale)
        throw Rejection{"the scores are scaled after the mask"};
    } else if (node->kind() == OpKind::Sub) {
      // scores - bias: an additive mask of -bias.
      if (!leadsToScoreMatMul(node->operand(0)) || leadsToScoreMatMul(node->operand(1)))
        throw Rejection{"a Sub before Softmax does not subtract a bias from the scores"};
      Value *bias = node->operand(1);
      if (bias->dtype() != value->dtype() || bias->shape().rank() == 0 || bias->shape().rank() > 4)
        throw Rejection{"a subtracted bias is not a float tensor of rank 1 to 4"};
      m.masks.push_back({bias, MaskEncoding::Additive, 0, /*negated=*/true});
      value = node->operand(0);
      if (sawScale)
        throw Rejection{"the scores are scaled after the mask"};
    } else if (node->kind() == OpKind::Where) {
      std::optional<double> onTrue = scalarConstant(node->operand(1));
      std::optional<double> onFalse = scalarConstant(node->operand(2));
      Value *cond = node->operand(0);
      if (isHidingFill(onTrue) && leadsToScoreMatMul(node->operand(2))) {
        m.masks.push_back({cond, MaskEncoding::HiddenWhereTrue, *onTrue});
        value = node->operand(2);
      } else if (isHidingFill(onFalse) && leadsToScoreMatMul(node->operand(1))) {
        m.masks.push_back({cond, MaskEncoding::HiddenWhereFalse, *onFalse});
        value = node->operand(1);
      } else {
        throw Rejection{
            "a Where before Softmax does not replace scores by a large negative constant"};
      }
      if (cond->shape().rank() == 0 || cond->shape().rank() > 4)
        throw Rejection{"a Where mask is not of rank 1 to 4"};
      if (sawScale)
        throw Rejection{"the scores are scaled after the mask"};
    } else if (node->kind() == OpKind::Div || node->kind() == OpKind::Mul) {
      sawScale = true;
      bool isDiv = node->kind() == OpKind::Div;
      std::optional<double> c1 = scalarConstant(node->operand(1));
      std::optional<double> c0 = isDiv ? std::nullopt : scalarConstant(node->operand(0));
      if (c1 && *c1 != 0) {
        m.scale = isDiv ? m.scale / *c1 : m.scale * *c1;
        value = node->operand(0);
      } else if (c0) {
        m.scale *= *c0;
        value = node->operand(1);
      } else {
        throw Rejection{"the scores are multiplied by something other than a scalar constant"};
      }
    } else {
      throw Rejection{"an unexpected op sits between the score MatMul and Softmax"};
    }
    consumer = node;
  }
  m.q = stripScale(m.scores->operand(0), m.scale);
  m.kt = stripScale(m.scores->operand(1), m.scale);
  m.v = m.output->operand(1);

  const Shape &q = m.q->shape(), &kt = m.kt->shape(), &v = m.v->shape();
  if (!q.isRanked() || !kt.isRanked() || !v.isRanked() || q.rank() != 4 || kt.rank() != 4 ||
      v.rank() != 4)
    throw Rejection{"Q, Kᵀ or V is not 4-D"};
  if (q[0] != kt[0] || q[0] != v[0] || q[1] != kt[1] || q[1] != v[1])
    throw Rejection{"Q, K and V do not share batch and heads (broadcast or grouped heads)"};
  if (q[3] != kt[2] || kt[3] != v[2])
    throw Rejection{"Q·Kᵀ·V dimensions do not chain"};
  if (!isFloat(m.q->dtype()) || m.q->dtype() != m.kt->dtype() || m.q->dtype() != m.v->dtype())
    throw Rejection{"Q, K and V do not share one floating type"};
  return m;
}

/// Mask attributes and the operand that remain after the proof.
struct MaskPlan {
  KeyBand band;
  Value *operand = nullptr; // data-dependent mask, before any Not
  bool negate = false;      // operand is a "hidden" bool: Not() it
  bool subtract = false;    // operand is a subtracted bias: Neg() it
  // The finite value the Where masks replace hidden scores by (mask_fill);
  // none when they fill -inf (the op's default meaning) or there are none.
  std::optional<double> fill;
  // The band is around the diagonal offset by a cache (kvSeq = past +
  // qSeq): the op says so only with past_key / past_value operands.
  bool pastOffset = false;
  // DeBERTa: the additive operand and the zeroed Where's bool mask combined
  // into one additive operand Where(condition, fill, operand).
  Value *combinedCondition = nullptr;
  bool combinedHiddenWhereTrue = true;
  double combinedFill = 0;
};

/// A fill that leaves a hidden key's probability exactly 0 whenever its row
/// sees any key with a finite score: exp(fill - max) underflows.
bool zeroesHiddenProbability(double fill) { return fill <= -1e30; }

/// K and V as a KV cache concatenated with the new keys along the sequence
/// (GPT-2's torch.cat((past_key, key), dim=-2)).
struct CacheSplit {
  Value *pastKey = nullptr, *newKey = nullptr, *pastValue = nullptr, *newValue = nullptr;
};

/// The cache and new parts of the 4-D K and V, when both are Concat(past,
/// new) on the sequence axis with `past` keys in the cache; nullopt else.
std::optional<CacheSplit> splitCache(Value *k4, Value *v4, const Dim &past) {
  auto parts = [&](Value *x) -> std::optional<std::pair<Value *, Value *>> {
    Node *cat = x ? x->definingNode() : nullptr;
    if (!cat || cat->kind() != OpKind::Concat || cat->numOperands() != 2)
      return std::nullopt;
    int64_t axis = cat->getInt("axis", 0);
    Value *cache = cat->operand(0), *fresh = cat->operand(1);
    if ((axis != 2 && axis != -2) || !cache || !fresh || cache->shape().rank() != 4 ||
        fresh->shape().rank() != 4 || !cache->shape()[2].provablyEqual(past))
      return std::nullopt;
    return std::make_pair(cache, fresh);
  };
  auto key = parts(k4), value = parts(v4);
  if (!key || !value)
    return std::nullopt;
  return CacheSplit{key->first, key->second, value->first, value->second};
}

/// Whether the Attention op's attributes say exactly this band: none,
/// is_causal, window, or both. (These four forms are closed under
/// intersection, so several masks that each are one combine into one.)
bool expressible(const KeyBand &b) {
  return b.isEverything() || b.above == 0 || b.above == b.below;
}

std::string bandText(const KeyBand &b) {
  auto side = [](int64_t v) {
    return v == KeyBand::kUnbounded ? std::string("unbounded") : std::to_string(v);
  };
  return "[" + side(b.below) + " below, " + side(b.above) + " above]";
}

/// The masks as one Attention: a proven band becomes is_causal / window, at
/// most one other mask the operand, and a finite Where fill mask_fill. The
/// fused op replaces a key hidden by the band or a bool operand by the fill
/// and then adds a float operand, so the unfused chain must mean exactly
/// that: every Where fills the same value, and with a finite fill no Where
/// comes after the additive operand (which it would overwrite) and no band
/// is additive (its keys score s + v, not the fill). A fill of -inf hides
/// the same either way, so those orders fuse as before.
/// K and V as the 4-D tensors the op would read (K before its transpose and
/// either before a grouped-query repeat), split into cache and new keys.
std::optional<CacheSplit> cacheOf(const CoreMatch &m) {
  double scale = m.scale; // keyForms folds a scale on K into it: a copy here
  KeyForms key = keyForms(m.kt, scale);
  int64_t group = 1;
  Value *v4 = m.v;
  if (Value *kv = repeatedKvSource(m.v, group))
    v4 = kv;
  const Shape &scores = m.scores->result(0)->shape();
  std::optional<Dim> past = Dim::trySubtract(scores[3], scores[2]);
  if (!past)
    return std::nullopt;
  return splitCache(key.k4, v4, *past);
}

MaskPlan planMasks(const CoreMatch &m, PassContext &context) {
  MaskPlan plan;
  const Shape &scores = m.scores->result(0)->shape();
  const Dim &qSeq = scores[2], &kvSeq = scores[3];
  // A band around a diagonal offset by a cache is expressible only when the
  // op can read the cache apart (past_key / past_value).
  bool offsetExpressible = qSeq == kvSeq || cacheOf(m).has_value();
  std::optional<double> whereFill;
  bool additiveBand = false, additiveOperand = false, whereAfterAdd = false;
  if (m.zeroing) {
    // Zeroing the probabilities a Where hid changes only rows that see no
    // key (see the file comment), provided that Where is the last mask
    // applied and its fill leaves the hidden probabilities exactly 0.
    if (m.masks.empty() || m.masks.front().mask != m.zeroing->operand(0) ||
        m.masks.front().encoding != m.zeroingEncoding)
      throw Rejection{"the Where zeroing probabilities after Softmax does not repeat the mask "
                      "applied last before it"};
    if (!zeroesHiddenProbability(m.masks.front().fill))
      throw Rejection{"probabilities are zeroed after Softmax, but the Where before it fills a "
                      "value under which hidden keys keep some probability"};
  }
  // m.masks runs from Softmax backwards; walk them in the order applied.
  for (auto it = m.masks.rbegin(); it != m.masks.rend(); ++it) {
    const MaskTerm &term = *it;
    bool isWhere = term.encoding != MaskEncoding::Additive;
    if (isWhere) {
      if (whereFill && *whereFill != term.fill)
        throw Rejection{"two Where masks fill different values"};
      whereFill = term.fill;
      whereAfterAdd = whereAfterAdd || additiveOperand;
    }
    std::string why = "a subtracted bias (ALiBi) is an additive operand";
    std::optional<KeyBand> band =
        term.negated ? std::nullopt : proveBandMask(term.mask, term.encoding, qSeq, kvSeq, why);
    if (band && !band->isEverything() && !offsetExpressible) {
      why = "query and key lengths differ and K and V are not a cache concatenated with the "
            "new keys (the op offsets its diagonal only by a past_key operand)";
      band.reset();
    }
    if (band && expressible(*band)) {
      plan.band = plan.band.intersect(*band);
      additiveBand = additiveBand || !isWhere;
      continue;
    } else if (band)
      why = "its band " + bandText(*band) + " is neither causal nor symmetric";
    context.explain(*m.softmax, "mask " + term.mask->name() + " stays an operand: " + why);
    if (plan.operand && additiveOperand && isWhere && m.zeroing && &term == &m.masks.front() &&
        std::isfinite(term.fill) && term.mask->dtype() == DType::Bool &&
        plan.operand->dtype() == DType::F32) {
      // The additive operand (applied before) and this Where as one operand.
      plan.combinedCondition = term.mask;
      plan.combinedHiddenWhereTrue = term.encoding == MaskEncoding::HiddenWhereTrue;
      plan.combinedFill = term.fill;
      continue;
    }
    if (plan.operand)
      throw Rejection{"more than one mask stays an operand"};
    plan.operand = term.mask;
    if (!isWhere) {
      additiveOperand = true;
      plan.subtract = term.negated;
      continue;
    }
    if (term.mask->dtype() != DType::Bool)
      throw Rejection{"a Where mask condition is not bool"};
    plan.negate = term.encoding == MaskEncoding::HiddenWhereTrue;
  }
  if (plan.combinedCondition) {
    // The combined operand says every hidden score; nothing else may hide.
    if (!plan.band.isEverything())
      throw Rejection{"a shape-only mask meets an additive operand and a zeroed Where mask"};
    if (plan.subtract)
      throw Rejection{"a subtracted bias meets a zeroed Where mask"};
    return plan;
  }
  if (whereFill && std::isfinite(*whereFill)) {
    if (whereAfterAdd)
      throw Rejection{"a Where filling a finite value follows the additive mask (the fused op "
                      "would add the mask to the fill)"};
    if (additiveBand)
      throw Rejection{"an additive shape-only mask meets a Where filling a finite value (its "
                      "hidden keys score s + mask, not the fill)"};
    plan.fill = whereFill;
  }
  plan.pastOffset = !plan.band.isEverything() && qSeq != kvSeq;
  assert(expressible(plan.band));
  return plan;
}

class FuseAttention : public Pass {
public:
  std::string_view name() const override { return "fuse-attention"; }
  std::string_view description() const override {
    return "replace exported scaled dot-product attention (and its head plumbing) by one Attention "
           "op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    // Softmaxes first: a fusion erases nodes after its Softmax.
    std::vector<Node *> candidates = graph.nodesOfKind(OpKind::Softmax);
    bool changed = false;
    for (Node *softmax : candidates) {
      // A chain left dead by an earlier fusion waits for dce.
      if (!softmax->result(0)->hasUses())
        continue;
      try {
        CoreMatch core = matchCore(graph, *softmax);
        if (!core.output->result(0)->hasUses() && !graph.isOutput(core.output->result(0)))
          continue;
        MaskPlan masks = planMasks(core, context);
        rewrite(graph, core, masks, context);
        changed = true;
      } catch (const Rejection &r) {
        context.reject(*softmax, r.reason);
      }
    }
    return changed;
  }

private:
  static Value *constantI64(Graph &graph, const std::string &base, std::vector<int64_t> values) {
    int64_t n = int64_t(values.size());
    return graph.addConstant(graph.uniqueName(base), Tensor::fromVector<int64_t>({n}, values));
  }

  static void rollBack(Graph &graph, std::vector<Node *> &created, size_t assumptionsBefore) {
    // What the tried nodes' shape rules assumed goes with them.
    graph.truncateAssumptions(assumptionsBefore);
    for (auto it = created.rbegin(); it != created.rend(); ++it)
      graph.eraseNode(*it);
  }

  /// Creates a node before `before` and infers its result types.
  static Node *create(Graph &graph, std::vector<Node *> &created, OpKind kind,
                      const std::vector<Value *> &operands, const std::string &name, Node *before,
                      const std::vector<std::pair<std::string, Attribute>> &attributes = {}) {
    Node *node = graph.createNode(kind, operands, 1, name, {graph.uniqueName(name)}, before);
    created.push_back(node);
    for (const auto &[key, value] : attributes)
      node->setAttr(key, value);
    InferenceContext inference(graph);
    inferNodeShapes(*node, inference);
    return node;
  }

  static Value *materialize(Graph &graph, std::vector<Node *> &created, const Heads3d &heads,
                            const std::string &name, Node *before) {
    if (!heads.sliced)
      return heads.source;
    std::vector<Value *> operands = {
        heads.source, constantI64(graph, name + ".start", {heads.begin}),
        constantI64(graph, name + ".end", {heads.end}), constantI64(graph, name + ".axes", {2})};
    return create(graph, created, OpKind::Slice, operands, name, before)->result(0);
  }

  /// Shape(scores) read the [b, h, Sq, Skv] dims of a tensor that no longer
  /// exists: rebuild them from values that do (the projections, or the 4-D
  /// Q and V), placed before the Shape node so every reader stays in order.
  static void rewireShapeReaders(Graph &graph, const CoreMatch &core, Value *v4, const Heads3d *q3,
                                 const Heads3d *v3) {
    for (Node *reader : core.shapeReaders) {
      std::vector<Node *> created;
      auto dimsOf = [&](Value *value, int64_t start, int64_t end) {
        return create(graph, created, OpKind::Shape, {value}, "attention.dims", reader,
                      {{"start", Attribute(start)}, {"end", Attribute(end)}})
            ->result(0);
      };
      std::vector<Value *> dims; // one 1-element tensor per axis of the scores
      if (q3) {
        int64_t batchAxis = q3->seqFirst ? 1 : 0, seqAxis = q3->seqFirst ? 0 : 1;
        dims = {dimsOf(q3->source, batchAxis, batchAxis + 1),
                constantI64(graph, "attention.heads", {q3->heads}),
                dimsOf(q3->source, seqAxis, seqAxis + 1), dimsOf(v3->source, seqAxis, seqAxis + 1)};
      } else {
        Value *bhs = dimsOf(core.q, 0, 3);
        dims = {bhs, dimsOf(v4, 2, 3)};
      }
      replaceShapeReader(graph, created, reader, dims);
    }
  }

  /// Replaces `reader` = Shape(t) {start, end} of a 4-D t by the matching
  /// slice of `dims` (one 1-element tensor per axis of t, concatenated).
  static void replaceShapeReader(Graph &graph, std::vector<Node *> &created, Node *reader,
                                 const std::vector<Value *> &dims) {
    int64_t rank = 4;
    auto clampAxis = [rank](int64_t axis) {
      return std::clamp(axis < 0 ? axis + rank : axis, int64_t(0), rank);
    };
    int64_t start = clampAxis(reader->getInt("start", 0)),
            end = clampAxis(reader->getInt("end", rank));
    Value *full = create(graph, created, OpKind::Concat, dims, "attention.dims", reader,
                         {{"axis", Attribute(int64_t(0))}})
                      ->result(0);
    Value *picked = full;
    if (start != 0 || end != rank) {
      std::vector<Value *> operands = {
          full, constantI64(graph, "attention.dims.start", {start}),
          constantI64(graph, "attention.dims.end", {std::max(start, end)})};
      picked = create(graph, created, OpKind::Slice, operands, "attention.dims", reader)->result(0);
    }
    std::string name = reader->result(0)->name();
    graph.replaceAllUsesWith(reader->result(0), picked);
    graph.eraseNode(reader);
    graph.renameValue(picked, name);
  }

  /// K or V repeated for grouped heads may stay measured by Shape nodes
  /// (HF LLaMA slices its mask to Shape(repeated K)[-2]): they read the
  /// unrepeated source's dims instead, so that once the fused chain is
  /// swept the repeat goes dead too (unless something else still reads it).
  static void rewireRepeatedShapeReaders(Graph &graph, Value *repeated, Value *source) {
    if (!repeated || repeated == source)
      return;
    std::vector<Node *> readers;
    for (const Use &use : repeated->uses())
      if (use.user->kind() == OpKind::Shape &&
          std::find(readers.begin(), readers.end(), use.user) == readers.end())
        readers.push_back(use.user);
    std::optional<int64_t> heads = constantDim(repeated->shape(), 1);
    if (!heads)
      return;
    for (Node *reader : readers) {
      std::vector<Node *> created;
      auto dimsOf = [&](int64_t start, int64_t end) {
        return create(graph, created, OpKind::Shape, {source}, "attention.dims", reader,
                      {{"start", Attribute(start)}, {"end", Attribute(end)}})
            ->result(0);
      };
      replaceShapeReader(
          graph, created, reader,
          {dimsOf(0, 1), constantI64(graph, "attention.heads", {*heads}), dimsOf(2, 4)});
    }
  }

  /// Whether a row flag of the zeroing Where's condition, [.., Sq, 1],
  /// broadcasts over the merged [b, Sq, h*dv] result once its head axis is
  /// dropped: the condition does not vary over heads.
  static bool rowsBroadcastOver3d(const Node &zeroing) {
    const Shape &cond = zeroing.operand(0)->shape();
    if (!cond.isRanked())
      return false;
    if (cond.rank() <= 2)
      return true;
    return cond.rank() <= 4 && cond[cond.rank() - 3] == Dim(1);
  }

  /// XSoftmax's zeroing of hidden probabilities, on the fused result: a row
  /// that sees no key (by the zeroing Where's condition) becomes 0, every
  /// other row is already what the zeroing leaves (see the file comment).
  static Value *zeroRowsSeeingNoKey(Graph &graph, std::vector<Node *> &created,
                                    const CoreMatch &core, Value *result, bool threeD,
                                    const std::string &base, Node *before) {
    const std::string name = base + ".rows";
    Value *visible = core.zeroing->operand(0);
    if (core.zeroingEncoding == MaskEncoding::HiddenWhereTrue)
      visible = create(graph, created, OpKind::Not, {visible}, name, before)->result(0);
    Value *asFloat = create(graph, created, OpKind::Cast, {visible}, name, before,
                            {{"to", Attribute(int64_t(1))}})
                         ->result(0);
    Value *any = create(graph, created, OpKind::ReduceMax,
                        {asFloat, constantI64(graph, name + ".axes", {-1})}, name, before)
                     ->result(0); // [.., Sq, 1]
    if (threeD && any->shape().rank() >= 3)
      any = create(graph, created, OpKind::Squeeze,
                   {any, constantI64(graph, name + ".heads", {int64_t(any->shape().rank()) - 3})},
                   name, before)
                ->result(0);
    Value *seesKey =
        create(graph, created, OpKind::Cast, {any}, name, before, {{"to", Attribute(int64_t(9))}})
            ->result(0);
    Value *zero = graph.addConstant(graph.uniqueName(name + ".zero"), Tensor::scalar<float>(0.0f));
    return create(graph, created, OpKind::Where, {seesKey, result, zero}, name, before)->result(0);
  }

  void rewrite(Graph &graph, const CoreMatch &core, const MaskPlan &masks, PassContext &context) {
    double scale = core.scale;
    KeyForms key = keyForms(core.kt, scale);
    // Grouped-query attention: K and V repeated per group (repeat_kv) are
    // read ungrouped, by an Attention with fewer KV heads.
    int64_t valueGroup = 1;
    Value *v4 = core.v;
    if (Value *kv = repeatedKvSource(core.v, valueGroup))
      v4 = kv;
    if (key.group != valueGroup)
      throw Rejection{"K and V are repeated for grouped heads differently"};
    const int64_t group = key.group;
    // A band offset by a cache: the op offsets its diagonal by the length
    // of past_key, so it reads the cache and the new keys apart (and
    // appends them itself, in the 4-D form).
    std::optional<CacheSplit> cache;
    if (masks.pastOffset) {
      const Shape &scores = core.scores->result(0)->shape();
      cache = splitCache(key.k4, v4, scores[3] - scores[2]);
      if (!cache)
        throw Rejection{"the mask is a band offset by kv - q, but K and V are not a cache "
                        "concatenated with the new keys"};
    }
    std::optional<Heads3d> q3 = headsSource(core.q), v3 = headsSource(v4);
    MergeRoot merge = mergeHeadsRoot(graph, core.output->result(0));
    bool threeD = !cache && q3 && key.k3 && v3 && merge.reshape && key.k3->heads == v3->heads &&
                  q3->heads == key.k3->heads * group && q3->seqFirst == merge.seqFirst &&
                  key.k3->seqFirst == merge.seqFirst && v3->seqFirst == merge.seqFirst;
    if (threeD && core.zeroing && (merge.seqFirst || !rowsBroadcastOver3d(*core.zeroing)))
      threeD = false; // the zeroed rows are per head or sequence-first: 4-D keeps them apart
    Node *root = threeD ? merge.reshape : core.output;
    if (threeD) {
      // A scale applied to the projection before the head split (BART's
      // q_proj(x) * scaling) joins the op's scale: the op reads the
      // unscaled projection, and the Mul is left dead.
      if (!q3->sliced)
        q3->source = stripScale(q3->source, scale);
      if (!key.k3->sliced)
        key.k3->source = stripScale(key.k3->source, scale);
    }
    std::string base = core.softmax->name().empty() ? "attention" : core.softmax->name();

    std::vector<Node *> created;
    size_t assumptionsBefore = graph.assumptions().size();
    try {
      std::vector<Value *> operands;
      if (threeD) {
        operands = {materialize(graph, created, *q3, base + ".q", root),
                    materialize(graph, created, *key.k3, base + ".k", root),
                    materialize(graph, created, *v3, base + ".v", root)};
      } else {
        // The 4-D op wants K itself: undo the exporter's transpose.
        Value *k4 = key.k4;
        if (!k4 && key.splitHeads)
          k4 = create(graph, created, OpKind::Transpose, {key.splitHeads}, base + ".k", root,
                      {{"perm", Attribute(key.splitToK4)}})
                   ->result(0);
        else if (!k4)
          k4 = create(graph, created, OpKind::Transpose, {core.kt}, base + ".k", root,
                      {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 2})}})
                   ->result(0);
        operands = {core.q, k4, v4};
        if (cache)
          operands = {core.q, cache->newKey, cache->newValue};
      }
      if (masks.operand) {
        Value *mask = masks.operand;
        if (masks.combinedCondition) {
          Value *fill = graph.addConstant(graph.uniqueName(base + ".fill"),
                                          Tensor::scalar<float>(float(masks.combinedFill)));
          std::vector<Value *> where = {masks.combinedCondition, fill, mask};
          if (!masks.combinedHiddenWhereTrue)
            std::swap(where[1], where[2]);
          mask = create(graph, created, OpKind::Where, where, base + ".bias", root)->result(0);
        }
        if (masks.negate)
          mask = create(graph, created, OpKind::Not, {mask}, base + ".visible", root)->result(0);
        if (masks.subtract)
          mask = create(graph, created, OpKind::Neg, {mask}, base + ".bias", root)->result(0);
        operands.push_back(mask);
      }
      if (cache) {
        if (!masks.operand)
          operands.push_back(nullptr);
        operands.push_back(cache->pastKey);
        operands.push_back(cache->pastValue);
      }
      Node *attention = graph.createNode(OpKind::Attention, operands, 1, base, {}, root);
      created.push_back(attention);
      attention->setAttr("scale", Attribute(float(scale)));
      if (threeD) {
        attention->setAttr("q_num_heads", Attribute(q3->heads));
        attention->setAttr("kv_num_heads", Attribute(key.k3->heads));
        if (merge.seqFirst)
          attention->setAttr("seq_first", Attribute(int64_t(1)));
      }
      const KeyBand &band = masks.band;
      if (band.above == 0 && !band.isEverything())
        attention->setAttr("is_causal", Attribute(int64_t(1)));
      if (band.below != KeyBand::kUnbounded)
        attention->setAttr("window", Attribute(band.below));
      if (masks.fill)
        attention->setAttr("mask_fill", Attribute(float(*masks.fill)));
      InferenceContext inference(graph);
      inferNodeShapes(*attention, inference);
      Value *result = attention->result(0);
      if (core.zeroing)
        result = zeroRowsSeeingNoKey(graph, created, core, result, threeD, base, root);
      if (threeD && root->result(0)->shape().rank() == 2) {
        // torch's out_proj reads the [Sq*b, h*dv] view of [Sq, b, h*dv].
        const Shape &flat = root->result(0)->shape();
        std::optional<int64_t> width = flat[1].constant();
        result =
            create(graph, created, OpKind::Reshape,
                   {result, constantI64(graph, base + ".flat", {-1, *width})}, base + ".flat", root)
                ->result(0);
      }
      if (result->type() != root->result(0)->type())
        throw Rejection{"the fused op's result type differs from the pattern's"};
      std::string resultName = root->result(0)->name();
      graph.replaceAllUsesWith(root->result(0), result);
      graph.eraseNode(root);
      graph.renameValue(result, resultName);
    } catch (const Error &) {
      rollBack(graph, created, assumptionsBefore);
      throw Rejection{"shape inference rejects the fused op"};
    } catch (const Rejection &) {
      rollBack(graph, created, assumptionsBefore);
      throw;
    }
    rewireShapeReaders(graph, core, v4, threeD ? &*q3 : nullptr, threeD ? &*v3 : nullptr);
    if (group > 1) {
      rewireRepeatedShapeReaders(graph, key.repeated, key.k4);
      rewireRepeatedShapeReaders(graph, core.v, v4);
    }
    context.count("fused");
    if (!threeD)
      context.count("in 4-D form");
    if (group > 1)
      context.count("grouped-query");
    if (masks.band.above == 0 && !masks.band.isEverything())
      context.count("causal");
    if (masks.band.below != KeyBand::kUnbounded)
      context.count("windowed");
    if (masks.operand)
      context.count("with a mask operand");
    if (masks.fill)
      context.count("with a finite mask fill");
    if (cache)
      context.count("after a KV cache");
    if (core.zeroing)
      context.count("with hidden rows zeroed");
  }
};

} // namespace

std::unique_ptr<Pass> createFuseAttentionPass() { return std::make_unique<FuseAttention>(); }

} // namespace onnxc
