//===- codegen/kernels/VectorMath.h - Vectorizable exp, log, erf, tanh, GELU -===//
//
// IRBuilder helpers that expand transcendental functions into straight-line
// IR (fmuladd, mul, add, div, integer shifts on the bit pattern, compares and
// selects), never a libm call. The same helper works on a scalar `float` and
// on any `<W x float>`, so a kernel's vector body and its scalar tail share
// one implementation and the vector form needs no auto-vectorizer.
//
// Each function handles ±0, ±inf, NaN and subnormal inputs; the measured
// accuracy of each is recorded in docs/KERNEL_ACCURACY.md and asserted by
// tests/unit/codegen/CodegenMathTest.cpp. The helpers clear the builder's fast-math
// flags while they emit: the range reductions rely on exact IEEE rounding.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/IRBuilder.h"

#include <string_view>

namespace onnxc::vmath {

/// e^x. Overflows to +inf above ln(FLT_MAX), returns subnormals down to
/// e^-103.97 and 0 below.
llvm::Value *emitExp(llvm::IRBuilderBase &builder, llvm::Value *x);
/// Natural logarithm: -inf at ±0, NaN below 0, +inf at +inf.
llvm::Value *emitLog(llvm::IRBuilderBase &builder, llvm::Value *x);
/// The error function.
llvm::Value *emitErf(llvm::IRBuilderBase &builder, llvm::Value *x);
/// Hyperbolic tangent.
llvm::Value *emitTanh(llvm::IRBuilderBase &builder, llvm::Value *x);
/// 1 / (1 + e^-x), computed so that large negative x keeps relative accuracy.
llvm::Value *emitSigmoid(llvm::IRBuilderBase &builder, llvm::Value *x);
/// GELU, erf form: x/2 * (1 + erf(x/sqrt(2))), with a rational erf and no
/// exp (cheap enough for the GEMM store). Relative error <= 1.1e-6 for
/// |y| >= 0.1 and <= 1e-4 for |y| >= 4e-3; below, in the negative tail, the
/// error is absolute, <= 8.2e-7, and y is -0 past x = -5.54.
llvm::Value *emitGeluErf(llvm::IRBuilderBase &builder, llvm::Value *x);
/// GELU, tanh form: x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3))),
/// evaluated through the identity 1 + tanh(u) = 2 * sigmoid(2u).
llvm::Value *emitGeluTanh(llvm::IRBuilderBase &builder, llvm::Value *x);

/// The functions above, by name, for callers that pick one from a table.
enum class MathFunction { Exp, Log, Erf, Tanh, Sigmoid, GeluErf, GeluTanh };
/// Dispatches to the emit function for `function`.
llvm::Value *emitMathFunction(llvm::IRBuilderBase &builder, MathFunction function, llvm::Value *x);
/// Lowercase name ("exp", "gelu_erf", ...), for test and benchmark output.
std::string_view mathFunctionName(MathFunction function);

} // namespace onnxc::vmath
