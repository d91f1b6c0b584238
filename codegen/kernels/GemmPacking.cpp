//===- codegen/kernels/GemmPacking.cpp - Blocking and B-panel layout of the GEMM -===//
#include "codegen/kernels/GemmPacking.h"

#include "ir/Error.h"

#include <algorithm>
#include <cassert>

namespace onnxc {

GemmBlocking chooseGemmBlocking(int64_t k, int64_t lanes) {
  constexpr int64_t maxKc = 320, maxSingleBlock = 1536;
  GemmBlocking blocking;
  blocking.lanes = lanes;
  int64_t blocks = k <= maxSingleBlock ? 1 : (k + maxKc - 1) / maxKc;
  int64_t kc = (k + blocks - 1) / blocks;
  blocking.kc = std::max<int64_t>(8, (kc + 7) / 8 * 8);
  blocking.packA = blocks > 1;
  blocking.mc = 16 * blocking.mr();
  return blocking;
}

void packGemmWeights(const float *b, int64_t k, int64_t n, bool transposed,
                     const GemmBlocking &blocking, float *out) {
  if (k <= 0 || n <= 0)
    fail("gemm weights of shape [", k, ", ", n, "] cannot be packed: dims must be positive");
  assert(blocking.kc > 0 && "blocking must be chosen before packing");
  const int64_t nr = blocking.nr();
  const int64_t nPadded = gemmPaddedColumns(n, nr);
  // Element (row, col) of the logical [k, n] B, whatever its storage order.
  auto element = [&](int64_t row, int64_t col) {
    return transposed ? b[col * k + row] : b[row * n + col];
  };
  for (int64_t blockBegin = 0; blockBegin < k; blockBegin += blocking.kc) {
    const int64_t rows = std::min(blocking.kc, k - blockBegin);
    float *block = out + blockBegin * nPadded;
    for (int64_t panelCol = 0; panelCol < nPadded; panelCol += nr) {
      float *panel = block + panelCol * rows;
      const int64_t width = std::min(nr, n - panelCol);
      for (int64_t row = 0; row < rows; ++row) {
        float *dst = panel + row * nr;
        for (int64_t col = 0; col < width; ++col)
          dst[col] = element(blockBegin + row, panelCol + col);
        std::fill(dst + width, dst + nr, 0.0f);
      }
    }
  }
}

std::vector<float> packGemmWeights(const float *b, int64_t k, int64_t n, bool transposed,
                                   const GemmBlocking &blocking) {
  std::vector<float> packed(size_t(packedGemmWeightsSize(k, n, blocking.nr())));
  packGemmWeights(b, k, n, transposed, blocking, packed.data());
  return packed;
}

} // namespace onnxc
