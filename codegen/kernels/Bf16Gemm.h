//===- codegen/kernels/Bf16Gemm.h - bf16 x bf16 -> f32 GEMM over packed weights -===//
//
// The GEMM of `--precision=bf16` (docs/KERNEL_ACCURACY.md, "bf16"): A (f32
// activations) is rounded to bf16 as it is packed, B (constant weights) was
// rounded and packed at compile time, the products are summed in f32, and
// the store applies the f32 GEMM's epilogue (bias, activation, residual) in
// f32. Three instruction choices share one packed-B layout and one loop nest:
//
//   Amx         TDPBF16PS on 16 x 16 f32 tiles: C in 2 x 2 tiles (32 rows x
//               32 columns), per 32 k two A tiles, two B tiles, four
//               products; a last group of 3-31 rows takes a whole tile over
//               zero rows, 1-2 rows (a decoder's step) take Avx512Bf16; a
//               tile whose epilogue is at most a bias starts from it and is
//               stored straight into C
//   Avx512Bf16  VDPBF16PS zmm: 16 columns x one k pair per instruction, a
//               tile of up to 12 rows x 32 columns in 24 accumulators
//   Portable    the same tile with the bf16 values widened to f32 and
//               multiplied and added in f32, pair by pair in VDPBF16PS's
//               order (odd k, then even): any x86-64, the same sums
//
// A product of two bf16 values is exact in f32 (8 + 8 significant bits), so
// a fused and an unfused multiply-add round the same way: the Portable and
// the Avx512Bf16 kernels agree bit for bit on normal numbers (VDPBF16PS
// flushes denormal inputs and results to zero). TDPBF16PS sums its 32
// products in a temporary before adding them to C, so its sums round
// differently, within the same bound.
//
// Packed B (VNNI order, what a TDPBF16PS B tile and a VDPBF16PS operand
// read): K zero-padded to kPadded = ceil(K / 32) * 32 and N to whole panels
// of 32 columns; per panel, per pair of k, the 32 columns' (k even, k odd)
// pairs:
//
//   packed[panel p][pair q][column j][2] = bf16(B[2q + e, 32p + j]), e = 0, 1
//
// A row of a panel (one pair) is 128 bytes: its first 64 are one B tile row
// for columns 0-15, the next 64 for 16-31, and each is one zmm operand.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/GemmEmitter.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace onnxc {

class TargetSelection;

enum class Bf16GemmIsa { Portable, Avx512Bf16, Amx };

/// The best kernel the target allows: AMX-BF16 (with AVX512-BF16 for the
/// short tiles) -> Amx; AVX512-BF16 -> Avx512Bf16; else Portable.
Bf16GemmIsa chooseBf16GemmIsa(const TargetSelection &target);
const char *bf16GemmIsaName(Bf16GemmIsa isa);

/// Columns per packed panel, and k per AMX step (the padding of K).
inline constexpr int64_t Bf16GemmPanelColumns = 32;
inline constexpr int64_t Bf16GemmDepthStep = 32;

inline int64_t bf16GemmPaddedDepth(int64_t k) {
  return (k + Bf16GemmDepthStep - 1) / Bf16GemmDepthStep * Bf16GemmDepthStep;
}
inline int64_t bf16GemmPaddedColumns(int64_t n) {
  return (n + Bf16GemmPanelColumns - 1) / Bf16GemmPanelColumns * Bf16GemmPanelColumns;
}
/// bf16 values in the packed form of a [k, n] B operand.
inline int64_t bf16GemmPackedSize(int64_t k, int64_t n) {
  return bf16GemmPaddedDepth(k) * bf16GemmPaddedColumns(n);
}

/// Packs B ([k, n] row-major, or [n, k] when `transposed`) into the layout
/// above, each value rounded to nearest even (floatToBfloat16, ir/DType.h).
std::vector<uint16_t> packBf16GemmWeights(const float *b, int64_t k, int64_t n, bool transposed);

/// A bf16 GEMM over weights packed by packBf16GemmWeights: K and N are
/// compile-time constants, M the run-time row range.
struct Bf16GemmSpec {
  std::string name;
  int64_t k = 0;
  int64_t n = 0;
  GemmEpilogue epilogue;
  Bf16GemmIsa isa = Bf16GemmIsa::Portable;
};

/// Rows of A converted per block (a multiple of 32, at most 256): the block
/// (rows * kPadded * 2 bytes, on the kernel's stack) stays within 384 KiB of
/// L2 while B's panels stream past it; each panel is then read once per
/// block (at K = 3072, 64 rows rather than 32 read it half as often: +25%).
int64_t bf16GemmBlockRows(int64_t k);

/// C signature: rows [rowBegin, rowEnd) and columns [colBegin, colEnd) of
/// C[M, N] = epilogue(A[M, K] * B), as PackedGemmFn (colBegin a multiple of
/// 32, colEnd one too or N) with the bf16 packed B.
using Bf16GemmFn = void(const float *a, int64_t lda, const uint16_t *packedB, float *c, int64_t ldc,
                        int64_t rowBegin, int64_t rowEnd, const float *bias, const float *residual,
                        int64_t ldResidual, int64_t colBegin, int64_t colEnd);

/// Emits `spec.name` into `module` (external linkage); throws onnxc::Error
/// for non-positive K or N. An Amx or Avx512Bf16 kernel needs a module whose
/// target has those features.
llvm::Function *emitBf16Gemm(llvm::Module &module, const Bf16GemmSpec &spec);

} // namespace onnxc
