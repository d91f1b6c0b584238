//===- codegen/kernels/Int4Int8GemvPacking.cpp - int4 weights for the int8 GEMV ---===//
#include "codegen/kernels/Int4Int8Gemv.h"

#include "ir/Error.h"

#include <cstring>

namespace onnxc {
namespace {

constexpr int64_t kPanel = 8;

int64_t paddedBlock(int64_t block) { return (block + 7) / 8 * 8; }

int64_t recordBytes(int64_t block) { return kPanel * 4 + kPanel + paddedBlock(block) * 4; }

} // namespace

int64_t int4Int8PackedBytes(int64_t k, int64_t n, int64_t block) {
  return (n + kPanel - 1) / kPanel * ((k + block - 1) / block) * recordBytes(block);
}

int64_t int4Int8RowBytes(int64_t k, int64_t block) {
  const int64_t blocks = (k + block - 1) / block;
  return blocks * 8 + blocks * paddedBlock(block);
}

std::vector<uint8_t> packInt4Int8GemvWeights(const int8_t *codes, DType type, const float *scales,
                                             const int8_t *zeros, int64_t k, int64_t n,
                                             int64_t block) {
  if (!isFourBit(type) || k <= 0 || n <= 0 || block < 2)
    fail("int4 x int8 gemv packing: K=", k, " N=", n, " block ", block, " of type ",
         dtypeName(type), " cannot be packed");
  const int offset = type == DType::I4 ? 8 : 0;
  const int64_t panels = (n + kPanel - 1) / kPanel, blocks = (k + block - 1) / block;
  const int64_t record = recordBytes(block);
  std::vector<uint8_t> packed(size_t(panels * blocks * record), 0);
  for (int64_t panel = 0; panel < panels; ++panel)
    for (int64_t b = 0; b < blocks; ++b) {
      uint8_t *out = packed.data() + (panel * blocks + b) * record;
      uint8_t *zeroOut = out + kPanel * 4, *groups = zeroOut + kPanel;
      for (int64_t c = 0; c < kPanel; ++c) {
        const int64_t column = panel * kPanel + c;
        if (column >= n)
          continue; // padding: scale, zero point and codes 0
        const int64_t p = b * n + column;
        std::memcpy(out + c * 4, &scales[p], 4);
        zeroOut[c] = uint8_t((zeros ? zeros[p] : 0) + offset);
        for (int64_t row = b * block; row < std::min(k, (b + 1) * block); ++row) {
          const int64_t local = row - b * block, group = local / 8, within = local % 8;
          const uint8_t code = uint8_t(codes[row * n + column] + offset) & 0xF;
          uint8_t &byte = groups[group * 32 + c * 4 + within % 4];
          byte |= uint8_t(within < 4 ? code : code << 4);
        }
      }
    }
  return packed;
}

} // namespace onnxc
