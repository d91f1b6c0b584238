//===- ir/LinearAttentionAttributes.h - LinearAttention's attributes -------===//
//
// The attribute readings that LinearAttention's shape rule (ir/infer/), its
// reference kernel (ir/eval/) and its lowering (codegen/lower/attention/)
// share, so that all three accept the same nodes and refuse the others with
// the same line: the update rule, the head counts, the scale, and which of
// the optional decay and beta operands the rule needs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Node.h"

#include <cstdint>

namespace onnxc {

/// LinearAttention's operands and results, by index.
enum LinearAttentionOperand : size_t {
  kLinearQuery = 0,
  kLinearKey = 1,
  kLinearValue = 2,
  kLinearPastState = 3,
  kLinearDecay = 4,
  kLinearBeta = 5,
};

struct LinearAttentionAttributes {
  /// "gated" and "gated_delta" decay the state by exp(decay) before each step.
  bool gated = false;
  /// "delta" and "gated_delta" write beta * (v - S^T k) instead of v.
  bool delta = false;
  int64_t qHeads = 0, kvHeads = 0;
  /// The `scale` attribute; 0 (the default) means 1 / sqrt(d_k).
  float scale = 0.0f;

  /// Query heads per KV head: query head h reads KV head h / groupSize().
  int64_t groupSize() const { return qHeads / kvHeads; }
  /// The factor of the output for head size `keySize`.
  float scaleFor(int64_t keySize) const;
};

/// Reads and checks the attributes and which optional operands are present:
/// a known update_rule, positive head counts of which q_num_heads is a
/// multiple of kv_num_heads, decay present exactly for the gated rules and
/// beta exactly for the delta ones. Throws naming the node otherwise.
LinearAttentionAttributes linearAttentionAttributes(const Node &node);

/// Whether LinearAttention computes on `type`: the float types of its ONNX
/// schema (f32, f16, bf16).
bool isLinearAttentionType(DType type);

} // namespace onnxc
