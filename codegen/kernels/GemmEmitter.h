//===- codegen/kernels/GemmEmitter.h - LLVM IR for packed, register-tiled GEMM -===//
//
// Emits single-precision GEMM kernels as LLVM IR with explicit vectors of 8
// (AVX2) or 16 (AVX-512) floats and llvm.fma (any x86-64 works; the code is
// just slower without FMA). The loop nest follows the BLIS structure, with
// B already packed (GemmPacking.h); MR x NR is 6 x 16 at 8 lanes, 12 x 32
// at 16:
//
//   for each K block (kc rows of B, from the packed layout)
//     for each block of mc rows of A (within [rowBegin, rowEnd); the last
//     block takes a remainder of under mc/2 rows with it)
//       pack the A block into MR-row panels (stack buffer, rows zero-padded;
//       full panels 8 k at a time by in-register 8x8 transpositions),
//       unless K is one block: then the micro-kernel broadcasts A from its
//       rows directly (blocking.packA; see chooseGemmBlocking)
//       a block of 1-2 rows first walks B's full panels four at a time
//       (four memory streams for a decoder step that B's size bounds)
//       for each NR-column panel of B            <- L1 (L2 for one long block)
//         for each full MR-row tile of the A block   <- streams from L2
//           prefetch the tile's MR C rows (read back after the k loop)
//           MR x NR micro-kernel: 2 MR accumulators, per k one broadcast of
//           each of MR A values, two B vector loads, 2 MR FMAs; per
//           iteration of its k loop (unrolled by 4), prefetch 1 to 8 lines of
//           the next panel (the fewest that the block's tiles, between
//           them, cover the panel with: each prefetch costs the tile's
//           own loads)
//           store: + previous C (K blocks after the first), and on the
//           last K block the fused epilogue (+bias, activation, +residual)
//         the row tail (up to MR - 1 rows), once
//
// mc is 16 tiles (192 rows with AVX-512): a block streams all of B, which
// comes from DRAM when a model's weights outgrow L3.
//
// Full tiles store straight from the accumulators; column tails are masked
// stores (the padded B columns are zero); row tails come from zero-padded A
// panels, an MR x NR tile scratch and a store loop over the valid rows.
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

/// Activation applied in the GEMM store. The GELU forms are VectorMath.h's
/// (their accuracy is in docs/KERNEL_ACCURACY.md).
enum class GemmActivation { None, Relu, GeluErf, GeluTanh };

/// What is fused into the store of each output element, in this order:
///   c = activation(a.b + bias[col]) + residual[row, col]
struct GemmEpilogue {
  bool bias = false;
  GemmActivation activation = GemmActivation::None;
  bool residual = false;
};

/// A GEMM whose B is a constant pre-packed with packGemmWeights: K and N are
/// compile-time constants, M is the runtime row range.
struct PackedGemmSpec {
  std::string name;
  int64_t k = 0;
  int64_t n = 0;
  GemmEpilogue epilogue;
  /// Must match the blocking the weights were packed with.
  GemmBlocking blocking;
  /// 0: B is packed floats (packGemmWeights). Otherwise B is the int4 GEMV's
  /// records (Int4Gemv.h, `blocking.lanes` wide) with this quantization
  /// block, dequantized panel by panel into a stack buffer (Int4Unpack.h);
  /// blocking.kc must then be a multiple of it (int4GemmBlocking).
  int64_t int4Block = 0;
};

/// Row tiles per row block of an int4-records GEMM (blocking.mc / mr).
inline constexpr int64_t kInt4GemmBlockTiles = 32;

/// The blocking of an int4-records GEMM of depth `k`: K blocks of at most
/// 320 rows (one panel's floats stay in L1), each whole quantization blocks,
/// and row blocks of kInt4GemmBlockTiles tiles.
GemmBlocking int4GemmBlocking(int64_t k, int64_t lanes, int64_t block);

/// C signature of a packed-B kernel. Computes rows [rowBegin, rowEnd) and
/// columns [colBegin, colEnd) of C[M, N] = epilogue(A[M, K] * B); colBegin
/// is a multiple of NR (2 * lanes), colEnd one too or N (0 and N: all). `a`, `c` and `residual` are
/// row-major with leading dimensions lda, ldc, ldResidual (in floats); `bias` has N floats.
/// Pointers the epilogue does not use may be null. Uses (maxPackedBlockRows * kc + 8) * 4 bytes of
/// stack when it packs A, plus the tile scratch.
using PackedGemmFn = void(const float *a, int64_t lda, const float *packedB, float *c, int64_t ldc,
                          int64_t rowBegin, int64_t rowEnd, const float *bias,
                          const float *residual, int64_t ldResidual, int64_t colBegin,
                          int64_t colEnd);

/// Emits the kernel `spec.name` into `module` (external linkage); throws
/// onnxc::Error for non-positive dims or an invalid blocking.
llvm::Function *emitPackedGemm(llvm::Module &module, const PackedGemmSpec &spec);

/// A batched GEMM of two run-time operands (Q * K^T, P * V): each batch item
/// packs its B into a caller-provided buffer, then runs the same blocked
/// loop nest as the packed kernel. K and N are constants when positive, or
/// read from the `k` / `n` arguments when 0 (sequence-length dims).
struct RuntimeGemmSpec {
  std::string name;
  int64_t k = 0;
  int64_t n = 0;
  /// B items are [n, k] row-major (so the kernel computes A * B^T).
  bool transposedB = false;
  /// kc fixes the packing buffer's layout; 256 when K is unknown.
  GemmBlocking blocking;
};

/// C signature of a runtime-B kernel. For items i in [batchBegin, batchEnd):
///   C_i[m, n] = A_i[m, k] * B_i   with  X_i = x + i * strideX
/// B_i is [k, n] with leading dimension ldb, or [n, k] when transposed.
/// `packBuffer` holds packedGemmWeightsSize(k, n) floats, private to the
/// calling thread. `k` / `n` are ignored when the spec fixed them.
using RuntimeGemmFn = void(const float *a, int64_t lda, int64_t strideA, const float *b,
                           int64_t ldb, int64_t strideB, float *c, int64_t ldc, int64_t strideC,
                           int64_t m, int64_t k, int64_t n, int64_t batchBegin, int64_t batchEnd,
                           float *packBuffer);

/// Emits the kernel `spec.name` into `module` (external linkage).
llvm::Function *emitRuntimeGemm(llvm::Module &module, const RuntimeGemmSpec &spec);

/// C signature of a B-packing kernel: packs B ([k, n] with leading
/// dimension ldb, or [n, k] when the kernel packs transposed B) into `out`
/// (packedGemmWeightsSize(k, n) floats), the layout packGemmWeights writes
/// at compile time. For weights that are only known at run time.
using GemmPackFn = void(const float *b, int64_t ldb, int64_t k, int64_t n, float *out);

/// Emits a packing kernel for `blocking`'s kc and panel width (external
/// linkage).
llvm::Function *emitGemmPackKernel(llvm::Module &module, const std::string &name,
                                   const GemmBlocking &blocking, bool transposedB);

} // namespace onnxc
