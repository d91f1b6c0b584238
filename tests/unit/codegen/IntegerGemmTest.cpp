//===- tests/unit/codegen/IntegerGemmTest.cpp - u8 x s8 GEMM kernels vs a reference ===//
//
// Every kernel variant (AMX-INT8, 512-bit VNNI, AVX-VNNI, AVX2, generic) is emitted,
// JIT-compiled for the host (which must have the instructions; the tests of
// a variant the host lacks are skipped) and compared bit for bit with an
// integer reference of IntegerGemm.h's formula. C sits in a larger buffer
// filled with a sentinel, so stores outside [rowBegin, rowEnd) x [0, N) are
// caught. The AVX2 kernel is exact for weights in [-64, 64]; outside, it
// matches a model of vpmaddubsw's s16 saturation, and differs from the exact
// sum where a pair saturates.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/IntegerGemm.h"
#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "ir/Error.h"
#include "runtime/CpuFeatures.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

constexpr float Sentinel = -12345.0f;
const IntegerGemmIsa AllIsas[] = {IntegerGemmIsa::Generic, IntegerGemmIsa::Avx2,
                                  IntegerGemmIsa::AvxVnni, IntegerGemmIsa::Avx512Vnni,
                                  IntegerGemmIsa::Amx};

bool hostRuns(IntegerGemmIsa isa) {
  static const TargetSelection host = TargetSelection::select();
  switch (isa) {
  case IntegerGemmIsa::Generic:
    return true;
  case IntegerGemmIsa::Avx2:
    return host.hasFeature("avx2");
  case IntegerGemmIsa::AvxVnni:
    return host.hasFeature("avxvnni") ||
           (host.hasFeature("avx512vnni") && host.hasFeature("avx512vl"));
  case IntegerGemmIsa::Avx512Vnni:
    return host.hasFeature("avx512vnni") && host.hasFeature("avx512bw");
  case IntegerGemmIsa::Amx:
    // The CPU, and the operating system's grant of the tile state.
    return runtime::checkCpuFeatures("amx-tile,amx-int8,avx512vnni,avx512bw").empty();
  }
  return false;
}

int32_t saturate16(int32_t v) { return std::clamp(v, -32768, 32767); }

/// One problem: u8 A [m, lda] (zero-padded past K), s8 or u8 weights [k, n].
struct Problem {
  int64_t m, k, n, lda, ldc;
  bool unsignedWeights = false;
  std::vector<uint8_t> a, weights; // weights: the raw bytes (s8 or u8)
  std::vector<float> scales, bias;
  std::vector<int32_t> zeros;
  int32_t aZero = 0;
  float aScale = 0.0173f;

  /// Weights uniform in [lo, hi] (as s8, or u8 when lo >= 0 and `u8`).
  Problem(int64_t m, int64_t k, int64_t n, int lo, int hi, bool u8, bool perColumn, unsigned seed)
      : m(m), k(k), n(n), lda(integerGemmPaddedDepth(k, IntegerGemmIsa::Amx) + 4), ldc(n + 3),
        unsignedWeights(u8) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int> byte(0, 255), weight(lo, hi), zero(lo / 2, hi / 2);
    a.assign(size_t(m * lda), 0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c)
        a[size_t(r * lda + c)] = uint8_t(byte(rng));
    weights.resize(size_t(k * n));
    for (uint8_t &w : weights)
      w = uint8_t(weight(rng));
    std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
    for (int64_t j = 0; j < (perColumn ? n : 1); ++j) {
      scales.push_back(0.01f + 0.005f * unit(rng));
      zeros.push_back(zero(rng));
    }
    for (int64_t j = 0; j < n; ++j)
      bias.push_back(unit(rng));
    aZero = byte(rng);
  }

  int32_t w(int64_t row, int64_t col) const {
    uint8_t raw = weights[size_t(row * n + col)];
    return unsignedWeights ? int32_t(raw) : int32_t(int8_t(raw));
  }
  std::vector<int32_t> rowSums() const {
    std::vector<int32_t> sums(static_cast<size_t>(m));
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c)
        sums[size_t(r)] += a[size_t(r * lda + c)];
    return sums;
  }

  /// The dequantized C the kernels compute. `saturating` models the Avx2
  /// kernel: pairs (4g, 4g+1) and (4g+2, 4g+3) of the s8-shifted weights are
  /// summed in a saturating s16.
  float expected(int64_t r, int64_t col, bool withBias, bool saturating) const {
    const int32_t shift = unsignedWeights ? 128 : 0;
    const int32_t wZero = zeros[zeros.size() == 1 ? 0 : size_t(col)];
    int64_t raw = 0; // sum of A * (W - shift), the kernel's accumulator
    for (int64_t g = 0; g < k; g += 2) {
      int32_t pair = 0;
      for (int64_t c = g; c < std::min(k, g + 2); ++c)
        pair += int32_t(a[size_t(r * lda + c)]) * (w(c, col) - shift);
      raw += saturating ? saturate16(pair) : pair;
    }
    int64_t rowSum = 0, colSum = 0;
    for (int64_t c = 0; c < k; ++c) {
      rowSum += a[size_t(r * lda + c)];
      colSum += w(c, col) - shift;
    }
    // sum (a - aZero)(w - wZero) with the raw product substituted.
    int64_t exact =
        raw - (wZero - shift) * rowSum - aZero * colSum + k * int64_t(aZero) * (wZero - shift);
    float scale = aScale * scales[scales.size() == 1 ? 0 : size_t(col)];
    float value = float(int32_t(exact)) * scale;
    return withBias ? value + bias[size_t(col)] : value;
  }
};

