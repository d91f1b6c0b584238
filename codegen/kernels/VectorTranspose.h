//===- codegen/kernels/VectorTranspose.h - 8x8 transposition in vector registers -===//
//
// The GEMM's A packing, the tiled Transpose copy and the fused attention's
// query packing and output all turn eight 8-lane rows into eight 8-lane
// columns. The sequence is the classic three rounds of shuffles (unpack
// pairs, then pairs of pairs, then 128-bit halves) that x86 backends lower
// to one instruction each: 24 shuffles for 64 elements.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>

namespace llvm {
class IRBuilderBase;
class Value;
} // namespace llvm

namespace onnxc {

/// Lane `c` of row `r` becomes lane `r` of result `c`. The rows are vectors
/// of 8 elements of one type (any width); rows the caller does not care
/// about may be poison.
std::array<llvm::Value *, 8> transpose8x8(llvm::IRBuilderBase &builder,
                                          const std::array<llvm::Value *, 8> &rows);

} // namespace onnxc
