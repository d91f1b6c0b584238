//===- tests/unit/codegen/CodegenInt4Int8GemvTest.cpp - JIT'd int8 x int4 GEMV vs integers --===//
//
// emitInt4RowQuantizer and emitInt4Int8Gemv against a C++ model of the same
// arithmetic: the quantized rows byte for byte (codes, scales, code sums,
// zero padding; a NaN, an all-zero block and a partial last block), and the
// products against the exact integer dot products scaled in double, on i4
// and u4 weights over their whole range, zero points given or absent,
// blocks of 16 to 128 and partial ones, 1 to 4 rows, partial last panels and
// a sub-range of panels, with the vpmaddubsw and the portable integer
// kernels (and vpdpbusd where the host has AVX-VNNI or AVX512-VNNI).
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/Int4Int8Gemv.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

constexpr float Sentinel = -12345.0f;

/// The quantized row as the evaluator computes it: codes and per-block scale.
void quantizeRow(const float *x, int64_t k, int64_t block, std::vector<int8_t> &codes,
                 std::vector<float> &scales) {
  for (int64_t begin = 0; begin < k; begin += block) {
    const int64_t end = std::min(k, begin + block);
    float absMax = 0;
    for (int64_t i = begin; i < end; ++i)
      absMax = std::max(absMax, std::fabs(x[i]));
    const float inverse = absMax == 0.0f ? 0.0f : 127.0f / absMax;
    scales.push_back(absMax / 127.0f);
    for (int64_t i = begin; i < end; ++i) {
      const float scaled = x[i] * inverse;
      codes.push_back(
          int8_t(std::isnan(scaled) ? 0.0f : std::clamp(std::nearbyint(scaled), -128.0f, 127.0f)));
    }
  }
}

struct Case {
  int64_t k, n, block, rows;
  DType type;
  bool zeros;
  int64_t panelBegin = 0, panelEnd = -1;
};

} // namespace

TEST(CodegenInt4Int8Gemv, QuantizerWritesTheEvaluatorsCodes) {
  const int64_t k = 70, block = 32, rows = 2, rowBytes = int4Int8RowBytes(k, block);
  std::vector<float> x(size_t(rows * k));
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  for (float &v : x)
    v = normal(rng);
  for (int64_t i = 32; i < 64; ++i)
    x[size_t(i)] = 0.0f; // an all-zero block
  x[size_t(k + 5)] = NAN;
  KernelJit jit = KernelJit::forHost();
  emitInt4RowQuantizer(jit.newModule("quantize"), "quantize", k, block);
  jit.compile();
  std::vector<uint8_t> out(size_t(rows * rowBytes), 0xAB);
  jit.lookup<Int4RowQuantizeFn>("quantize")(x.data(), k, out.data(), 0, rows);
  for (int64_t r = 0; r < rows; ++r) {
    std::vector<int8_t> codes;
    std::vector<float> scales;
    quantizeRow(x.data() + r * k, k, block, codes, scales);
    const uint8_t *row = out.data() + r * rowBytes;
    for (int64_t b = 0; b < 3; ++b) {
      float scale, sum;
      std::memcpy(&scale, row + b * 8, 4);
      std::memcpy(&sum, row + b * 8 + 4, 4);
      int expectedSum = 0;
      for (int64_t i = b * block; i < std::min(k, (b + 1) * block); ++i)
        expectedSum += codes[size_t(i)];
      EXPECT_EQ(scale, scales[size_t(b)]) << "row " << r << " block " << b;
      EXPECT_EQ(sum, float(expectedSum)) << "row " << r << " block " << b;
      for (int64_t i = 0; i < block; ++i) {
        const int64_t at = b * block + i;
        const int8_t want = at < k ? codes[size_t(at)] : 0;
        EXPECT_EQ(int8_t(row[3 * 8 + b * block + i]), want) << "row " << r << " k " << at;
      }
    }
  }
}

