//===- ir/LinearAttentionAttributes.cpp - LinearAttention's attributes -----===//
#include "ir/LinearAttentionAttributes.h"

#include "ir/Error.h"

#include <cmath>

namespace onnxc {

float LinearAttentionAttributes::scaleFor(int64_t keySize) const {
  if (scale != 0.0f)
    return scale;
  return float(1.0 / std::sqrt(double(keySize)));
}

LinearAttentionAttributes linearAttentionAttributes(const Node &node) {
  LinearAttentionAttributes a;
  std::string rule = node.getString("update_rule", "gated_delta");
  if (rule != "linear" && rule != "gated" && rule != "delta" && rule != "gated_delta")
    fail(node.describe(), ": unknown update_rule '", rule,
         "' (expected linear, gated, delta or gated_delta)");
  a.gated = rule == "gated" || rule == "gated_delta";
  a.delta = rule == "delta" || rule == "gated_delta";
  a.qHeads = node.requireInt("q_num_heads");
  a.kvHeads = node.requireInt("kv_num_heads");
  if (a.qHeads <= 0 || a.kvHeads <= 0 || a.qHeads % a.kvHeads != 0)
    fail(node.describe(), ": q_num_heads (", a.qHeads, ") must be a positive multiple of ",
         "kv_num_heads (", a.kvHeads, ")");
  a.scale = node.getFloat("scale", 0.0f);
  if (!std::isfinite(a.scale))
    fail(node.describe(), ": scale must be finite, got ", a.scale);
  (void)node.getInt("chunk_size", 64); // a tuning hint; throws on a non-integer
  if (a.gated != node.hasOperand(kLinearDecay))
    fail(node.describe(), ": update_rule '", rule, "' ", a.gated ? "needs" : "takes no",
         " decay input");
  if (a.delta != node.hasOperand(kLinearBeta))
    fail(node.describe(), ": update_rule '", rule, "' ", a.delta ? "needs" : "takes no",
         " beta input");
  return a;
}

bool isLinearAttentionType(DType type) {
  return type == DType::F32 || type == DType::F16 || type == DType::BF16;
}

} // namespace onnxc