struct Outcome {
  int64_t mismatches = 0, outside = 0;
};

Outcome run(IntegerGemmIsa isa, const Problem &p, int64_t rowBegin, bool withBias,
            bool saturatingModel) {
  KernelJit jit = KernelJit::forHost();
  std::string name = "igemm";
  emitIntegerGemm(jit.newModule(name), IntegerGemmSpec{name, p.k, p.n, isa, withBias});
  jit.compile();
  auto *kernel = jit.lookup<IntegerGemmFn>(name);
  PackedIntegerWeights packed =
      packIntegerGemmWeights(p.weights.data(), p.unsignedWeights, p.k, p.n, p.scales, p.zeros, isa);
  std::vector<int32_t> sums = p.rowSums();
  std::vector<float> c(size_t(p.m * p.ldc + 8), Sentinel);
  kernel(p.a.data(), p.lda, packed.packed.data(), c.data(), p.ldc, rowBegin, p.m, sums.data(),
         p.aZero, p.aScale, packed.columns.data(), withBias ? p.bias.data() : nullptr);
  Outcome outcome;
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t j = 0; j < p.ldc; ++j) {
      float got = c[size_t(r * p.ldc + j)];
      if (r < rowBegin || j >= p.n) {
        outcome.outside += got != Sentinel;
        continue;
      }
      float want = p.expected(r, j, withBias, saturatingModel);
      // Bit for bit (a NaN or -0 pattern counts).
      outcome.mismatches += std::bit_cast<uint32_t>(got) != std::bit_cast<uint32_t>(want);
    }
  return outcome;
}

struct Shape {
  int64_t m, k, n;
};
// Tiles and panels whole and partial at both widths; K = 1 (one padded
// group), K not a multiple of 4; M = 1; 32-row AMX tiles with and without
// vector rows after them, K a multiple of AMX's 64 and not.
const Shape Shapes[] = {{1, 1, 1},    {1, 37, 45},   {6, 64, 32},   {13, 130, 70},
                        {25, 21, 17}, {45, 130, 70}, {64, 128, 33}, {70, 7, 40}};

TEST(IntegerGemmTest, EveryKernelIsExactOnSafeWeights) {
  for (IntegerGemmIsa isa : AllIsas) {
    if (!hostRuns(isa))
      continue;
    for (const Shape &s : Shapes)
      for (bool perColumn : {false, true}) {
        SCOPED_TRACE(std::string(integerGemmIsaName(isa)) + " " + std::to_string(s.m) + "x" +
                     std::to_string(s.k) + "x" + std::to_string(s.n) +
                     (perColumn ? " per column" : " per tensor"));
        Problem p(s.m, s.k, s.n, -IntegerGemmAvx2SafeWeight, IntegerGemmAvx2SafeWeight, false,
                  perColumn, unsigned(s.m * 7 + s.k));
        Outcome o = run(isa, p, 0, /*withBias=*/perColumn, false);
        EXPECT_EQ(o.mismatches, 0);
        EXPECT_EQ(o.outside, 0);
      }
  }
}

