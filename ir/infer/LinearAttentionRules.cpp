//===- ir/infer/LinearAttentionRules.cpp - LinearAttention shapes ----------===//
//
// LinearAttention (opset 27), heads packed in the last axis:
//
//   query [B, T, Hq*dk], key [B, T, Hkv*dk], value [B, T, Hkv*dv]
//   past_state [B, Hkv, dk, dv]      (optional: zeros)
//   decay [B, T, Hkv] or [B, T, Hkv*dk]   (gated rules only)
//   beta  [B, T, Hkv] or [B, T, 1]        (delta rules only)
//   -> output [B, T, Hq*dv], present_state [B, Hkv, dk, dv]
//
// dk comes from the query (as in ONNX's reference), dv from the value. The
// activations share one type T; the state may have another (S), which the
// present state takes (T when there is no past). Both are f32, f16 or bf16.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/LinearAttentionAttributes.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

void requireFloatType(const Node &node, DType type, const char *what) {
  if (type != DType::Unknown && !isLinearAttentionType(type))
    fail(node.describe(), ": linear attention ", what,
         " must be float32, float16 or bfloat16, got ", dtypeName(type));
}

/// `hidden / heads`; a provable remainder is an error naming `what`.
Dim headSize(const Node &node, const Dim &hidden, int64_t heads, const char *what) {
  if (std::optional<int64_t> h = hidden.constant(); h && *h % heads != 0)
    fail(node.describe(), ": ", what, " hidden size ", *h, " is not divisible by ", heads,
         " heads");
  std::optional<Dim> size = hidden.divideExactly(Dim(heads));
  return size ? *size : Dim::unknown();
}

const Shape *rank3(const Node &node, size_t index, const char *what) {
  const Value *value = node.operand(index);
  if (!value || !value->shape().isRanked())
    return nullptr;
  if (value->shape().rank() != 3)
    fail(node.describe(), ": linear attention ", what, " must be 3-D (B, T, H*D), got ",
         value->shape().str());
  return &value->shape();
}

/// decay's or beta's last dim must be one of `allowed` (provably, when it
/// is known at all: the kernels pick the per-head or per-element form from it).
void requireLastDimAmong(const Node &node, const Shape &shape, const char *what,
                         std::initializer_list<Dim> allowed, const char *spelled) {
  const Dim &last = shape[2];
  if (last.isUnknown())
    return;
  for (const Dim &d : allowed)
    if (last.provablyEqual(d))
      return;
  fail(node.describe(), ": linear attention ", what, " of shape ", shape.str(),
       " must have last dim ", spelled);
}

void inferLinearAttention(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 3);
  LinearAttentionAttributes a = linearAttentionAttributes(node);
  DType dtype =
      commonOperandDType(node, {kLinearQuery, kLinearKey, kLinearValue, kLinearDecay, kLinearBeta});
  requireFloatType(node, dtype, "inputs");
  const Value *past = node.operand(kLinearPastState);
  DType stateType = past && past->dtype() != DType::Unknown ? past->dtype() : dtype;
  requireFloatType(node, stateType, "past_state");

  const Shape *q = rank3(node, kLinearQuery, "query"), *k = rank3(node, kLinearKey, "key"),
              *v = rank3(node, kLinearValue, "value");
  const Shape *decay = rank3(node, kLinearDecay, "decay"), *beta = rank3(node, kLinearBeta, "beta");
  if (past && past->shape().isRanked() && past->shape().rank() != 4)
    fail(node.describe(), ": linear attention past_state must be 4-D (B, H_kv, d_k, d_v), got ",
         past->shape().str());
  if (!q || !k || !v) {
    node.result(0)->setType({dtype, Shape::unranked()});
    if (node.numResults() > 1)
      node.result(1)->setType({stateType, Shape::unranked()});
    return;
  }
  Dim batch = (*q)[0], steps = (*q)[1];
  Dim keySize = headSize(node, (*q)[2], a.qHeads, "query");
  Dim valueSize = headSize(node, (*v)[2], a.kvHeads, "value");
  for (const Shape *other : {k, v, decay, beta}) {
    if (!other)
      continue;
    requireSameDim(context, node, batch, (*other)[0], "linear attention batch", *q, *other);
    requireSameDim(context, node, steps, (*other)[1], "linear attention sequence length", *q,
                   *other);
  }
  requireSameDim(context, node, (*k)[2], keySize * Dim(a.kvHeads),
                 "linear attention key hidden size (kv_num_heads * d_k)", *k, *q);
  Dim kvHeads(a.kvHeads);
  if (decay)
    requireLastDimAmong(node, *decay, "decay", {kvHeads, kvHeads * keySize},
                        "kv_num_heads or kv_num_heads * d_k");
  if (beta)
    requireLastDimAmong(node, *beta, "beta", {kvHeads, Dim(1)}, "kv_num_heads or 1");
  Shape state({batch, kvHeads, keySize, valueSize});
  if (past && past->shape().isRanked()) {
    const Shape &p = past->shape();
    for (size_t i = 0; i < 4; ++i)
      if (provablyDifferent(p[i], state[i]))
        fail(node.describe(), ": linear attention past_state of shape ", p.str(),
             " must be (B, H_kv, d_k, d_v) = ", state.str());
    for (size_t i = 0; i < 4; ++i)
      requireSameDim(context, node, p[i], state[i], "linear attention past_state", p, state);
  }
  node.result(0)->setType({dtype, Shape({batch, steps, valueSize * Dim(a.qHeads)})});
  if (node.numResults() > 1)
    node.result(1)->setType({stateType, state});
}

} // namespace

void registerLinearAttentionShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::LinearAttention, inferLinearAttention);
}

} // namespace onnxc
