//===- codegen/kernels/RowKernels.h - Softmax, LogSoftmax, LayerNorm, RMSNorm rows -===//
//
// Emits one LLVM function per row operation over a row-major [rows, L] float
// tensor. Each row is a few passes over L elements (which stay in L1 for
// transformer row lengths), in explicit <8 x float> vectors: an unrolled main
// loop with four independent accumulators, a loop of single vectors, and one
// masked vector for the last L mod 8 elements.
//
// Every kernel has the signature
//   void f(const float *in, float *out, const float *gamma, const float *beta,
//          int64_t rowBegin, int64_t rowEnd)
// and processes rows [rowBegin, rowEnd), so the runtime can split rows over
// threads. With RowKernelSpec::rowLength == 0 the row length is not baked in
// and the function takes it as a seventh argument `int64_t rowLength`.
// `out` may equal `in`; gamma and beta are ignored where the op has none.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <cstdint>
#include <string>
#include <string_view>

namespace onnxc {

enum class RowKernelKind {
  /// out = exp(x - max) / sum(exp(x - max))
  Softmax,
  /// out = (x - max) - log(sum(exp(x - max)))
  LogSoftmax,
  /// out = (x - mean) / sqrt(var + epsilon) * gamma (+ beta), var over L
  LayerNorm,
  /// out = x / sqrt(mean(x^2) + epsilon) * gamma
  RmsNorm,
};

struct RowKernelSpec {
  RowKernelKind kind = RowKernelKind::Softmax;
  /// Elements per row; 0 means "passed at run time".
  int64_t rowLength = 0;
  /// LayerNorm and RMSNorm only.
  float epsilon = 1e-5f;
  /// LayerNorm only: whether `beta` is read (otherwise it may be null).
  bool hasBeta = false;
};

/// The C types of the emitted functions.
using RowKernelFn = void(const float *in, float *out, const float *gamma, const float *beta,
                         int64_t rowBegin, int64_t rowEnd);
using RuntimeLengthRowKernelFn = void(const float *in, float *out, const float *gamma,
                                      const float *beta, int64_t rowBegin, int64_t rowEnd,
                                      int64_t rowLength);

/// Emits the kernel `name` into `module`. Throws onnxc::Error for a negative
/// row length, a negative or non-finite epsilon, or beta on an op without one.
llvm::Function *emitRowKernel(llvm::Module &module, const RowKernelSpec &spec,
                              const std::string &name);

/// "softmax", "log_softmax", "layer_norm", "rms_norm".
std::string_view rowKernelKindName(RowKernelKind kind);

} // namespace onnxc
