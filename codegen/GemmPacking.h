//===- codegen/GemmPacking.h - Blocking and B-panel layout of the GEMM -----===//
//
// The emitted GEMM (GemmEmitter.h) computes C = A * B with a 6x16 register
// tile. Its B operand is "packed": split into K blocks of `kc` rows, and each
// block into column panels of 16 floats, so that the micro-kernel reads one
// panel as a single contiguous stream of kc * 16 floats:
//
//   packed = [K block b][column panel p][k within block][16 columns]
//   panel (b, p) starts at  b*kc*nPadded + p*16*kcOf(b),  nPadded = ceil(N/16)*16
//
// Columns past N are zero, so tail panels need no special case inside the
// micro-kernel (only the store is masked). The same layout is produced at
// compile time for weights (packGemmWeights, here) and at run time for
// activations (the runtime-B kernels of GemmEmitter.h).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace onnxc {

/// Rows of the register tile (broadcast A values per k).
inline constexpr int64_t GemmMR = 6;
/// Columns of the register tile: two 8-float AVX vectors.
inline constexpr int64_t GemmNR = 16;

/// Cache blocking of one GEMM. Both sizes are compile-time constants of the
/// emitted kernel, and `kc` also fixes the packed-B layout, so a kernel and
/// the weights it reads must agree on it.
struct GemmBlocking {
  /// Rows of B per K block. One 16-column panel of a block (kc * 64 bytes)
  /// must stay in L1 while every 6-row tile of the A block streams past it.
  int64_t kc = 256;
  /// Rows of A packed per block (a multiple of GemmMR). The packed A block
  /// (mc * kc * 4 bytes) lives on the kernel's stack and in L2.
  int64_t mc = 96;
  /// Whether A blocks are packed into k-major 6-row panels first, or the
  /// micro-kernel broadcasts A straight from its rows. Packing pays when K
  /// takes several blocks (A's rows are then long and far apart: up to 3%
  /// at K = 3072); with one block it is a copy of A for nothing (-1% at
  /// 128x384x384), so chooseGemmBlocking packs only then.
  bool packA = true;
};

/// Blocking for a GEMM of depth `k`: K is split into the fewest blocks of at
/// most 320 rows, of equal size (rounded up to a multiple of 8), so that no
/// block is a short remainder. 320 rows make a 20 KiB B panel, which leaves
/// room in the 32 KiB L1 of Zen 3 / Skylake cores for the A micro-panel
/// (7.5 KiB) streaming through. K up to 384 (the hidden size of MiniLM-class
/// models) stays one block all the same: its 24 KiB panel crowds L1 a little,
/// but C is written once instead of written, read back and written again
/// (128x384x1536: 1% faster in isolation; in a model the 576 KiB of C of a
/// 96x1536 block would make that round trip through L3). mc = 96 keeps the packed
/// A block at <= 144 KiB, under a third of a 512 KiB L2, so B panels from
/// L3 fit beside it.
GemmBlocking chooseGemmBlocking(int64_t k);

/// Columns of B rounded up to whole panels.
inline int64_t gemmPaddedColumns(int64_t n) { return (n + GemmNR - 1) / GemmNR * GemmNR; }

/// Floats in the packed form of a [k, n] B operand (independent of kc).
inline int64_t packedGemmWeightsSize(int64_t k, int64_t n) { return k * gemmPaddedColumns(n); }

/// Packs B into the layout above. `b` is [k, n] row-major, or [n, k]
/// row-major when `transposed` (ONNX Gemm transB=1, or a Linear weight).
/// `out` holds packedGemmWeightsSize(k, n) floats; 64-byte alignment is
/// best (panels then never straddle cache lines).
void packGemmWeights(const float *b, int64_t k, int64_t n, bool transposed,
                     const GemmBlocking &blocking, float *out);

/// Convenience form of packGemmWeights returning the packed floats.
std::vector<float> packGemmWeights(const float *b, int64_t k, int64_t n, bool transposed,
                                   const GemmBlocking &blocking);

} // namespace onnxc
