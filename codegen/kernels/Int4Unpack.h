//===- codegen/kernels/Int4Unpack.h - int4 weights dequantized into GEMM panels -===//
//
// A prompt of many rows multiplies every weight by many rows, which the
// f32 GEMM (GemmEmitter.h) does near the FMA peak and the int4 GEMV
// (Int4Gemv.h), which turns each nibble into a float once per four rows,
// at about half of it. So for many rows a step first unpacks the int4
// weights, as packed for the GEMV, into f32 panels in the GEMM's packed-B
// layout (GemmPacking.h), and the GEMM multiplies them: the nibbles are
// turned into floats once per prompt instead of once per four rows.
//
// Each weight is written as DequantizeLinear gives it, (q - zp) * scale
// rounded once to f32, so the product is an f32 MatMul over the
// dequantized weights (docs/KERNEL_ACCURACY.md).
//
// The kernel writes GEMM panels (NR = 2 * lanes columns, two GEMV record
// panels) [panelBegin, panelEnd) of the columns [columnBegin, columnBegin +
// n) of W: a column slab, so that the f32 copy of a wide weight never has
// to be whole at once (the lowering bounds a slab's bytes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>

namespace llvm {
class Function;
class Module;
} // namespace llvm

namespace onnxc {

struct Int4UnpackSpec {
  std::string name;
  /// W's depth, its width (all columns, as packed) and quantization block.
  int64_t k = 0, n = 0, block = 0;
  /// Floats per vector (8 or 16): the GEMV records' panel width, half the GEMM's.
  int64_t lanes = 8;
  /// The GEMM's K block (GemmBlocking::kc), which fixes the panel layout.
  int64_t kc = 0;
  /// The slab: columns [columnBegin, columnBegin + slabColumns), columnBegin
  /// a multiple of 2 * lanes. The output is the slab's packed B
  /// (packedGemmWeightsSize(k, slabColumns, 2 * lanes) floats).
  int64_t columnBegin = 0, slabColumns = 0;
};

/// C signature: writes GEMM panels [panelBegin, panelEnd) of the slab
/// (panel p: slab columns [p * NR, p * NR + NR)) into `out`; columns past N
/// are zeros, as packGemmWeights pads them.
using Int4UnpackFn = void(const uint8_t *packed, float *out, int64_t panelBegin, int64_t panelEnd);

/// The kernel `spec.name`, emitted into `module` on the first request for
/// that name. Throws onnxc::Error for a spec it cannot take.
llvm::Function *emitInt4Unpack(llvm::Module &module, const Int4UnpackSpec &spec);

/// The name a kernel of this spec is shared under (spec.name ignored).
std::string int4UnpackKernelName(const Int4UnpackSpec &spec);

} // namespace onnxc
