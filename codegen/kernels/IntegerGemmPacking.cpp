//===- codegen/kernels/IntegerGemmPacking.cpp - Integer GEMM weights and ISA choice -===//
#include "codegen/kernels/IntegerGemm.h"

#include "codegen/TargetSelection.h"
#include "ir/Error.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace onnxc {

IntegerGemmIsa chooseIntegerGemmIsa(const TargetSelection &target) {
  if (target.hasFeature("avx512vnni") && target.hasFeature("avx512bw"))
    return target.hasFeature("amx-int8") && target.hasFeature("amx-tile")
               ? IntegerGemmIsa::Amx
               : IntegerGemmIsa::Avx512Vnni;
  if (target.hasFeature("avxvnni") ||
      (target.hasFeature("avx512vnni") && target.hasFeature("avx512vl")))
    return IntegerGemmIsa::AvxVnni;
  if (target.hasFeature("avx2"))
    return IntegerGemmIsa::Avx2;
  return IntegerGemmIsa::Generic;
}

const char *integerGemmIsaName(IntegerGemmIsa isa) {
  switch (isa) {
  case IntegerGemmIsa::Generic:
    return "generic";
  case IntegerGemmIsa::Avx2:
    return "avx2";
  case IntegerGemmIsa::AvxVnni:
    return "avx-vnni";
  case IntegerGemmIsa::Avx512Vnni:
    return "avx512-vnni";
  case IntegerGemmIsa::Amx:
    return "amx-int8";
  }
  return "?";
}

int64_t integerGemmLanes(IntegerGemmIsa isa) {
  return isa == IntegerGemmIsa::Avx512Vnni || isa == IntegerGemmIsa::Amx ? 16 : 8;
}

int64_t integerGemmRows(IntegerGemmIsa isa) {
  return isa == IntegerGemmIsa::Avx2 || isa == IntegerGemmIsa::Generic ? 4 : 6;
}

bool integerGemmAvx2IsExact(const void *weights, bool unsignedWeights, int64_t k, int64_t n,
                            bool transposed) {
  auto weight = [&](int64_t row, int64_t col) -> int32_t {
    int64_t i = transposed ? col * k + row : row * n + col;
    return unsignedWeights ? int32_t(static_cast<const uint8_t *>(weights)[i]) - 128
                           : int32_t(static_cast<const int8_t *>(weights)[i]);
  };
  for (int64_t col = 0; col < n; ++col)
    for (int64_t row = 0; row < k; row += 2) {
      int32_t first = weight(row, col), second = row + 1 < k ? weight(row + 1, col) : 0;
      // A's bytes are u8 in [0, 255]: the extremes take 255 where the
      // weight has the sign of the extreme and 0 elsewhere.
      int32_t largest = 255 * (std::max(first, 0) + std::max(second, 0));
      int32_t smallest = 255 * (std::min(first, 0) + std::min(second, 0));
      if (largest > INT16_MAX || smallest < INT16_MIN)
        return false;
    }
  return true;
}

PackedIntegerWeights packIntegerGemmWeights(const void *weights, bool unsignedWeights, int64_t k,
                                            int64_t n, const std::vector<float> &scales,
                                            const std::vector<int32_t> &zeroPoints,
                                            IntegerGemmIsa isa, bool transposed) {
  if (k <= 0 || n <= 0)
    fail("integer gemm weights of shape [", k, ", ", n,
         "] cannot be packed: dims must be positive");
  auto perColumn = [n](size_t size, const char *what) {
    if (size != 1 && size != size_t(n))
      fail("integer gemm weights: ", what, " has ", size, " entries, expected 1 or ", n);
    return size != 1;
  };
  const bool scalePerColumn = perColumn(scales.size(), "the scale");
  const bool zeroPerColumn = perColumn(zeroPoints.size(), "the zero point");
  const int64_t nr = 2 * integerGemmLanes(isa);
  const int64_t kPadded = integerGemmPaddedDepth(k, isa), nPadded = integerGemmPaddedColumns(n, nr);
  // u8 weights become s8 by subtracting 128 from weights and zero points
  // alike, which leaves every (w - zero) unchanged.
  const int32_t shift = unsignedWeights ? 128 : 0;
  auto weight = [&](int64_t row, int64_t col) -> int32_t {
    int64_t i = transposed ? col * k + row : row * n + col;
    return unsignedWeights ? int32_t(static_cast<const uint8_t *>(weights)[i]) - shift
                           : int32_t(static_cast<const int8_t *>(weights)[i]);
  };

  PackedIntegerWeights out;
  out.packed.assign(size_t(kPadded * nPadded), 0);
  for (int64_t panel = 0; panel < nPadded; panel += nr) {
    int8_t *base = out.packed.data() + panel * kPadded;
    for (int64_t col = panel; col < std::min(n, panel + nr); ++col)
      for (int64_t row = 0; row < k; ++row)
        base[(row / 4) * nr * 4 + (col - panel) * 4 + row % 4] = int8_t(weight(row, col));
  }

  out.columns.assign(size_t(3 * nPadded), 0);
  out.needsRowSums = false;
  for (int64_t col = 0; col < n; ++col) {
    float scale = scales[scalePerColumn ? size_t(col) : 0];
    int32_t zero = zeroPoints[zeroPerColumn ? size_t(col) : 0] - shift;
    int64_t sum = 0;
    for (int64_t row = 0; row < k; ++row)
      sum += weight(row, col);
    // Wrapping like the kernel's s32 arithmetic (uint32 has no UB).
    uint32_t adjust = uint32_t(int64_t(k) * zero) - uint32_t(sum);
    std::memcpy(&out.columns[size_t(col)], &scale, sizeof(float));
    out.columns[size_t(nPadded + col)] = uint32_t(zero);
    out.needsRowSums |= zero != 0;
    out.columns[size_t(2 * nPadded + col)] = adjust;
  }
  return out;
}

} // namespace onnxc
