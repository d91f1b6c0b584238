//===- tests/unit/codegen/Bf16GemmTest.cpp - bf16 GEMM kernels vs the stated bound -===//
//
// Every kernel variant the host runs (AMX, AVX512-BF16, portable) is emitted,
// JIT-compiled and held to docs/KERNEL_ACCURACY.md's bf16 bounds:
//   - against the exact (f64) product of the bf16-rounded operands, the f32
//     summation bound gamma(k + 2) * sum |a' b'|: this catches any wrong
//     element, pairing or layout, since rounding the operands is excluded;
//   - against the exact product of the f32 operands, the bound the user is
//     given: (2 u + u^2 + gamma(k + 2) (1 + u)^2) * sum |a b|, u = 2^-8.
// Shapes cover every tail (rows short of a vector or AMX tile, columns short
// of a panel, K not a multiple of 32) and row/column sub-ranges; C sits in a
// buffer of sentinels so a store outside the range is caught. The portable
// kernel and VDPBF16PS agree bit for bit on normal numbers.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "ir/DType.h"
#include "runtime/CpuFeatures.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

constexpr float Sentinel = -12345.0f;

/// Why the host cannot run `isa` ("" when it can).
std::string missingFor(Bf16GemmIsa isa) {
  static const TargetSelection host = TargetSelection::select();
  if (isa == Bf16GemmIsa::Portable)
    return "";
  std::string features = "avx512bf16,avx512bw";
  if (isa == Bf16GemmIsa::Amx)
    features += ",amx-tile,amx-bf16";
  for (const char *feature : {"avx512bf16", "amx-tile", "amx-bf16"})
    if (features.find(feature) != std::string::npos && !host.hasFeature(feature))
      return std::string("the host CPU lacks ") + feature;
  return runtime::checkCpuFeatures(features.c_str());
}

double gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return double(n) * u / (1 - double(n) * u);
}

struct Problem {
  int64_t m, k, n;
  GemmEpilogue epilogue;
  std::vector<float> a, b, bias, residual;
  int64_t lda, ldc;

  Problem(int64_t m, int64_t k, int64_t n, unsigned seed, double logRange = 0)
      : m(m), k(k), n(n), lda(k + 3), ldc(n + 5) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<float> unit(-1, 1), exponent(float(-logRange), float(logRange));
    auto value = [&] { return unit(rng) * std::exp2(exponent(rng)); };
    a.assign(size_t(m * lda), 0);
    for (int64_t r = 0; r < m; ++r)
      for (int64_t c = 0; c < k; ++c)
        a[size_t(r * lda + c)] = value();
    b.resize(size_t(k * n));
    for (float &v : b)
      v = value();
    bias.resize(size_t(n));
    for (float &v : bias)
      v = unit(rng);
    residual.resize(size_t(m * n));
    for (float &v : residual)
      v = unit(rng);
  }
  float aAt(int64_t r, int64_t c, bool rounded) const {
    float v = a[size_t(r * lda + c)];
    return rounded ? bfloat16ToFloat(floatToBfloat16(v)) : v;
  }
  float bAt(int64_t r, int64_t c, bool rounded) const {
    float v = b[size_t(r * n + c)];
    return rounded ? bfloat16ToFloat(floatToBfloat16(v)) : v;
  }
};

struct Ranges {
  int64_t rowBegin, rowEnd, colBegin, colEnd;
};

std::vector<float> run(KernelJit &jit, Bf16GemmIsa isa, const Problem &p, const Ranges &r) {
  static int counter = 0;
  Bf16GemmSpec spec{"bf16_gemm_" + std::to_string(counter++), p.k, p.n, p.epilogue, isa};
  emitBf16Gemm(jit.newModule(spec.name), spec);
  jit.compile();
  auto *kernel = jit.lookup<Bf16GemmFn>(spec.name);
  std::vector<uint16_t> packed = packBf16GemmWeights(p.b.data(), p.k, p.n, false);
  std::vector<float> c(size_t(p.m * p.ldc), Sentinel);
  kernel(p.a.data(), p.lda, packed.data(), c.data(), p.ldc, r.rowBegin, r.rowEnd, p.bias.data(),
         p.residual.data(), p.n, r.colBegin, r.colEnd);
  return c;
}

