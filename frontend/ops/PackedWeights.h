//===- frontend/ops/PackedWeights.h - Bit-packed weights of contrib ops ----===//
//
// onnxruntime's weight-only quantized ops (MatMulNBits, GatherBlockQuantized
// on uint8 data, MatMulBnb4) store several narrow integers per byte. The
// importers unpack them into one element per byte (IR tensors of u4/u8),
// which the blocked DequantizeLinear then reads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/ImportContext.h"
#include "ir/Tensor.h"

#include <cstdint>
#include <string>

namespace onnxc {

/// Element `index` of a stream of `bits`-wide unsigned integers (bits 2, 4
/// or 8) packed little-endian: element 0 in the lowest bits of byte 0.
inline uint8_t packedElement(const uint8_t *bytes, int64_t index, int bits) {
  int perByte = 8 / bits;
  int shift = int(index % perByte) * bits;
  return uint8_t((bytes[index / perByte] >> shift) & ((1u << bits) - 1));
}

/// The constant behind operand `index` (which must be present and hold
/// data, as an initializer or one only reshaped), else an error naming the
/// node and `what`. Tensors share their bytes, so the copy is cheap.
Tensor requireConstantOperand(OnnxNode &node, const std::vector<Value *> &operands, size_t index,
                              const char *what);

class OpImporterRegistry;
/// GatherBlockQuantized and MatMulBnb4 (MicrosoftGatherQuantizedOps.cpp).
void registerMicrosoftBlockQuantizedImporters(OpImporterRegistry &registry);

} // namespace onnxc