TEST(CodegenInt4Int8Gemv, MatchesExactIntegerDotProducts) {
  static const TargetSelection host = TargetSelection::select();
  std::vector<IntegerGemmIsa> isas = {IntegerGemmIsa::Generic};
  if (host.hasFeature("avx2"))
    isas.push_back(IntegerGemmIsa::Avx2);
  if (host.hasFeature("avxvnni") || (host.hasFeature("avx512vnni") && host.hasFeature("avx512vl")))
    isas.push_back(IntegerGemmIsa::AvxVnni);
  std::vector<Case> cases;
  for (int64_t block : {16, 32, 128})
    for (int64_t k : {block, 2 * block + 8})
      cases.push_back(
          {k, block == 32 ? 21 : 40, block, 1 + k % 4, k % 3 ? DType::U4 : DType::I4, block != 16});
  for (int64_t rows = 1; rows <= kMaxInt4Int8GemvRows; ++rows)
    cases.push_back({96, 27, 32, rows, rows % 2 ? DType::I4 : DType::U4, rows > 2});
  cases.push_back({256, 64, 64, 1, DType::U4, true, 3, 6});
  // Several groups side by side, a stride of the range apart, and the panels after them: all of
  // N (11 panels: two groups of four, three after), and a range starting inside a group.
  cases.push_back({64, 88, 32, 1, DType::U4, true});
  cases.push_back({64, 88, 32, 2, DType::I4, true});
  cases.push_back({64, 120, 32, 1, DType::I4, true, 3, 14});

  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("int4_int8_gemv");
  for (IntegerGemmIsa isa : isas)
    for (const Case &c : cases) {
      Int4Int8GemvSpec spec{"", c.k, c.n, c.block, c.rows, isa};
      spec.name = int4Int8GemvKernelName(spec);
      emitInt4Int8Gemv(module, spec);
      emitInt4RowQuantizer(module,
                           "quantize_k" + std::to_string(c.k) + "_b" + std::to_string(c.block), c.k,
                           c.block);
    }
  jit.compile();

  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (IntegerGemmIsa isa : isas)
    for (const Case &c : cases) {
      Int4Int8GemvSpec spec{"", c.k, c.n, c.block, c.rows, isa};
      const std::string name = int4Int8GemvKernelName(spec);
      SCOPED_TRACE(name + (c.zeros ? " zp" : ""));
      const int64_t blocks = (c.k + c.block - 1) / c.block, panels = (c.n + 7) / 8;
      const int low = c.type == DType::I4 ? -8 : 0;
      std::uniform_int_distribution<int> code(low, low + 15);
      std::vector<int8_t> w(size_t(c.k * c.n)), zero(size_t(blocks * c.n));
      std::vector<float> scale(size_t(blocks * c.n)), x(size_t(c.rows * c.k));
      for (int8_t &v : w)
        v = int8_t(code(rng));
      for (int8_t &v : zero)
        v = int8_t(code(rng));
      for (float &v : scale)
        v = 0.02f + 0.01f * std::fabs(normal(rng));
      for (float &v : x)
        v = normal(rng);
      std::vector<uint8_t> packed = packInt4Int8GemvWeights(
          w.data(), c.type, scale.data(), c.zeros ? zero.data() : nullptr, c.k, c.n, c.block);
      ASSERT_EQ(int64_t(packed.size()), int4Int8PackedBytes(c.k, c.n, c.block));
      const int64_t rowBytes = int4Int8RowBytes(c.k, c.block);
      std::vector<uint8_t> xq(size_t(c.rows * rowBytes));
      jit.lookup<Int4RowQuantizeFn>("quantize_k" + std::to_string(c.k) + "_b" +
                                    std::to_string(c.block))(x.data(), c.k, xq.data(), 0, c.rows);
      const int64_t ldy = c.n + 3;
      std::vector<float> y(size_t(c.rows * ldy + 8), Sentinel);
      const int64_t panelEnd = c.panelEnd < 0 ? panels : c.panelEnd;
      jit.lookup<Int4Int8GemvFn>(name)(xq.data(), packed.data(), y.data(), ldy, c.panelBegin,
                                       panelEnd);
      int failures = 0;
      for (int64_t r = 0; r < c.rows; ++r) {
        std::vector<int8_t> codes;
        std::vector<float> rowScales;
        quantizeRow(x.data() + r * c.k, c.k, c.block, codes, rowScales);
        for (int64_t col = 0; col < ldy && failures < 5; ++col) {
          const float got = y[size_t(r * ldy + col)];
          if (col >= c.n || col < c.panelBegin * 8 || col >= panelEnd * 8) {
            if (got != Sentinel && ++failures)
              ADD_FAILURE() << "wrote column " << col << " of row " << r;
            continue;
          }
          double sum = 0, magnitude = 0;
          for (int64_t b = 0; b < blocks; ++b) {
            int64_t dot = 0;
            const int64_t p = b * c.n + col;
            for (int64_t i = b * c.block; i < std::min(c.k, (b + 1) * c.block); ++i)
              dot += int64_t(codes[size_t(i)]) *
                     (w[size_t(i * c.n + col)] - (c.zeros ? zero[size_t(p)] : 0));
            const double term = double(dot) * double(scale[size_t(p)]) * rowScales[size_t(b)];
            sum += term;
            magnitude += std::fabs(term);
          }
          if (!(std::fabs(got - sum) <= 1e-6 * (1.0 + double(blocks)) * magnitude + 1e-30) &&
              ++failures)
            ADD_FAILURE() << "y[" << r << "][" << col << "] = " << got << ", expected " << sum;
        }
      }
    }
}