TEST(IntegerGemmTest, RowRangeStoresOnlyItsRows) {
  for (IntegerGemmIsa isa : AllIsas) {
    if (!hostRuns(isa))
      continue;
    SCOPED_TRACE(integerGemmIsaName(isa));
    Problem p(17, 40, 50, -64, 64, false, true, 5);
    Outcome o = run(isa, p, 5, true, false);
    EXPECT_EQ(o.mismatches, 0);
    EXPECT_EQ(o.outside, 0);
  }
}

TEST(IntegerGemmTest, VnniAndGenericAreExactOverTheWholeRange) {
  for (IntegerGemmIsa isa : AllIsas) {
    if (isa == IntegerGemmIsa::Avx2 || !hostRuns(isa))
      continue;
    for (bool u8 : {false, true}) {
      SCOPED_TRACE(std::string(integerGemmIsaName(isa)) + (u8 ? " u8" : " s8"));
      Problem p(13, 130, 70, u8 ? 0 : -128, u8 ? 255 : 127, u8, true, 11);
      Outcome o = run(isa, p, 0, true, false);
      EXPECT_EQ(o.mismatches, 0);
      EXPECT_EQ(o.outside, 0);
    }
  }
}

/// The s32 and requantizing stores against the integer formula, with the
/// weights given transposed ([n, k], as a Conv's) and, when their zero points
/// are all 0, without row sums (the kernel gets a null rowSums pointer).
void checkIntegerStores(IntegerGemmIsa isa, bool zeroPoints) {
  // 37 rows: one AMX tile and 5 vector rows on the Amx kernel.
  Problem p(37, 70, 45, -64, 64, false, true, 17);
  if (!zeroPoints)
    std::fill(p.zeros.begin(), p.zeros.end(), 0);
  std::vector<uint8_t> transposed(p.weights.size());
  for (int64_t row = 0; row < p.k; ++row)
    for (int64_t col = 0; col < p.n; ++col)
      transposed[size_t(col * p.k + row)] = p.weights[size_t(row * p.n + col)];
  std::vector<int32_t> bias;
  for (int64_t j = 0; j < p.n; ++j)
    bias.push_back(int32_t(j * 977) - 20000);
  // Multipliers that send the sums across the whole output range and past it.
  std::vector<float> multipliers;
  for (int64_t j = 0; j < p.n; ++j)
    multipliers.push_back(0.0004f * float(j + 1));
  std::vector<int32_t> sums = p.rowSums();
  for (IntegerGemmStore store : {IntegerGemmStore::Int32, IntegerGemmStore::Requantize})
    for (bool isSigned : {false, true}) {
      if (store == IntegerGemmStore::Int32 && isSigned)
        continue;
      SCOPED_TRACE(std::string(integerGemmIsaName(isa)) +
                   (store == IntegerGemmStore::Int32 ? " s32"
                    : isSigned                       ? " s8"
                                                     : " u8") +
                   (zeroPoints ? " with zero points" : " symmetric"));
      PackedIntegerWeights packed = packIntegerGemmWeights(
          transposed.data(), false, p.k, p.n, multipliers, p.zeros, isa, /*transposed=*/true);
      ASSERT_EQ(packed.needsRowSums, zeroPoints);
      IntegerGemmSpec spec{
          "istore", p.k, p.n, isa, true, store, isSigned ? -3 : 131, isSigned, packed.needsRowSums};
      KernelJit jit = KernelJit::forHost();
      emitIntegerGemm(jit.newModule(spec.name), spec);
      jit.compile();
      auto *kernel = jit.lookup<IntegerGemmFn>(spec.name);
      const size_t width = store == IntegerGemmStore::Int32 ? 4 : 1;
      std::vector<uint8_t> c(size_t(p.m * p.ldc) * width + 64, 0xA5);
      kernel(p.a.data(), p.lda, packed.packed.data(), c.data(), p.ldc, 0, p.m,
             zeroPoints ? sums.data() : nullptr, p.aZero, 99.0f, packed.columns.data(),
             bias.data());
      int64_t mismatches = 0, outside = 0;
      for (int64_t r = 0; r < p.m; ++r)
        for (int64_t j = 0; j < p.ldc; ++j) {
          const uint8_t *at = c.data() + size_t(r * p.ldc + j) * width;
          if (j >= p.n) {
            for (size_t b = 0; b < width; ++b)
              outside += at[b] != 0xA5;
            continue;
          }
          int64_t exact = bias[size_t(j)];
          for (int64_t q = 0; q < p.k; ++q)
            exact +=
                (int64_t(p.a[size_t(r * p.lda + q)]) - p.aZero) * (p.w(q, j) - p.zeros[size_t(j)]);
          if (store == IntegerGemmStore::Int32) {
            int32_t got;
            std::memcpy(&got, at, sizeof got);
            mismatches += got != int32_t(exact);
            continue;
          }
          double value = std::nearbyint(double(int32_t(exact)) * double(multipliers[size_t(j)]) +
                                        double(spec.outputZero));
          int want = int(std::clamp(value, isSigned ? -128.0 : 0.0, isSigned ? 127.0 : 255.0));
          int got = isSigned ? int(int8_t(*at)) : int(*at);
          mismatches += got != want;
        }
      EXPECT_EQ(mismatches, 0);
      EXPECT_EQ(outside, 0);
    }
}

