//===- codegen/GemmActivation.h - Vector activations for GEMM epilogues ----===//
//
// Inline <8 x float> code for the activations fused into the GEMM store.
// Nothing here calls libm, so the kernels stay self-contained in a model.so.
//
// Accuracy (measured against double-precision std::exp / std::erf /
// std::tanh by CodegenGemmActivationTest):
//   exp:       Cody-Waite reduction, degree-6 Taylor polynomial on
//              |r| <= ln2/2: relative error < 3e-7 over [-87, 88]
//              (2.2e-7 measured).
//   GELU erf:  0.5 x erfc(-x/sqrt 2) with Abramowitz & Stegun 7.1.26 for
//              erfc (absolute error <= 1.5e-7 in erfc), evaluated without
//              cancellation on both sides of 0: |error| <= 2e-7 * max(1, |x|)
//              (1.5e-7 measured on [-12, 12]).
//   GELU tanh: x * sigmoid(2y) = x / (1 + exp(-2y)), which is the tanh form
//              rewritten exactly, so its error is that of exp plus one divide:
//              1.2e-7 * max(1, |x|) measured on [-12, 12].
// These are stopgaps until codegen/VectorMath provides shared, accurate
// exp/erf/tanh; the epilogue then only needs to call those.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/GemmEmitter.h"

#include "llvm/IR/IRBuilder.h"

namespace onnxc {

/// e^x lane-wise for a float vector; inputs are clamped to [-87.3, 88.3] so
/// the result is finite and normal.
llvm::Value *emitVectorExp(llvm::IRBuilder<> &builder, llvm::Value *x);

/// `activation` applied lane-wise to the float vector `x`.
llvm::Value *emitGemmActivation(llvm::IRBuilder<> &builder, llvm::Value *x,
                                GemmActivation activation);

} // namespace onnxc
