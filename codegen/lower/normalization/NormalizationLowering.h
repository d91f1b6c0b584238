//===- codegen/lower/normalization/NormalizationLowering.h - Norm lowering internals -===//
//
// Internal to NormalizationLowering.cpp (which picks the path) and
// NormalizationLoops.cpp (the general loop nests).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

namespace onnxc::lower {

/// LayerNormalization or RMSNormalization, with its operands resolved.
struct NormalizationSpec {
  bool isLayerNorm = true;
  int64_t axis = 0; // normalized, in [0, rank)
  float epsilon = 1e-5f;
  const Value *x = nullptr;
  const Value *scale = nullptr;
  const Value *bias = nullptr; // LayerNorm only, optional
  const Value *y = nullptr;
  const Value *mean = nullptr;      // LayerNorm's Mean, when something reads it
  const Value *invStdDev = nullptr; // LayerNorm's InvStdDev, likewise
};

/// `operand` (scale or bias) with leading 1s dropped so that it broadcasts
/// one way to `normalized`; ctx.unsupported when it cannot.
Shape normalizationOperandShape(const LoweringContext &ctx, const Node &node, const Value *operand,
                                const Shape &normalized, const char *what);

/// Softmax/LogSoftmax along `axis` for any float dtype and axis: per line
/// along the axis, max, sum of exp in double, then the outputs.
void emitGeneralSoftmax(LoweringContext &ctx, const Node &node, bool logarithm, int64_t axis);

/// LayerNorm/RMSNorm for any float dtypes, broadcast scale/bias and the
/// optional statistics, computed in double as the evaluator does.
void emitGeneralNormalization(LoweringContext &ctx, const Node &node,
                              const NormalizationSpec &spec);

} // namespace onnxc::lower
