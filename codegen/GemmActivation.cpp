//===- codegen/GemmActivation.cpp - Vector activations for GEMM epilogues --===//
#include "codegen/GemmActivation.h"

#include "llvm/IR/Intrinsics.h"

namespace onnxc {
namespace {

llvm::Value *splat(llvm::IRBuilder<> &builder, llvm::Value *like, double value) {
  auto *type = llvm::cast<llvm::VectorType>(like->getType());
  return llvm::ConstantFP::get(type, value);
}

llvm::Value *fma(llvm::IRBuilder<> &builder, llvm::Value *a, llvm::Value *b, llvm::Value *c) {
  return builder.CreateIntrinsic(llvm::Intrinsic::fma, {a->getType()}, {a, b, c});
}

/// Horner evaluation of sum(coefficients[i] * x^i), highest degree last.
llvm::Value *polynomial(llvm::IRBuilder<> &builder, llvm::Value *x,
                        std::initializer_list<double> coefficients) {
  auto it = std::rbegin(coefficients);
  llvm::Value *result = splat(builder, x, *it);
  for (++it; it != std::rend(coefficients); ++it)
    result = fma(builder, result, x, splat(builder, x, *it));
  return result;
}

/// erfc(z) for z >= 0: Abramowitz & Stegun 7.1.26, t = 1 / (1 + p z),
/// erfc(z) = t (a1 + a2 t + ... + a5 t^4) e^(-z^2), |error| <= 1.5e-7.
llvm::Value *emitErfcNonNegative(llvm::IRBuilder<> &builder, llvm::Value *z) {
  llvm::Value *one = splat(builder, z, 1.0);
  llvm::Value *t = builder.CreateFDiv(one, fma(builder, z, splat(builder, z, 0.3275911), one));
  llvm::Value *series =
      polynomial(builder, t, {0.254829592, -0.284496736, 1.421413741, -1.453152027, 1.061405429});
  llvm::Value *gauss = emitVectorExp(builder, builder.CreateFNeg(builder.CreateFMul(z, z)));
  return builder.CreateFMul(builder.CreateFMul(t, series), gauss);
}

/// 0.5 x (1 + erf(x / sqrt 2)). Written with erfc of |x| / sqrt 2 so neither
/// side subtracts nearly equal numbers: for x < 0 it is 0.5 x erfc(|z|), for
/// x >= 0 it is x - 0.5 x erfc(z).
llvm::Value *emitGeluErf(llvm::IRBuilder<> &builder, llvm::Value *x) {
  llvm::Value *absX = builder.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, x);
  llvm::Value *z = builder.CreateFMul(absX, splat(builder, x, 0.70710678118654752));
  llvm::Value *half = builder.CreateFMul(builder.CreateFMul(x, splat(builder, x, 0.5)),
                                         emitErfcNonNegative(builder, z));
  llvm::Value *nonNegative = builder.CreateFCmpOGE(x, splat(builder, x, 0.0));
  return builder.CreateSelect(nonNegative, builder.CreateFSub(x, half), half);
}

/// 0.5 x (1 + tanh(y)), y = sqrt(2/pi) (x + 0.044715 x^3), rewritten exactly
/// as x / (1 + e^(-2y)): one exp, no cancellation, saturates cleanly.
llvm::Value *emitGeluTanh(llvm::IRBuilder<> &builder, llvm::Value *x) {
  constexpr double sqrt2OverPi = 0.79788456080286536;
  llvm::Value *x2 = builder.CreateFMul(x, x);
  llvm::Value *inner = fma(builder, x2, splat(builder, x, 0.044715), splat(builder, x, 1.0));
  llvm::Value *minusTwoY =
      builder.CreateFMul(builder.CreateFMul(x, inner), splat(builder, x, -2.0 * sqrt2OverPi));
  llvm::Value *denominator =
      builder.CreateFAdd(splat(builder, x, 1.0), emitVectorExp(builder, minusTwoY));
  return builder.CreateFDiv(x, denominator);
}

} // namespace

llvm::Value *emitVectorExp(llvm::IRBuilder<> &builder, llvm::Value *x) {
  auto *floatVector = llvm::cast<llvm::VectorType>(x->getType());
  auto *intVector = llvm::VectorType::getInteger(floatVector);
  // Clamping keeps 2^n a normal float: n stays in [-126, 127].
  x = builder.CreateBinaryIntrinsic(llvm::Intrinsic::minnum, x, splat(builder, x, 88.3));
  x = builder.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, x, splat(builder, x, -87.3));
  // x = n ln2 + r with |r| <= ln2/2; ln2 split in two (Cody-Waite) so n*ln2High
  // is exact and r keeps its low bits.
  llvm::Value *n = builder.CreateUnaryIntrinsic(
      llvm::Intrinsic::rint, builder.CreateFMul(x, splat(builder, x, 1.4426950408889634)));
  llvm::Value *r = fma(builder, n, splat(builder, x, -0.693359375), x);
  r = fma(builder, n, splat(builder, x, 2.12194440054690583e-4), r);
  llvm::Value *p =
      polynomial(builder, r, {1.0, 1.0, 1.0 / 2, 1.0 / 6, 1.0 / 24, 1.0 / 120, 1.0 / 720});
  // 2^n by building the float's exponent field directly.
  llvm::Value *exponent =
      builder.CreateAdd(builder.CreateFPToSI(n, intVector), llvm::ConstantInt::get(intVector, 127));
  llvm::Value *scale = builder.CreateBitCast(
      builder.CreateShl(exponent, llvm::ConstantInt::get(intVector, 23)), floatVector);
  return builder.CreateFMul(p, scale);
}

llvm::Value *emitGemmActivation(llvm::IRBuilder<> &builder, llvm::Value *x,
                                GemmActivation activation) {
  switch (activation) {
  case GemmActivation::None:
    return x;
  case GemmActivation::Relu: {
    // select(x > 0, x, 0) maps to one vmaxps and sends NaN to 0, like max(x, 0).
    llvm::Value *zero = splat(builder, x, 0.0);
    return builder.CreateSelect(builder.CreateFCmpOGT(x, zero), x, zero);
  }
  case GemmActivation::GeluErf:
    return emitGeluErf(builder, x);
  case GemmActivation::GeluTanh:
    return emitGeluTanh(builder, x);
  }
  return x;
}

} // namespace onnxc
