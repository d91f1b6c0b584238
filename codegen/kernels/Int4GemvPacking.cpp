//===- codegen/kernels/Int4GemvPacking.cpp - int4 weights into the GEMV's records ---===//
#include "codegen/kernels/Int4Gemv.h"

#include "ir/Error.h"

#include <cstring>

namespace onnxc {

int64_t int4GemvRecordBytes(int64_t block, int64_t lanes) {
  const int64_t rows = lanes == 16 ? (block + 7) / 8 * 8 : block; // whole octets at 16 lanes
  return lanes * 4 + lanes + rows * lanes / 2;
}

int64_t int4GemvPackedBytes(int64_t k, int64_t n, int64_t block, int64_t lanes) {
  const int64_t panels = (n + lanes - 1) / lanes, blocks = (k + block - 1) / block;
  return panels * blocks * int4GemvRecordBytes(block, lanes) +
         (lanes == 16 ? kInt4GemvOverreadBytes : 0);
}

int int4UniformZeroCode(const int8_t *zeros, DType type, int64_t count) {
  const int offset = type == DType::I4 ? 8 : 0;
  if (!zeros)
    return offset;
  for (int64_t i = 1; i < count; ++i)
    if (zeros[i] != zeros[0])
      return -1;
  return count > 0 ? (zeros[0] + offset) & 0xF : offset;
}

std::vector<uint8_t> packInt4GemvWeights(const int8_t *codes, DType type, const float *scales,
                                         const int8_t *zeros, int64_t k, int64_t n, int64_t block,
                                         int64_t lanes) {
  if (!isFourBit(type) || k <= 0 || n <= 0 || block < 2 || (lanes != 8 && lanes != 16))
    fail("int4 gemv packing: K=", k, " N=", n, " block ", block, " lanes ", lanes, " of type ",
         dtypeName(type), " cannot be packed");
  // Unsigned codes: i4 values move up by 8, on the weights and the zero points alike.
  const int offset = type == DType::I4 ? 8 : 0;
  const int64_t panels = (n + lanes - 1) / lanes, blocks = (k + block - 1) / block;
  const int64_t record = int4GemvRecordBytes(block, lanes);
  std::vector<uint8_t> packed(size_t(int4GemvPackedBytes(k, n, block, lanes)), 0);
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t *out = packed.data() + (panel * blocks + b) * record;
      uint8_t *zeroOut = out + lanes * 4, *nibbles = zeroOut + lanes;
      for (int64_t j = 0; j < lanes; ++j) {
        const int64_t column = panel * lanes + j;
        if (column >= n)
          continue; // padding: scale, zero point and codes 0
        const int64_t p = b * n + column;
        std::memcpy(out + j * 4, &scales[p], 4);
        zeroOut[j] = uint8_t((zeros ? zeros[p] : 0) + offset);
        for (int64_t row = b * block; row < std::min(k, (b + 1) * block); ++row) {
          const uint8_t code = uint8_t(codes[row * n + column] + offset) & 0xF;
          // The nibble's place (Int4Gemv.h): 8 lanes, nibble j of the row's
          // word; 16 lanes, byte (r % 8) / 2 of column j's word in the octet.
          const int64_t r = row - b * block;
          const int64_t nibble = lanes == 8 ? r * 8 + j : (r / 8) * 128 + j * 8 + r % 8;
          nibbles[nibble / 2] |= uint8_t(nibble % 2 == 0 ? code : code << 4);
        }
      }
    }
  return packed;
}

} // namespace onnxc