/// Checks `c` against both bounds; the epilogue is bias + ReLU + residual.
void expectWithinBounds(const Problem &p, const Ranges &range, const std::vector<float> &c,
                        const std::string &what) {
  const double ub = std::ldexp(1.0, -8), g = gamma(p.k + 2);
  int reported = 0;
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t j = 0; j < p.ldc; ++j) {
      const float got = c[size_t(r * p.ldc + j)];
      const bool inside =
          r >= range.rowBegin && r < range.rowEnd && j >= range.colBegin && j < range.colEnd;
      if (!inside) {
        ASSERT_EQ(got, Sentinel) << what << ": store outside the range at " << r << "," << j;
        continue;
      }
      double exactRounded = 0, absRounded = 0, exact = 0, absExact = 0;
      for (int64_t q = 0; q < p.k; ++q) {
        double x = p.aAt(r, q, true) * double(p.bAt(q, j, true));
        exactRounded += x;
        absRounded += std::abs(x);
        double y = double(p.aAt(r, q, false)) * p.bAt(q, j, false);
        exact += y;
        absExact += std::abs(y);
      }
      // The epilogue: f32 adds after the sum (each within half an ulp).
      auto finish = [&](double sum) {
        double v = sum + (p.epilogue.bias ? p.bias[size_t(j)] : 0.0);
        if (p.epilogue.activation == GemmActivation::Relu)
          v = std::max(v, 0.0);
        return v + (p.epilogue.residual ? p.residual[size_t(r * p.n + j)] : 0.0);
      };
      const double epilogueSlack =
          std::ldexp(1.0, -23) * (std::abs(finish(exact)) + 2 + std::abs(exact));
      const double sumBound = g * absRounded + epilogueSlack;
      const double userBound =
          (2 * ub + ub * ub + g * (1 + ub) * (1 + ub)) * absExact + epilogueSlack;
      const double errorRounded = std::abs(got - finish(exactRounded));
      const double errorExact = std::abs(got - finish(exact));
      if ((errorRounded > sumBound || errorExact > userBound) && reported++ < 5)
        ADD_FAILURE() << what << ": C[" << r << "," << j << "] = " << got
                      << ", exact on bf16 operands " << finish(exactRounded) << " (error "
                      << errorRounded << " > " << sumBound << "?), exact " << finish(exact)
                      << " (error " << errorExact << " > " << userBound << "?)";
    }
}

class Bf16GemmTest : public ::testing::TestWithParam<Bf16GemmIsa> {
protected:
  void SetUp() override {
    std::string missing = missingFor(GetParam());
    if (!missing.empty())
      GTEST_SKIP() << bf16GemmIsaName(GetParam()) << " kernel not run: " << missing;
  }
};

TEST_P(Bf16GemmTest, EveryTailWithinTheBound) {
  KernelJit jit = KernelJit::forHost();
  struct Shape {
    int64_t m, k, n;
  };
  // Rows: 1 (a decoder step), tails of 1-11 after vector tiles, whole and
  // short AMX tiles, more than one A block (K = 2000: 32-row blocks).
  for (Shape s : {Shape{1, 7, 5}, Shape{3, 32, 32}, Shape{13, 100, 70}, Shape{32, 64, 33},
                  Shape{45, 33, 64}, Shape{77, 200, 96}, Shape{70, 2000, 40}}) {
    Problem p(s.m, s.k, s.n, unsigned(s.m * 131 + s.k));
    std::string what = std::string(bf16GemmIsaName(GetParam())) + " " + std::to_string(s.m) + "x" +
                       std::to_string(s.k) + "x" + std::to_string(s.n);
    Ranges all{0, s.m, 0, s.n};
    expectWithinBounds(p, all, run(jit, GetParam(), p, all), what);
  }
}

TEST_P(Bf16GemmTest, EpilogueAndSubRanges) {
  KernelJit jit = KernelJit::forHost();
  // Bias + ReLU + residual goes through the tile scratch; a bias alone starts
  // whole AMX tiles from it and stores them straight into C.
  for (GemmEpilogue epilogue : {GemmEpilogue{true, GemmActivation::Relu, true},
                                GemmEpilogue{true, GemmActivation::None, false}}) {
    Problem p(83, 96, 100, 7);
    p.epilogue = epilogue;
    // Rows from the middle (a thread's share), columns from panel 1 to N.
    Ranges range{17, 81, 32, 100};
    expectWithinBounds(p, range, run(jit, GetParam(), p, range), "epilogue, sub-range");
  }
}

