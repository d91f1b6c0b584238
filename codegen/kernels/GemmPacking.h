//===- codegen/kernels/GemmPacking.h - Blocking and B-panel layout of the GEMM -===//
//
// The emitted GEMM (GemmEmitter.h) computes C = A * B with an MR x NR
// register tile, NR = two vectors of `lanes` floats: 6 x 16 with AVX2 (8
// lanes), 12 x 32 with AVX-512 (16 lanes). Its B operand is "packed": split into K blocks
// of `kc` rows, and each block into column panels of NR floats, so that the
// micro-kernel reads one panel as a single contiguous stream of kc * NR floats:
//
//   packed = [K block b][column panel p][k within block][NR columns]
//   panel (b, p) starts at  b*kc*nPadded + p*NR*kcOf(b),  nPadded = ceil(N/NR)*NR
//
// Columns past N are zero, so tail panels need no special case inside the
// micro-kernel (only the store is masked). The same layout is produced at
// compile time for weights (packGemmWeights, here) and at run time for
// activations (the runtime-B kernels of GemmEmitter.h); a kernel and the
// panels it reads must agree on kc and NR.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace onnxc {

/// Floats per vector of the two kernel widths: 256-bit AVX2, 512-bit AVX-512.
inline constexpr int64_t GemmLanesAvx2 = 8;
inline constexpr int64_t GemmLanesAvx512 = 16;

/// Rows of the register tile (broadcast A values per k). Its 2 * MR
/// accumulators take 12 of AVX2's 16 ymm registers; AVX-512's 32 zmm
/// registers hold 24, so each B vector loaded (from L2 when the panel is
/// deeper than L1 holds) feeds twice as many FMAs: measured on a Sapphire
/// Rapids core, 197x768x768 went from 74% to 82% of the FMA peak.
inline constexpr int64_t gemmTileRows(int64_t lanes) { return lanes == GemmLanesAvx512 ? 12 : 6; }
/// The most rows any tile has (sizes the emitter's fixed arrays).
inline constexpr int64_t GemmMaxMR = 12;

/// Cache blocking of one GEMM. Both sizes are compile-time constants of the
/// emitted kernel, and `kc` also fixes the packed-B layout, so a kernel and
/// the weights it reads must agree on it.
struct GemmBlocking {
  /// Rows of B per K block (one 16-column panel of a block is kc * 64
  /// bytes; see chooseGemmBlocking for where it lives).
  int64_t kc = 256;
  /// Rows of A packed per block (a multiple of mr()). The packed A block
  /// (up to maxPackedBlockRows * kc * 4 bytes) lives on the kernel's stack and in L2.
  int64_t mc = 96;
  /// Whether A blocks are packed into k-major mr()-row panels first, or the
  /// micro-kernel broadcasts A straight from its rows (chooseGemmBlocking
  /// packs only when K takes several blocks).
  bool packA = true;
  /// Floats per vector (GemmLanesAvx2 or GemmLanesAvx512); the register tile
  /// and the B panels are nr() = two vectors wide.
  int64_t lanes = GemmLanesAvx2;
  int64_t nr() const { return 2 * lanes; }
  int64_t mr() const { return gemmTileRows(lanes); }
};

/// Rows of A a block's packed panels may hold: the last block of a row
/// range takes a remainder of under mc/2 rows with it (GemmIRBuilder's row
/// loop), and its last panel is zero-padded to whole tiles.
inline int64_t maxPackedBlockRows(const GemmBlocking &blocking) {
  const int64_t mr = blocking.mr();
  return (blocking.mc + blocking.mc / 2 + mr - 1) / mr * mr;
}

/// Blocking for a GEMM of depth `k`. K up to 1536 (the hidden and FFN sizes
/// of BERT-base and smaller) is one block, with A read from its rows: C is
/// written once, never read back between blocks, and A is not copied. Its
/// B panel (up to 96 KiB) then streams from L2 rather than sitting in L1,
/// which the 6x16 kernel's two B loads per 12 FMAs absorb: measured on Zen 3
/// against blocks of <= 320 rows with packed A, 128x384x384 +1.3%,
/// 128x1536x384 +1.7%, 2048x1536x384 +4%, 1024^3 within noise (the 12x32
/// tile on Sapphire Rapids: kc of 256-768, A packed or not, all within
/// noise of each other). Deeper K (3072: 3% slower
/// as one block) is split into the fewest blocks of at most 320 rows, of
/// equal size (rounded up to a multiple of 8, so no block is a short
/// remainder): a 20 KiB B panel stays in L1 beside the packed A micro-panel.
/// mc is 16 tiles: 96 rows with AVX2 keeps a packed A block at <= 120 KiB,
/// under a quarter of a 512 KiB L2. With 16 lanes the panels are twice as
/// wide (up to 192 KiB for one block of 1536 rows), and the 192 rows of a
/// block (a packed one up to 360 KiB) fit the 1-2 MiB L2 of the AVX-512
/// CPUs that run them. Each row block streams all of B, from DRAM when the
/// weights outgrow L3: ViT-base's 197 rows as one block rather than 96 + 101
/// ran 2.5% faster (Sapphire Rapids, interleaved runs).
GemmBlocking chooseGemmBlocking(int64_t k, int64_t lanes);

/// Columns of B rounded up to whole panels of `nr` columns.
inline int64_t gemmPaddedColumns(int64_t n, int64_t nr) { return (n + nr - 1) / nr * nr; }

/// Floats in the packed form of a [k, n] B operand (independent of kc).
inline int64_t packedGemmWeightsSize(int64_t k, int64_t n, int64_t nr) {
  return k * gemmPaddedColumns(n, nr);
}

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
