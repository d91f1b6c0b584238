//===- passes/attention/FuseAttentionHeads.cpp - Reading the multi-head plumbing ---===//
//
// fuse-attention's readers of what exporters write around the attention
// core: the head split of Q, K and V (Reshape + Transpose; split-packed-qkv
// has brought a ViT's packed qkv, batch-first-heads torch's sequence-first
// heads to the same form), Kᵀ, LLaMA's repeat_kv and the head merge of the
// result. Apart from the core matcher because they answer a different question:
// not "is this attention" but "can the 3-D op read the projections in
// place" (when they cannot, the 4-D form is used).
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/attention/FuseAttentionMatch.h"

namespace onnxc::attention {

using match::definedBy;
using match::scalarConstant;
using match::soleUser;
using match::transposePerm;

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

namespace {

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

} // namespace

/// The [b, S, h*d] form of a [b, h, S, d] head tensor, if the graph split
/// heads out of one.
std::optional<Heads3d> headsSource(const Value *v4) {
  const Shape &shape = v4->shape();
  std::optional<int64_t> heads = constantDim(shape, 1), size = constantDim(shape, 3);
  if (!heads || !size)
    return std::nullopt;
  Node *node = v4->definingNode();
  if (!isPerm(node, {0, 2, 1, 3}))
    return std::nullopt;
  if (Value *source = splitLastAxisSource(node->operand(0), 2))
    return Heads3d{source, *heads, *size};
  return std::nullopt;
}

KeyForms keyForms(Value *kt, double &scale) {
  KeyForms forms;
  Node *node = kt->definingNode();
  if (isPerm(node, {0, 2, 3, 1})) {
    // [b, Skv, h, d] straight to Kᵀ.
    forms.splitHeads = node->operand(0);
    const Shape &shape = kt->shape();
    std::optional<int64_t> heads = constantDim(shape, 1), size = constantDim(shape, 2);
    if (Value *source = splitLastAxisSource(forms.splitHeads, 2); source && heads && size)
      forms.k3 = Heads3d{source, *heads, *size};
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

Node *mergeHeadsRoot(const Graph &graph, const Value *o4) {
  Node *transpose = soleUser(graph, o4);
  if (!isPerm(transpose, {0, 2, 1, 3}))
    return nullptr;
  Node *reshape = soleUser(graph, transpose->result(0));
  if (!reshape || reshape->kind() != OpKind::Reshape || reshape->operand(0) != transpose->result(0))
    return nullptr;
  const Shape &in = o4->shape(), &out = reshape->result(0)->shape();
  std::optional<int64_t> heads = constantDim(in, 1), size = constantDim(in, 3);
  if (!out.isRanked() || out.rank() != 3 || !heads || !size)
    return nullptr;
  std::optional<int64_t> merged = out[2].constant();
  if (!merged || *merged != *heads * *size || !(out[0] == in[0]) || !(out[1] == in[2]))
    return nullptr;
  return reshape;
}

} // namespace onnxc::attention