TEST(IntegerGemmTest, IntegerAndRequantizingStoresAreExact) {
  for (IntegerGemmIsa isa : AllIsas) {
    if (!hostRuns(isa))
      continue;
    for (bool zeroPoints : {true, false})
      checkIntegerStores(isa, zeroPoints);
  }
}

TEST(IntegerGemmTest, Avx2SaturatesOutsideTheSafeRange) {
  if (!hostRuns(IntegerGemmIsa::Avx2))
    GTEST_SKIP() << "the host has no AVX2";
  // Full-range weights: the kernel equals the saturating model exactly...
  Problem p(13, 130, 70, -128, 127, false, true, 11);
  Outcome model = run(IntegerGemmIsa::Avx2, p, 0, true, /*saturatingModel=*/true);
  EXPECT_EQ(model.mismatches, 0);
  // ...and a pair of 255 * -128 products (-65280, clamped to -32768) makes
  // it differ from the exact sum.
  Problem extreme(6, 8, 16, -128, -128, false, false, 3);
  std::fill(extreme.a.begin(), extreme.a.end(), uint8_t(255));
  Outcome exact = run(IntegerGemmIsa::Avx2, extreme, 0, false, /*saturatingModel=*/false);
  EXPECT_EQ(exact.mismatches, 6 * 16);
  EXPECT_EQ(run(IntegerGemmIsa::Avx2, extreme, 0, false, true).mismatches, 0);
}

TEST(IntegerGemmTest, Avx2ExactnessIsDecidedPerWeightPair) {
  // Two rows, one column: the pair vpmaddubsw adds. u8 activations reach 255.
  auto exact = [](std::vector<int8_t> w) {
    return integerGemmAvx2IsExact(w.data(), false, int64_t(w.size()), 1);
  };
  EXPECT_TRUE(exact({64, 64}));         // 255 * 128 = 32640
  EXPECT_FALSE(exact({65, 64}));        // 32895 > 32767
  EXPECT_TRUE(exact({-128, 0}));        // -32640
  EXPECT_TRUE(exact({127, -128}));      // opposite signs never add up
  EXPECT_FALSE(exact({-128, -1}));      // -32895 < -32768
  EXPECT_TRUE(exact({100, 0, 0, 100})); // different pairs
  EXPECT_FALSE(exact({0, 0, 100, 100}));
  EXPECT_TRUE(exact({127})); // odd K: the padding is zero
  // u8 weights are packed as w - 128.
  std::vector<uint8_t> u = {255, 129}; // 127 + 1
  EXPECT_TRUE(integerGemmAvx2IsExact(u.data(), true, 2, 1));
  u = {255, 130}; // 127 + 2
  EXPECT_FALSE(integerGemmAvx2IsExact(u.data(), true, 2, 1));
  // Columns are checked separately: [k=2, n=2] row-major.
  std::vector<int8_t> w = {100, 1, 100, 1};
  EXPECT_FALSE(integerGemmAvx2IsExact(w.data(), false, 2, 2));
  w = {100, 100, 1, 1};
  EXPECT_TRUE(integerGemmAvx2IsExact(w.data(), false, 2, 2));
  // Transposed ([n, k]): the same bytes pair along rows of the buffer.
  EXPECT_FALSE(integerGemmAvx2IsExact(w.data(), false, 2, 2, /*transposed=*/true));
  w = {100, 1, 100, 1};
  EXPECT_TRUE(integerGemmAvx2IsExact(w.data(), false, 2, 2, /*transposed=*/true));
}

