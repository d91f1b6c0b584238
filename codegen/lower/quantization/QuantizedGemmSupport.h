//===- codegen/lower/quantization/QuantizedGemmSupport.h - Pieces of the integer lowerings -===//
//
// What the lowerings onto the integer GEMM (QuantizedGemmLowering.cpp for the
// matrix products, QuantizedConvLowering.cpp for the convolutions) share:
// turning an activation into the kernel's u8 operand, the weights packed
// once per layout as constants, and QLinear*'s requantization multipliers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/IntegerGemm.h"
#include "codegen/lower/LoweringContext.h"

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::lower {

/// How an activation becomes the kernel's u8 A: an f32 tensor quantized by
/// a scale and zero point (QuantizeLinear), or an integer tensor taken as it
/// is (u8) or plus 128 (i8, so that the u8 x s8 kernel serves it too).
struct ActivationBytes {
  DType source = DType::F32;
  /// The quantized type's range (f32 sources).
  double low = 0, high = 255;
  /// Added to a quantized value (and to the zero point) to store it as u8.
  int32_t storedOffset = 0;

  /// For a source of `source` quantized to `quantized` (u8 or i8).
  static ActivationBytes of(DType source, DType quantized);
};

/// `x` (a vector of floats, or of source bytes) as the i32 values stored:
/// f32: clamp(roundeven(x / scale) + zero, low, high) + offset, with `scales`
/// and `zeros` float vectors (null otherwise); integers: x + offset.
llvm::Value *storedActivation(llvm::IRBuilder<> &ir, const ActivationBytes &a, llvm::Value *x,
                              llvm::Value *scales, llvm::Value *zeros);

/// Rounds floats half to even by adding and subtracting 1.5 * 2^23, exact
/// for the |v| <= 2^22 quantization produces, with no libm call on any
/// x86-64.
llvm::Value *roundEven(llvm::IRBuilder<> &ir, llvm::Value *v);
/// clamp(v, lo, hi) as std::clamp computes it for numbers.
llvm::Value *clampFloat(llvm::IRBuilder<> &ir, llvm::Value *v, double lo, double hi);

/// `value`'s constant contents, or a compile error naming `what`.
const Tensor &requireConstant(LoweringContext &ctx, const Node &node, const Value *value,
                              const char *what);
/// A constant's elements as floats / as i32 (scales, zero points).
std::vector<float> constantFloats(const Tensor &tensor);
std::vector<int32_t> constantInts(const Tensor &tensor);

/// Whether weights with these zero points (s8, or u8 shifted to s8) need
/// the kernel's row sums (IntegerGemmSpec::rowSums).
bool weightsNeedRowSums(const std::vector<int32_t> &zeroPoints, bool unsignedWeights);

/// The packed weights and column terms as the artifact's constants, made by
/// `pack` on the first request for `key` (a weight several nodes share is
/// stored once).
struct PackedWeightBuffers {
  int32_t packed = -1, columns = -1;
};
PackedWeightBuffers packedWeightBuffers(LoweringContext &ctx, const std::string &key,
                                        const std::function<PackedIntegerWeights()> &pack);

/// QLinearMatMul's and QLinearConv's multiplier per column, as the evaluator
/// rounds it: float(float(aScale * bScale[n]) / yScale).
std::vector<float> requantizeMultipliers(float aScale, const std::vector<float> &bScales,
                                         float yScale);

/// A constant one-value f32 scale of a QLinear op, or nullopt when it is
/// not (the lowering then keeps the loop nest).
std::optional<float> constantScale(const LoweringContext &ctx, const Value *value);

} // namespace onnxc::lower
