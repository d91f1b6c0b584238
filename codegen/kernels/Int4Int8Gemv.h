//===- codegen/kernels/Int4Int8Gemv.h - int8 rows times int4 weights, in integers -===//
//
// The kernel of BlockQuantizedMatMul with `activation_int8` (MatMulNBits at
// accuracy_level 4, which onnxruntime-genai's builder writes for CPUs): A's
// rows are quantized to int8 per block of `block` along K (a scale and the
// sum of the codes per block), and each block's dot product with the int4
// weights is an exact int32:
//
//   dot = Σ_k code_k · q_k            (u4 × s8: vpmaddubsw + vpmaddwd, or vpdpbusd)
//   y  += (scale_w · scale_a) · f32(dot − zp · Σ_k code_k)
//
// so a weight costs about one vector instruction per 8, not five as in the
// f32 form (Int4Gemv.h), and a decoder step is bound by reading the weights.
//
// Packed weights, per [8-column panel][block] record:
//   8 f32 scales | 8 u8 zero points | per 8 rows of k, 32 bytes: byte 4c + j
//   holds column c's code at k = 8g + j (low nibble) and 8g + 4 + j (high)
// (codes unsigned: i4 plus 8, zero points likewise; rows past K are 0).
// Quantized rows (quantizeInt4GemvRows), `int4Int8RowBytes` apart:
//   per block an f32 scale and an f32 sum of codes | the int8 codes, each
//   block padded to a multiple of 8 with zeros.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/IntegerGemm.h"
#include "ir/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace onnxc {

/// The most rows one call computes.
inline constexpr int64_t kMaxInt4Int8GemvRows = 4;

struct Int4Int8GemvSpec {
  std::string name;
  int64_t k = 0, n = 0, block = 0;
  /// Rows of A and y, 1 to kMaxInt4Int8GemvRows.
  int64_t rows = 1;
  /// Avx2: vpmaddubsw; AvxVnni, Avx512Vnni, Amx: 256-bit vpdpbusd; Generic:
  /// plain integer IR. All give the same exact integers.
  IntegerGemmIsa isa = IntegerGemmIsa::Avx2;
};

/// Bytes of the packed weights, and of one quantized row.
int64_t int4Int8PackedBytes(int64_t k, int64_t n, int64_t block);
int64_t int4Int8RowBytes(int64_t k, int64_t block);

/// Packs W ([K, N] codes of `type`, i4 or u4, one per byte), its scales
/// ([ceil(K / block), N] f32) and zero points (the same shape, or null: 0).
std::vector<uint8_t> packInt4Int8GemvWeights(const int8_t *codes, DType type, const float *scales,
                                             const int8_t *zeros, int64_t k, int64_t n,
                                             int64_t block);

/// C signature of a kernel: for each row r < spec.rows and each 8-column
/// panel p in [panelBegin, panelEnd): y[r * ldy + 8p .. 8p + 8) (columns
/// below N only) from the quantized row at xq + r * int4Int8RowBytes.
using Int4Int8GemvFn = void(const uint8_t *xq, const uint8_t *packed, float *y, int64_t ldy,
                            int64_t panelBegin, int64_t panelEnd);

/// The kernel `spec.name`, emitted on the first request for the name.
llvm::Function *emitInt4Int8Gemv(llvm::Module &module, const Int4Int8GemvSpec &spec);
std::string int4Int8GemvKernelName(const Int4Int8GemvSpec &spec);

/// C signature of the row quantizer: rows [rowBegin, rowEnd) of x ([rows,
/// K], row stride ldx floats) into xq, as the IR op's evaluator does
/// (m = max|a| per block, inverse = 127 / m or 0, code = saturate(round
/// half even(a · inverse)), scale = m / 127).
using Int4RowQuantizeFn = void(const float *x, int64_t ldx, uint8_t *xq, int64_t rowBegin,
                               int64_t rowEnd);
llvm::Function *emitInt4RowQuantizer(llvm::Module &module, const std::string &name, int64_t k,
                                     int64_t block);

} // namespace onnxc
