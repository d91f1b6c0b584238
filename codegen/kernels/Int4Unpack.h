//===- codegen/kernels/Int4Unpack.h - int4 weights dequantized into GEMM panels -===//
//
// A prompt of many rows multiplies every weight by many rows, which the
// f32 GEMM (GemmEmitter.h) does near the FMA peak and the int4 GEMV
// (Int4Gemv.h), which turns each nibble into a float once per four rows,
// at about half of it. So for many rows the GEMM reads the int4 weights
// itself (PackedGemmSpec::int4Block): before the tiles of a row block meet
// a (K block, panel), the code emitted here dequantizes that panel's rows
// from the GEMV's records into a stack buffer in the GEMM's panel layout
// ([k][NR floats], NR = two record panels), where the tiles read it from
// L1. A nibble is turned into a float once per row block (up to 575 rows
// with AVX-512, int4GemmBlocking) instead of once per four rows, and the
// f32 weights never go through memory.
//
// Each weight is written as DequantizeLinear gives it, (q - zp) * scale
// rounded once to f32, so the product is an f32 MatMul over the
// dequantized weights (docs/KERNEL_ACCURACY.md).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>

namespace llvm {
class IRBuilderBase;
class Value;
} // namespace llvm

namespace onnxc {

/// The records' matrix: W's depth, its width (all columns, as packed), its
/// quantization block and the records' panel width (8 or 16 floats).
struct Int4PanelLayout {
  int64_t k = 0, n = 0, block = 0, lanes = 8;
};

/// Emits, at `builder`'s insertion point, rows [kBegin, kBegin + depth) of
/// GEMM panel `panel` (columns [panel * 2 * lanes, (panel + 1) * 2 * lanes)
/// of W) from the records at `packed` into `out`, [depth][2 * lanes] floats;
/// columns past N are zeros. kBegin is a multiple of the block and
/// kBegin + depth one too, or K. Throws onnxc::Error for a layout it cannot
/// take.
void emitInt4PanelRows(llvm::IRBuilderBase &builder, const Int4PanelLayout &layout,
                       llvm::Value *packed, llvm::Value *panel, llvm::Value *kBegin,
                       llvm::Value *depth, llvm::Value *out);

} // namespace onnxc
