//===- codegen/kernels/GemvEmitter.h - LLVM IR for a vector times a packed matrix -===//
//
// y = bias + x · B for one row x (or a few), B a [K, N] operand in the
// packed layout of GemmPacking.h with a single K block (kc >= K: packed =
// [column panel][k][NR floats]). This is the recurrent step of LSTM/GRU/RNN
// (h · Rᵀ per time step), where the GEMM's 1-row tail would run 2 vectors
// of FMA chains and stall on their latency. Here panels are walked side by
// side — four for one row: per k one broadcast of x[k] and 8 vector FMAs
// into independent accumulators (4 panels × 2 vectors), so the loop is
// bound by the loads of B, one per FMA: by the bandwidth B streams in at
// (a 4 MiB R lives in L3). With several rows each loaded B vector feeds
// every row's FMA, so B is read once for all of them; fewer panels go side
// by side to keep the accumulators in registers. The last panels (fewer
// than a group, or the one past N % NR) run as one group with k split over
// 2 or 4 accumulator sets when they would have fewer than 8 chains.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/GemmPacking.h"

#include <cstdint>
#include <string>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace onnxc {

/// A GEMV over weights packed with gemvBlocking(k, lanes).
struct PackedGemvSpec {
  std::string name;
  int64_t k = 0;
  int64_t n = 0;
  /// GemmLanesAvx2 or GemmLanesAvx512: panels are 2 * lanes columns.
  int64_t lanes = GemmLanesAvx2;
  /// Whether y starts from bias[0, N) instead of 0.
  bool bias = false;
  /// Rows of x and y (1 to kMaxGemvRows), each at its stride in floats
  /// (0: K for x, the padded N for y).
  int64_t rows = 1;
  int64_t xStride = 0, yStride = 0;
};

/// The most rows one GEMV computes.
inline constexpr int64_t kMaxGemvRows = 4;

/// The blocking a GEMV's B is packed with: one K block of k rows.
GemmBlocking gemvBlocking(int64_t k, int64_t lanes);

/// C signature of a GEMV kernel: y[r][0, nPadded) = bias + x[r][0, K) ·
/// packedB for every row r, nPadded = gemmPaddedColumns(N, 2 * lanes).
/// Every padded column is written (0 past N: B's padding is zero and the
/// bias is not read there).
/// `bias` may be null when the spec has none.
using PackedGemvFn = void(const float *x, const float *packedB, const float *bias, float *y);

/// Emits the kernel `spec.name` into `module` (external linkage); throws
/// onnxc::Error for non-positive dims or an unknown width.
llvm::Function *emitPackedGemv(llvm::Module &module, const PackedGemvSpec &spec);

} // namespace onnxc
