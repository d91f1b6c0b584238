//===- tests/unit/codegen/CodegenGemvTest.cpp - JIT'd packed GEMV vs a double sum --===//
//
// emitPackedGemv at both kernel widths over B packed by packGemmWeights with
// gemvBlocking: K covering the unrolled loop and its remainder, N covering
// whole groups of four panels, every tail group size (1 to 4 panels) and a
// partial last panel, with and without the bias; and 2 to 4 rows at once
// (fewer panels per group), their x and y rows apart by more than K and N. The output buffer is
// larger than the padded width and pre-filled with a sentinel, so a store
// past it is caught; the padded columns must be 0.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/kernels/GemvEmitter.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

constexpr float Sentinel = -12345.0f;

std::vector<float> randomFloats(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> values(count);
  for (float &v : values)
    v = dist(rng);
  return values;
}

class CodegenGemv : public testing::TestWithParam<int64_t> {};

std::string lanesName(const testing::TestParamInfo<int64_t> &info) {
  return std::to_string(info.param) + "lanes";
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Widths, CodegenGemv, testing::Values(GemmLanesAvx2, GemmLanesAvx512),
                         lanesName);

TEST_P(CodegenGemv, MatchesADoubleSumAtEveryPanelTail) {
  const int64_t lanes = GetParam(), nr = 2 * lanes;
  struct Case {
    int64_t k, n;
    bool bias;
    int64_t rows = 1, xStride = 0, yStride = 0;
  };
  std::vector<Case> cases;
  for (int64_t k : {1, 3, 4, 7, 64, 130})
    for (int64_t panels : {1, 2, 3, 4, 5, 8, 11})
      for (int64_t extra : {0, -5}) {
        int64_t n = panels * nr + extra;
        if (n > 0)
          cases.push_back({k, n, (k + panels) % 2 == 0});
      }
  cases.push_back({512, 2048, true}); // an LSTM of hidden 512's h·Rᵀ
  cases.push_back({37, 111, true});   // hidden 37, GRU's three gates
  // Several rows at once, with x and y rows apart by more than K and N.
  for (int64_t rows = 2; rows <= kMaxGemvRows; ++rows)
    for (int64_t panels : {1, 2, 3, 5, 7, 13})
      cases.push_back({rows * 5 + 2, panels * nr - rows, rows % 2 == 0, rows, rows * 5 + 9,
                       panels * nr + 3 * nr});

  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("gemv_test");
  std::vector<std::string> names;
  for (const Case &c : cases) {
    names.push_back("gemv_k" + std::to_string(c.k) + "_n" + std::to_string(c.n) + "_m" +
                    std::to_string(c.rows) + (c.bias ? "_bias" : ""));
    emitPackedGemv(module, PackedGemvSpec{names.back(), c.k, c.n, lanes, c.bias, c.rows, c.xStride,
                                          c.yStride});
  }
  jit.compile();

  for (size_t i = 0; i < cases.size(); ++i) {
    const Case &c = cases[i];
    SCOPED_TRACE(names[i]);
    const int64_t ldx = c.xStride ? c.xStride : c.k;
    const int64_t padded = gemmPaddedColumns(c.n, nr), ldy = c.yStride ? c.yStride : padded;
    std::vector<float> x = randomFloats(size_t(c.rows * ldx), unsigned(i) * 3 + 1);
    std::vector<float> b = randomFloats(size_t(c.k * c.n), unsigned(i) * 3 + 2); // [k, n]
    std::vector<float> bias = randomFloats(size_t(c.n), unsigned(i) * 3 + 3);
    std::vector<float> packed =
        packGemmWeights(b.data(), c.k, c.n, false, gemvBlocking(c.k, lanes));
    std::vector<float> y(size_t((c.rows - 1) * ldy + padded + 2 * nr), Sentinel);
    jit.lookup<PackedGemvFn>(names[i])(x.data(), packed.data(), c.bias ? bias.data() : nullptr,
                                       y.data());
    int failures = 0;
    for (int64_t index = 0; index < int64_t(y.size()) && failures < 5; ++index) {
      const int64_t row = index / ldy, col = index % ldy;
      float got = y[size_t(index)];
      if (row >= c.rows || col >= padded) {
        if (got != Sentinel && ++failures)
          ADD_FAILURE() << "wrote outside the rows' padded width at " << index;
        continue;
      }
      if (col >= c.n) {
        if (got != 0.0f && ++failures)
          ADD_FAILURE() << "padded column " << col << " of row " << row << " = " << got;
        continue;
      }
      double sum = c.bias ? bias[size_t(col)] : 0.0, magnitude = std::fabs(sum);
      for (int64_t kk = 0; kk < c.k; ++kk) {
        double product = double(x[size_t(row * ldx + kk)]) * b[size_t(kk * c.n + col)];
        sum += product;
        magnitude += std::fabs(product);
      }
      if (!(std::fabs(got - sum) <= 2e-6 * (1.0 + magnitude)) && ++failures)
        ADD_FAILURE() << "y[" << row << "][" << col << "] = " << got << ", expected " << sum;
    }
  }
}

TEST(CodegenGemvErrors, RefusesEmptyDimsAndUnknownWidths) {
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("gemv_errors");
  EXPECT_THROW(emitPackedGemv(module, PackedGemvSpec{"a", 0, 4, GemmLanesAvx2, false}), Error);
  EXPECT_THROW(emitPackedGemv(module, PackedGemvSpec{"b", 4, 4, 4, false}), Error);
  EXPECT_THROW(emitPackedGemv(module, PackedGemvSpec{"c", 4, 4, GemmLanesAvx2, false, 5}), Error);
  EXPECT_THROW(emitPackedGemv(module, PackedGemvSpec{"d", 4, 4, GemmLanesAvx2, false, 2, 3}),
               Error);
}