TEST(IntegerGemmTest, PackingInterleavesGroupsOfFourAndSumsColumns) {
  // k = 5 (two groups, the second padded), n = 3, one 16-column panel.
  const int64_t k = 5, n = 3;
  std::vector<int8_t> w(size_t(k * n));
  for (int64_t i = 0; i < k * n; ++i)
    w[size_t(i)] = int8_t(i - 7);
  PackedIntegerWeights packed =
      packIntegerGemmWeights(w.data(), false, k, n, {0.5f}, {2}, IntegerGemmIsa::Avx2);
  const int64_t nr = 16;
  ASSERT_EQ(packed.packed.size(), size_t(8 * nr));
  for (int64_t row = 0; row < 8; ++row)
    for (int64_t col = 0; col < nr; ++col) {
      int8_t want = row < k && col < n ? w[size_t(row * n + col)] : 0;
      EXPECT_EQ(packed.packed[size_t((row / 4) * nr * 4 + col * 4 + row % 4)], want)
          << row << "," << col;
    }
  ASSERT_EQ(packed.columns.size(), size_t(3 * nr));
  for (int64_t col = 0; col < n; ++col) {
    int32_t sum = 0;
    for (int64_t row = 0; row < k; ++row)
      sum += w[size_t(row * n + col)];
    float scale;
    std::memcpy(&scale, &packed.columns[size_t(col)], sizeof scale);
    EXPECT_EQ(scale, 0.5f);
    EXPECT_EQ(int32_t(packed.columns[size_t(nr + col)]), 2);
    EXPECT_EQ(int32_t(packed.columns[size_t(2 * nr + col)]), k * 2 - sum);
  }
  EXPECT_EQ(packed.columns[size_t(n)], 0u); // padding columns
}

TEST(IntegerGemmTest, KernelFollowsTheTarget) {
  auto isaOf = [](const char *cpu, const char *attributes) {
    return chooseIntegerGemmIsa(TargetSelection::select({cpu, attributes}));
  };
  EXPECT_EQ(isaOf("znver4", ""), IntegerGemmIsa::Avx512Vnni);
  EXPECT_EQ(isaOf("znver4", "-avx512vnni"), IntegerGemmIsa::Avx2);
  EXPECT_EQ(isaOf("alderlake", ""), IntegerGemmIsa::AvxVnni);
  EXPECT_EQ(isaOf("alderlake", "-avxvnni"), IntegerGemmIsa::Avx2);
  EXPECT_EQ(isaOf("x86-64-v3", ""), IntegerGemmIsa::Avx2);
  EXPECT_EQ(isaOf("x86-64", ""), IntegerGemmIsa::Generic);
  EXPECT_EQ(isaOf("x86-64-v3", "+avxvnni"), IntegerGemmIsa::AvxVnni);
}

TEST(IntegerGemmTest, RefusesEmptyDims) {
  KernelJit jit = KernelJit::forHost();
  EXPECT_THROW(emitIntegerGemm(jit.newModule("m"), IntegerGemmSpec{"g", 0, 4}), Error);
  int8_t w = 0;
  EXPECT_THROW(packIntegerGemmWeights(&w, false, 1, 0, {1.0f}, {0}, IntegerGemmIsa::Avx2), Error);
  EXPECT_THROW(packIntegerGemmWeights(&w, false, 1, 1, {1.0f, 2.0f}, {0}, IntegerGemmIsa::Avx2),
               Error);
}

} // namespace
