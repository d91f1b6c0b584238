//===- tests/unit/codegen/CodegenInt4GemvTest.cpp - JIT'd int4 GEMV vs dequantize-then-sum --===//
//
// emitInt4Gemv at both widths over weights packed by packInt4GemvWeights:
// i4 and u4 codes over their whole range, zero points given or absent,
// block sizes 16 to 256 (and one that K is not a multiple of), K with a
// partial last block and N with a partial last panel, 1 to 4 rows with x
// and y rows apart by more than K and N, and a panel range that is not the
// whole matrix. The reference dequantizes as DequantizeLinear does and sums
// in double; y is pre-filled with a sentinel, so a store outside the panel
// range or past N is caught.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/kernels/Int4Gemv.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

constexpr float Sentinel = -12345.0f;

struct Case {
  int64_t k, n, block, rows;
  DType type;
  bool zeros;
  int64_t panelBegin = 0, panelEnd = -1; // -1: every panel
};

class CodegenInt4Gemv : public testing::TestWithParam<int64_t> {};

std::string lanesName(const testing::TestParamInfo<int64_t> &info) {
  return std::to_string(info.param) + "lanes";
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int64_t block : {16, 32, 128, 256})
    for (int64_t k : {block, 2 * block + 5})
      for (int64_t n : {21, 64})
        out.push_back({k, n, block, 1 + (k + n) % kMaxInt4GemvRows,
                       (k + n) % 2 ? DType::I4 : DType::U4, block != 32});
  for (int64_t rows = 1; rows <= kMaxInt4GemvRows; ++rows)
    for (DType type : {DType::I4, DType::U4})
      for (bool zeros : {false, true})
        out.push_back({100, 77, 20, rows, type, zeros});
  out.push_back({2048, 96, 32, 1, DType::U4, true, 3, 9}); // a chunk of panels
  out.push_back({64, 40, 32, 2, DType::I4, false, 2, 3});  // the last, partial panel alone
  return out;
}

} // namespace

INSTANTIATE_TEST_SUITE_P(Widths, CodegenInt4Gemv, testing::Values(8, 16), lanesName);

TEST_P(CodegenInt4Gemv, MatchesDequantizeThenSum) {
  const int64_t lanes = GetParam();
  const std::vector<Case> all = cases();
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("int4_gemv_test");
  std::vector<std::string> names;
  for (const Case &c : all) {
    Int4GemvSpec spec{"", c.k, c.n, c.block, lanes, c.rows};
    spec.name = int4GemvKernelName(spec);
    names.push_back(spec.name);
    emitInt4Gemv(module, spec);
  }
  jit.compile();

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  for (size_t i = 0; i < all.size(); ++i) {
    const Case &c = all[i];
    SCOPED_TRACE(names[i] + (c.type == DType::I4 ? " i4" : " u4") + (c.zeros ? " zp" : ""));
    const int64_t blocks = (c.k + c.block - 1) / c.block, panels = (c.n + lanes - 1) / lanes;
    const int low = c.type == DType::I4 ? -8 : 0;
    std::uniform_int_distribution<int> code(low, low + 15);
    std::vector<int8_t> w(size_t(c.k * c.n)), zero(size_t(blocks * c.n));
    std::vector<float> scale(size_t(blocks * c.n));
    for (int8_t &v : w)
      v = int8_t(code(rng));
    for (int8_t &v : zero)
      v = int8_t(code(rng));
    for (float &v : scale)
      v = 0.01f + 0.1f * std::fabs(uniform(rng));
    const int64_t ldx = c.k + 3 * (c.rows - 1), ldy = c.n + 5 * (c.rows - 1);
    std::vector<float> x(size_t(c.rows * ldx));
    for (float &v : x)
      v = uniform(rng);
    std::vector<uint8_t> packed = packInt4GemvWeights(
        w.data(), c.type, scale.data(), c.zeros ? zero.data() : nullptr, c.k, c.n, c.block, lanes);
    ASSERT_EQ(int64_t(packed.size()), int4GemvPackedBytes(c.k, c.n, c.block, lanes));
    std::vector<float> y(size_t(c.rows * ldy + 16), Sentinel);
    const int64_t panelEnd = c.panelEnd < 0 ? panels : std::min(c.panelEnd, panels);
    jit.lookup<Int4GemvFn>(names[i])(x.data(), ldx, packed.data(), y.data(), ldy, c.panelBegin,
                                     panelEnd);
    int failures = 0;
    for (int64_t index = 0; index < int64_t(y.size()) && failures < 5; ++index) {
      const int64_t row = index / ldy, col = index % ldy;
      const bool written =
          row < c.rows && col < c.n && col >= c.panelBegin * lanes && col < panelEnd * lanes;
      const float got = y[size_t(index)];
      if (!written) {
        if (got != Sentinel && ++failures)
          ADD_FAILURE() << "wrote outside the rows' panels at " << index;
        continue;
      }
      double sum = 0, magnitude = 0;
      for (int64_t kk = 0; kk < c.k; ++kk) {
        const int64_t p = (kk / c.block) * c.n + col;
        const double weight =
            double(float((w[size_t(kk * c.n + col)] - (c.zeros ? zero[size_t(p)] : 0)) *
                         double(scale[size_t(p)])));
        const double product = double(x[size_t(row * ldx + kk)]) * weight;
        sum += product;
        magnitude += std::fabs(product);
      }
      if (!(std::fabs(got - sum) <= 4e-7 * (8.0 + std::sqrt(double(c.k))) * magnitude + 1e-30) &&
          ++failures)
        ADD_FAILURE() << "y[" << row << "][" << col << "] = " << got << ", expected " << sum;
    }
  }
}

TEST(CodegenInt4GemvErrors, RefusesShapesItCannotTake) {
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("int4_gemv_errors");
  EXPECT_THROW(emitInt4Gemv(module, Int4GemvSpec{"a", 0, 8, 32, 8, 1}), Error);
  EXPECT_THROW(emitInt4Gemv(module, Int4GemvSpec{"b", 32, 8, 1, 8, 1}), Error);
  EXPECT_THROW(emitInt4Gemv(module, Int4GemvSpec{"c", 32, 8, 32, 4, 1}), Error);
  EXPECT_THROW(emitInt4Gemv(module, Int4GemvSpec{"d", 32, 8, 32, 8, 5}), Error);
  std::vector<int8_t> codes(64, 0);
  std::vector<float> scales(2, 1.0f);
  EXPECT_THROW(packInt4GemvWeights(codes.data(), DType::I8, scales.data(), nullptr, 32, 2, 32, 8),
               Error);
}