TEST_P(Bf16GemmTest, LargeDynamicRangeAndCancellation) {
  KernelJit jit = KernelJit::forHost();
  // Values over 2^-40..2^40 (products stay normal in f32), then pairs that
  // cancel: the bound is relative to sum |a b|, not to the result.
  Problem p(40, 130, 48, 11, 40);
  for (int64_t r = 0; r < p.m; ++r)
    for (int64_t c = 0; c + 1 < p.k; c += 2)
      p.a[size_t(r * p.lda + c + 1)] = -p.a[size_t(r * p.lda + c)];
  for (int64_t c = 0; c + 1 < p.k; c += 2)
    for (int64_t j = 0; j < p.n; ++j)
      p.b[size_t((c + 1) * p.n + j)] = p.b[size_t(c * p.n + j)] * (1 + 1.0f / 512);
  Ranges all{0, p.m, 0, p.n};
  expectWithinBounds(p, all, run(jit, GetParam(), p, all), "cancellation");
}

INSTANTIATE_TEST_SUITE_P(Isas, Bf16GemmTest,
                         ::testing::Values(Bf16GemmIsa::Portable, Bf16GemmIsa::Avx512Bf16,
                                           Bf16GemmIsa::Amx),
                         [](const auto &info) {
                           std::string name = bf16GemmIsaName(info.param);
                           for (char &ch : name)
                             if (ch == '-')
                               ch = '_';
                           return name;
                         });

TEST(Bf16GemmAgreement, PortableMatchesVdpbf16psBitForBit) {
  std::string missing = missingFor(Bf16GemmIsa::Avx512Bf16);
  if (!missing.empty())
    GTEST_SKIP() << "avx512-bf16 kernel not run: " << missing;
  KernelJit jit = KernelJit::forHost();
  Problem p(29, 300, 70, 5, 6);
  Ranges all{0, p.m, 0, p.n};
  std::vector<float> portable = run(jit, Bf16GemmIsa::Portable, p, all);
  std::vector<float> vectors = run(jit, Bf16GemmIsa::Avx512Bf16, p, all);
  for (size_t i = 0; i < portable.size(); ++i)
    ASSERT_EQ(portable[i], vectors[i]) << "element " << i;
}

TEST(Bf16GemmPacking, PairsOfKPerColumnInPanelsOf32) {
  // B = [k, n] with B[r, c] = r * 100 + c (exact in bf16 for small values).
  const int64_t k = 3, n = 33;
  std::vector<float> b(size_t(k * n));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      b[size_t(r * n + c)] = float(r * 2 + c % 4);
  std::vector<uint16_t> packed = packBf16GemmWeights(b.data(), k, n, false);
  ASSERT_EQ(int64_t(packed.size()), bf16GemmPackedSize(k, n));
  ASSERT_EQ(int64_t(packed.size()), 32 * 64);
  auto at = [&](int64_t panel, int64_t pair, int64_t col, int64_t e) {
    return bfloat16ToFloat(packed[size_t(((panel * 16 + pair) * 32 + col) * 2 + e)]);
  };
  EXPECT_EQ(at(0, 0, 5, 0), b[size_t(0 * n + 5)]);
  EXPECT_EQ(at(0, 0, 5, 1), b[size_t(1 * n + 5)]);
  EXPECT_EQ(at(0, 1, 5, 0), b[size_t(2 * n + 5)]);
  EXPECT_EQ(at(0, 1, 5, 1), 0.0f); // k padding
  EXPECT_EQ(at(1, 0, 0, 1), b[size_t(1 * n + 32)]);
  EXPECT_EQ(at(1, 0, 1, 0), 0.0f); // column padding
  // The transposed form packs the same values.
  std::vector<float> bt(size_t(k * n));
  for (int64_t r = 0; r < k; ++r)
    for (int64_t c = 0; c < n; ++c)
      bt[size_t(c * k + r)] = b[size_t(r * n + c)];
  EXPECT_EQ(packBf16GemmWeights(bt.data(), k, n, true), packed);
}

} // namespace
