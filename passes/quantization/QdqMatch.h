//===- passes/quantization/QdqMatch.h - The operands of a QDQ graph's quantized product ---===//
//
// A QDQ graph feeds each quantized MatMul, Gemm or Conv two dequantized
// operands: the activation, quantized by constants (QuantizeLinear ->
// DequantizeLinear with one scale and zero point) or at run time
// (DynamicQuantizeLinear -> DequantizeLinear of its three results), and the
// weights, DequantizeLinear of a constant i8/u8 tensor with a scale and zero
// point per tensor or along one axis. The fusion passes
// (FuseStaticQuantizedMatMul.cpp, FuseStaticQuantizedConv.cpp) read both
// through these matchers; each returns what it matched, or the Rejection
// whose reason `--explain` prints.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/MatchSupport.h"

#include <cstdint>

namespace onnxc::match {

/// The quantized activation: `x` (f32) with constant `scale` and `zero`, or
/// quantized at run time when `dynamic` (scale and zero then null).
struct QuantizedActivation {
  Value *x = nullptr, *scale = nullptr, *zero = nullptr;
  bool dynamic = false;
};

/// `operand` = DequantizeLinear(QuantizeLinear(x, s, z), s, z) with one
/// constant f32 scale > 0 and u8/i8 zero point, or, when `allowDynamic`,
/// DequantizeLinear of a DynamicQuantizeLinear's three results.
MatchResult<QuantizedActivation> matchQuantizedActivation(Value *operand, bool allowDynamic);

/// The quantized weights: a constant i8/u8 tensor, its f32 scale and
/// optional zero point (constants of one element or one per channel).
struct QuantizedWeights {
  Value *weights = nullptr, *scale = nullptr, *zero = nullptr;
};

/// `operand` = DequantizeLinear(w, scale[, zero]) of a constant i8/u8 `w` of
/// rank `rank` (0: any rank >= 3, a Conv's), quantized per tensor or along
/// `channelAxis` (the output channels), whose extent must be constant.
/// `what` names the weights' layout in the reasons ("[K, N] matrix").
MatchResult<QuantizedWeights> matchQuantizedWeights(Value *operand, size_t rank,
                                                    int64_t channelAxis, const char *what);

} // namespace onnxc::match
