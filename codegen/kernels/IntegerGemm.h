//===- codegen/kernels/IntegerGemm.h - u8 x s8 -> s32 GEMM kernels and their layout -===//
//
// The integer GEMM behind the quantized MatMuls and convolutions (docs/IR.md):
// A is u8 (an activation quantized at run time), B s8 weights packed at
// compile time, the products summed in s32 and finished in the store:
//
//   exact[m, n] = acc[m, n] - wZero[n] * rowSum[m] + aZero * colAdj[n]
//   acc[m, n] = sum_k A[m, k] * B[k, n],  rowSum[m] = sum_k A[m, k],
//   colAdj[n] = K * wZero[n] - sum_k B[k, n]
//
// which is sum_k (A - aZero)(B - wZero): the zero-point terms are a per-row
// and a per-column correction of one product of the raw bytes (the row term
// vanishes when every wZero is 0, and the kernel then reads no row sums).
// The store writes one of (IntegerGemmStore):
//
//   Dequantize  f32  f32(exact) * (aScale * wScale[n]) + bias[n]
//   Int32       s32  exact + bias[n] (wrapping; MatMulInteger, ConvInteger)
//   Requantize  u8/s8  saturate(roundeven(f64(exact + bias[n]) * f64(wScale[n])
//                     + outputZero)), wScale holding the whole multiplier
//                     (QLinearMatMul, QLinearConv: a_scale * w_scale / y_scale)
//
// Four instruction choices share one packed-B layout and one loop nest:
//
//   Avx512Vnni  vpdpbusd zmm: 16 columns x 4 k per instruction
//   AvxVnni     vpdpbusd ymm (VEX, or EVEX with AVX512-VNNI+VL): 8 x 4
//   Avx2        vpmaddubsw + vpmaddwd(ones) + vpaddd: 8 x 4, with the s16
//               saturation of vpmaddubsw (below)
//   Generic     plain widening multiply-adds in LLVM vectors (any x86-64)
//
// Packed B: columns in panels of nr = 2 * lanes; within a panel, K in
// groups of 4 (zero-padded to kPadded = ceil(K / 4) * 4), each group
// nr columns x 4 consecutive k bytes:
//
//   packed[panel p][group g][column j][4]  = B[4g + q, p*nr + j]
//
// so one vector load is `lanes` columns' 4-k dot-product operands, and the
// 4 bytes A[m, 4g..4g+3] broadcast as one 32-bit lane pair with every one.
// A rows are read with a leading dimension of at least kPadded bytes whose
// padding is zero.
//
// AVX2 saturation: vpmaddubsw adds two u8 x s8 products into a saturating
// s16, which overflows when both are large (255 * -128 * 2 = -65280).
// onnxruntime's MLAS u8s8 AVX2 kernel accepts this saturation rather than
// widening (widening first halves the throughput); its quantizer offers
// reduce_range (7-bit weights) for non-VNNI CPUs. We do the same: with
// weights in [-64, 64] a pair is at most 255 * 64 * 2 = 32640, always exact;
// outside that range the pair sums that pass 32767 / -32768 are clamped
// there (IntegerGemmTest shows both). VNNI's vpdpbusd widens each product to
// s32 first and never saturates; neither does Generic. The weights are
// constants, so the compiler knows which case a GEMM is in: the lowering
// takes the Avx2 kernel only when no pair of its weights can saturate
// (integerGemmAvx2IsExact) and the exact Generic one otherwise, so a model
// never depends on the clamp.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace onnxc {

class TargetSelection;

enum class IntegerGemmIsa { Generic, Avx2, AvxVnni, Avx512Vnni, Amx };

/// The best kernel for the target: AMX-INT8 (with AVX512-VNNI/BW) -> Amx,
/// whose 32-row tiles are TDPBUSD on 16 x 16 s32 tiles (the same packed B:
/// a group row of a panel half is one tile row) and whose other rows run the
/// 512-bit VNNI kernel; AVX512-VNNI (with AVX-512F/BW) -> 512-bit VNNI;
/// AVX-VNNI or AVX512-VNNI+VL -> 256-bit VNNI; AVX2 -> the vpmaddubsw
/// kernel; anything else -> Generic. Every choice computes the same exact
/// integers.
IntegerGemmIsa chooseIntegerGemmIsa(const TargetSelection &target);
const char *integerGemmIsaName(IntegerGemmIsa isa);

