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
// emitInt4Unpack over the same records: column slabs of the matrix, K in
// one or several GEMM K blocks (a partial last one), N with a partial last
// panel and an odd number of record panels; the slab must equal, bit for
// bit, packGemmWeights of the DequantizeLinear weights, and nothing past it
// is written.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/kernels/GemmPacking.h"
#include "codegen/kernels/Int4Gemv.h"
#include "codegen/kernels/Int4Unpack.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
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

class CodegenInt4GemvUnpack : public testing::TestWithParam<int64_t> {};
INSTANTIATE_TEST_SUITE_P(Widths, CodegenInt4GemvUnpack, testing::Values(8, 16), lanesName);

TEST_P(CodegenInt4GemvUnpack, WritesTheDequantizedWeightsInGemmPanels) {
  const int64_t lanes = GetParam(), nr = 2 * lanes;
  struct Slab {
    int64_t k, n, block, kc, columnBegin, width;
    DType type;
    bool zeros;
  };
  const std::vector<Slab> slabs = {
      {64, 40, 32, 256, 0, 40, DType::U4, true},                  // one K block, a partial panel
      {200, 3 * nr + 5, 32, 64, 0, 3 * nr + 5, DType::I4, false}, // K blocks 64,64,64,8
      {200, 3 * nr + 5, 32, 64, nr, nr, DType::I4, true},         // a middle slab
      {200, 3 * nr + 5, 32, 64, 2 * nr, nr + 5, DType::U4, true}, // the last slab
      {96, lanes, 16, 40, 0, lanes, DType::I4, true},             // one record panel: zeros beside
      {130, 2 * nr, 20, 48, 0, 2 * nr, DType::U4, false},         // K blocks across quant blocks
  };
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("int4_unpack_test");
  std::vector<std::string> names;
  for (const Slab &s : slabs) {
    Int4UnpackSpec spec{"", s.k, s.n, s.block, lanes, s.kc, s.columnBegin, s.width};
    spec.name = int4UnpackKernelName(spec);
    names.push_back(spec.name);
    emitInt4Unpack(module, spec);
  }
  jit.compile();

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(0.01f, 0.2f);
  for (size_t i = 0; i < slabs.size(); ++i) {
    const Slab &s = slabs[i];
    SCOPED_TRACE(names[i]);
    const int64_t blocks = (s.k + s.block - 1) / s.block;
    const int low = s.type == DType::I4 ? -8 : 0;
    std::uniform_int_distribution<int> code(low, low + 15);
    std::vector<int8_t> w(size_t(s.k * s.n)), zero(size_t(blocks * s.n));
    std::vector<float> scale(size_t(blocks * s.n));
    for (int8_t &v : w)
      v = int8_t(code(rng));
    for (int8_t &v : zero)
      v = int8_t(code(rng));
    for (float &v : scale)
      v = uniform(rng);
    std::vector<uint8_t> packed = packInt4GemvWeights(
        w.data(), s.type, scale.data(), s.zeros ? zero.data() : nullptr, s.k, s.n, s.block, lanes);
    // The slab's weights as DequantizeLinear gives them, packed as the GEMM reads them.
    std::vector<float> slab(size_t(s.k * s.width));
    for (int64_t kk = 0; kk < s.k; ++kk)
      for (int64_t j = 0; j < s.width; ++j) {
        const int64_t column = s.columnBegin + j, p = (kk / s.block) * s.n + column;
        const int q = w[size_t(kk * s.n + column)] - (s.zeros ? zero[size_t(p)] : 0);
        slab[size_t(kk * s.width + j)] = float(q) * scale[size_t(p)];
      }
    GemmBlocking blocking;
    blocking.kc = s.kc;
    blocking.lanes = lanes;
    const std::vector<float> want = packGemmWeights(slab.data(), s.k, s.width, false, blocking);
    std::vector<float> got(want.size() + 64, Sentinel);
    const int64_t panels = (s.width + nr - 1) / nr;
    jit.lookup<Int4UnpackFn>(names[i])(packed.data(), got.data(), 0, panels);
    int failures = 0;
    for (size_t index = 0; index < got.size() && failures < 5; ++index) {
      const float expected = index < want.size() ? want[index] : Sentinel;
      if (std::memcmp(&got[index], &expected, 4) != 0 && ++failures)
        ADD_FAILURE() << "packed[" << index << "] = " << got[index] << ", expected " << expected;
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
  // An unpacking slab must be whole GEMM panels within N.
  EXPECT_THROW(emitInt4Unpack(module, Int4UnpackSpec{"e", 32, 64, 32, 8, 256, 8, 16}), Error);
  EXPECT_THROW(emitInt4Unpack(module, Int4UnpackSpec{"f", 32, 64, 32, 8, 256, 48, 32}), Error);
  EXPECT_THROW(packInt4GemvWeights(codes.data(), DType::I8, scales.data(), nullptr, 32, 2, 32, 8),
               Error);
}
