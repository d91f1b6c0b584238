//===- codegen/kernels/Bf16GemmPacking.cpp - bf16 GEMM weights, blocking and ISA choice -===//
#include "codegen/kernels/Bf16Gemm.h"

#include "codegen/TargetSelection.h"
#include "ir/DType.h"

#include <algorithm>

namespace onnxc {

Bf16GemmIsa chooseBf16GemmIsa(const TargetSelection &target) {
  const bool vectors = target.hasFeature("avx512bf16") && target.hasFeature("avx512bw");
  if (vectors && target.hasFeature("amx-tile") && target.hasFeature("amx-bf16"))
    return Bf16GemmIsa::Amx;
  if (vectors)
    return Bf16GemmIsa::Avx512Bf16;
  return Bf16GemmIsa::Portable;
}

const char *bf16GemmIsaName(Bf16GemmIsa isa) {
  switch (isa) {
  case Bf16GemmIsa::Portable:
    return "portable";
  case Bf16GemmIsa::Avx512Bf16:
    return "avx512-bf16";
  case Bf16GemmIsa::Amx:
    return "amx-bf16";
  }
  return "?";
}

int64_t bf16GemmBlockRows(int64_t k) {
  constexpr int64_t kBlockBytes = 384 * 1024, kTile = 32, kMaxRows = 256;
  const int64_t rows = kBlockBytes / (bf16GemmPaddedDepth(k) * 2) / kTile * kTile;
  return std::clamp<int64_t>(rows, kTile, kMaxRows);
}

std::vector<uint16_t> packBf16GemmWeights(const float *b, int64_t k, int64_t n, bool transposed) {
  const int64_t kPadded = bf16GemmPaddedDepth(k), nPadded = bf16GemmPaddedColumns(n);
  std::vector<uint16_t> packed(size_t(kPadded * nPadded), 0);
  for (int64_t row = 0; row < k; ++row)
    for (int64_t col = 0; col < n; ++col) {
      const float value = transposed ? b[col * k + row] : b[row * n + col];
      const int64_t panel = col / Bf16GemmPanelColumns, j = col % Bf16GemmPanelColumns;
      const int64_t at =
          ((panel * (kPadded / 2) + row / 2) * Bf16GemmPanelColumns + j) * 2 + row % 2;
      packed[size_t(at)] = floatToBfloat16(value);
    }
  return packed;
}

} // namespace onnxc