/// i32 lanes per vector: 16 for Avx512Vnni and Amx, else 8.
int64_t integerGemmLanes(IntegerGemmIsa isa);
/// Rows of the register tile: 6, or 4 where only 16 vector registers may
/// exist (Avx2 and Generic).
int64_t integerGemmRows(IntegerGemmIsa isa);
/// Weights of magnitude up to this never saturate the Avx2 kernel.
inline constexpr int IntegerGemmAvx2SafeWeight = 64;

/// True when the Avx2 kernel computes these weights exactly: for every
/// column and every pair of rows (2i, 2i + 1) that vpmaddubsw adds, the
/// largest and smallest sum of two u8 x weight products fits in s16. u8
/// weights count as the s8 values packing stores (w - 128). The weights are
/// [k, n] row-major, or [n, k] when `transposed` (as packIntegerGemmWeights).
bool integerGemmAvx2IsExact(const void *weights, bool unsignedWeights, int64_t k, int64_t n,
                            bool transposed = false);

inline int64_t integerGemmPaddedDepth(int64_t k) { return (k + 3) / 4 * 4; }
/// The depth A rows and packed B are padded to for `isa`: whole groups of 4,
/// or whole AMX steps of 64 (a tile row is 64 bytes).
inline int64_t integerGemmPaddedDepth(int64_t k, IntegerGemmIsa isa) {
  return isa == IntegerGemmIsa::Amx ? (k + 63) / 64 * 64 : integerGemmPaddedDepth(k);
}
inline int64_t integerGemmPaddedColumns(int64_t n, int64_t nr) { return (n + nr - 1) / nr * nr; }

/// B and the per-column terms of the store, ready to embed as constants.
struct PackedIntegerWeights {
  /// packed layout above: kPadded * nPadded bytes.
  std::vector<int8_t> packed;
  /// nPadded floats wScale, then nPadded i32 wZero, then nPadded i32 colAdj
  /// (the padding columns are 0): the kernel's `columns` argument.
  std::vector<uint32_t> columns;
  /// Whether some stored (s8-shifted) zero point is not 0: the kernel then
  /// needs the row sums (IntegerGemmSpec::rowSums).
  bool needsRowSums = true;
};

/// Packs [k, n] row-major weights, or [n, k] row-major when `transposed`
/// (Gemm's transB, a Conv's [Co, Ci * taps]). `weights` are s8, or u8 when
/// `unsignedWeights` (then stored as w - 128, with the zero points moved by
/// 128 too, so the kernels see s8 either way). `scales` and `zeroPoints`
/// have 1 (per tensor) or n entries.
PackedIntegerWeights packIntegerGemmWeights(const void *weights, bool unsignedWeights, int64_t k,
                                            int64_t n, const std::vector<float> &scales,
                                            const std::vector<int32_t> &zeroPoints,
                                            IntegerGemmIsa isa, bool transposed = false);

/// What the store writes (file comment).
enum class IntegerGemmStore { Dequantize, Int32, Requantize };

struct IntegerGemmSpec {
  std::string name;
  int64_t k = 0;
  int64_t n = 0;
  IntegerGemmIsa isa = IntegerGemmIsa::Generic;
  /// A bias per column: f32 for Dequantize, s32 otherwise.
  bool bias = false;
  IntegerGemmStore store = IntegerGemmStore::Dequantize;
  /// Requantize: the output's zero point, and its type (s8 when signed, else u8).
  int32_t outputZero = 0;
  bool signedOutput = false;
  /// False when every stored weight zero point is 0
  /// (!PackedIntegerWeights::needsRowSums): the row sums are not read.
  bool rowSums = true;
};

/// C signature of the kernel: rows [rowBegin, rowEnd) of C ([M, N] of the
/// store's type, leading dimension ldc in elements) from A (u8, leading
/// dimension lda >= kPadded, zero in [K, kPadded)), rowSums[m] (indexed by
/// the absolute row; unread unless spec.rowSums), the packed weights and
/// columns of packIntegerGemmWeights, and bias (N floats or s32; null unless
/// spec.bias). aScale is read by Dequantize only.
using IntegerGemmFn = void(const uint8_t *a, int64_t lda, const int8_t *packedB, void *c,
                           int64_t ldc, int64_t rowBegin, int64_t rowEnd, const int32_t *rowSums,
                           int32_t aZeroPoint, float aScale, const uint32_t *columns,
                           const void *bias);

/// Emits `spec.name` into `module` (external linkage); throws onnxc::Error
/// for non-positive K or N.
llvm::Function *emitIntegerGemm(llvm::Module &module, const IntegerGemmSpec &spec);

} // namespace onnxc
