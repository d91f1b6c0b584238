//===- codegen/kernels/Int4Gemv.h - Rows times int4 weights, dequantized in registers -===//
//
// y[r] = x[r] . W for 1 to 4 rows x[r] (a decoder step, a small batch), W a
// [K, N] int4 matrix quantized in blocks of `block` rows per column (a
// scale and a zero point per block and column: MatMulNBits, a blocked
// DequantizeLinear). W stays 4-bit in memory. A decode step reads each
// weight once, so its time is the bytes of W: 0.5 per weight plus
// 5 / block for the scale and zero point, against 4 for f32 weights.
//
// Packed layout (packInt4GemvWeights), for `lanes` L columns per panel:
//
//   [panel][block] records of  L f32 scales | L u8 zero points |
//                              the block's rows of L nibbles (L/2 bytes per k)
//
// With L = 8 a k row's nibbles are one 32-bit word, column j at bits
// 4j..4j+3: one broadcast load puts the word in every lane and a shift per
// lane (vpsrlvd) picks its column's nibble. With L = 16 the rows go in
// octets of 64 bytes (a block's last octet padded to 8 rows): column j's
// 32-bit word holds its 8 rows, row u at bits 4u..4u+3, so byte u / 2 of
// the word holds rows u and u + 1 (u even). A 64-byte load at byte u / 2 of
// the octet puts row u's nibbles in the low 4 bits of every lane, with no
// vector operation at all; row u + 1's are one shift (vpsrld 4) away. The
// loads at bytes 1 to 3 read up to 3 bytes past the octet, so the packed
// matrix ends with kInt4GemvOverreadBytes of padding. Each nibble and zero
// point is stored as an unsigned code (i4 values plus 8), so u - zero is
// q - zp exactly. Padding columns have code, zero point and scale 0; the
// rows past K in the last block are zeros and never read.
//
// Per k and panel the kernel turns the row's lanes into codes, subtracts
// the block's zero points, converts to f32 and takes one FMA per row into
// the block's accumulators. When every column and block shares one zero
// point (MatMulNBits without zero points: 8) and L = 16, the lanes index a
// 16-float table of q - zp instead (vpermps reads only an index's low 4
// bits): half a shift, a permute and an FMA per 16 weights, where the
// first form took a shift, an and-or, a subtraction and an FMA. At the end
// of a block, total = fma(scale, block sum, total). So each weight is
// w = (q - zp) as an exact integer, and the block's partial dot product is
// scaled once: the f32 result differs from DequantizeLinear-then-MatMul
// only by the order of rounding (docs/KERNEL_ACCURACY.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"

#include <cstdint>
#include <string>
#include <vector>

namespace llvm {
class Function;
class IRBuilderBase;
class Module;
class Value;
} // namespace llvm

namespace onnxc {

/// The most rows one kernel call computes.
inline constexpr int64_t kMaxInt4GemvRows = 4;
/// Bytes past its last record that a 16-lane packed matrix holds for the
/// kernels' loads (see the layout above).
inline constexpr int64_t kInt4GemvOverreadBytes = 4;

struct Int4GemvSpec {
  std::string name;
  int64_t k = 0, n = 0, block = 0;
  /// Floats per vector: 8 (AVX2) or 16 (AVX-512); also the panel width.
  int64_t lanes = 8;
  /// Rows of x and y, 1 to kMaxInt4GemvRows.
  int64_t rows = 1;
  /// The zero-point code (0 to 15) every column and block shares, or -1:
  /// each record's own are read. Used at 16 lanes (the table above).
  int uniformZero = -1;
};

/// The code packInt4GemvWeights stores as every zero point of `count` zero
/// points of `type` (`zeros` null: none given), or -1 when they differ.
int int4UniformZeroCode(const int8_t *zeros, DType type, int64_t count);

/// Bytes of one [panel][block] record, and of the whole packed matrix.
int64_t int4GemvRecordBytes(int64_t block, int64_t lanes);
int64_t int4GemvPackedBytes(int64_t k, int64_t n, int64_t block, int64_t lanes);

/// Packs W ([K, N] row-major codes of `type`, i4 or u4, one per byte as IR
/// tensors hold them), its scales ([ceil(K / block), N] f32) and zero points
/// (the same shape, of `type`; empty: zero) into the layout above.
std::vector<uint8_t> packInt4GemvWeights(const int8_t *codes, DType type, const float *scales,
                                         const int8_t *zeros, int64_t k, int64_t n, int64_t block,
                                         int64_t lanes);

/// C signature of a kernel: for each row r < spec.rows and each panel p in
/// [panelBegin, panelEnd), y[r * ldy + p*L .. p*L + L) (columns below N
/// only) = x[r * ldx + 0 .. K) . W[:, p*L .. p*L + L).
using Int4GemvFn = void(const float *x, int64_t ldx, const uint8_t *packed, float *y, int64_t ldy,
                        int64_t panelBegin, int64_t panelEnd);

/// The kernel `spec.name`, emitted into `module` on the first request for
/// that name (a kernel depends only on its spec, so the layers of a model
/// share them). Throws onnxc::Error for dims or a width it cannot take.
llvm::Function *emitInt4Gemv(llvm::Module &module, const Int4GemvSpec &spec);

/// The name a kernel of this spec is shared under (spec.name ignored).
std::string int4GemvKernelName(const Int4GemvSpec &spec);

/// The `lanes` unsigned codes (<lanes x i32>, 0 to 15) of row
/// `octet` + `row` of a record's nibbles at `nibbles`, where `octet` is a
/// multiple of 8 and `row` is below 8 (a constant `row` makes its shift a
/// constant). Shared by the GEMV and the GEMM's panel dequantization
/// (Int4Unpack.h), which read the same records.
llvm::Value *emitInt4RowCodes(llvm::IRBuilderBase &builder, llvm::Value *nibbles,
                              llvm::Value *octet, llvm::Value *row, unsigned lanes);

/// The same lanes before the mask: each lane's nibble in its low 4 bits,
/// other nibbles above it (for an index only they matter to).
llvm::Value *emitInt4RowShifted(llvm::IRBuilderBase &builder, llvm::Value *nibbles,
                                llvm::Value *octet, llvm::Value *row, unsigned lanes);

} // namespace onnxc
