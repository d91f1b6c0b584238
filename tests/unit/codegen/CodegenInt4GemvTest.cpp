//===- tests/unit/codegen/CodegenInt4GemvTest.cpp - JIT'd int4 GEMV vs dequantize-then-sum --===//
//
// emitInt4Gemv at both widths over weights packed by packInt4GemvWeights:
// i4 and u4 codes over their whole range, zero points given or absent,
// block sizes 16 to 256 (and one that K is not a multiple of), K with a
// partial last block and N with a partial last panel, 1 to 4 rows with x
// and y rows apart by more than K and N, and a panel range that is not the
// whole matrix; without zero points, at 16 lanes on an AVX-512 host, through
// the shared zero point's table. The reference dequantizes as DequantizeLinear does and sums
// in double; y is pre-filled with a sentinel, so a store outside the panel
// range or past N is caught.
//
// The packed GEMM over the same records (PackedGemmSpec::int4Block), K in
// one or several K blocks (a partial last quantization block), N with a
// partial last panel and an odd number of record panels, row counts from
// one to several row blocks, column ranges: C must equal, bit for bit, the
// f32 packed GEMM of the same blocking over packGemmWeights of the
// DequantizeLinear weights, and be near a sum in double; nothing outside
// the range is written.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/GemmEmitter.h"
#include "codegen/kernels/GemmPacking.h"
#include "codegen/kernels/Int4Gemv.h"
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

/// The table of a shared zero point is an AVX-512 permute: emitted only for
/// a target that has it, as the lowering does (16 lanes).
bool hostHasAvx512() {
  static const bool has = TargetSelection::select().hasFeature("avx512f");
  return has;
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
  // Groups of panels a stride apart, then the single panels after them.
  out.push_back({96, 16 * 9 + 5, 32, 1, DType::I4, false});
  out.push_back({96, 8 * 19 + 3, 32, 1, DType::U4, true, 1, 12});
  out.push_back({40, 16 * 7, 16, 2, DType::U4, false, 0, 5});
  // Blocks of fewer rows than an octet (16 lanes pad them to 8).
  out.push_back({11, 40, 4, 1, DType::I4, true});
  out.push_back({13, 33, 6, 3, DType::U4, false});
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
    if (!c.zeros && lanes == 16 && hostHasAvx512())
      spec.uniformZero = int4UniformZeroCode(nullptr, c.type, 0);
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

// A zero point all columns share, given (every one 5) or absent (i4: 0,
// u4: none, so 0 too): the table kernel reads the same records as the
// per-record kernel and must give its results bit for bit, for 1 to 4 rows.
TEST(CodegenInt4GemvSharedZero, TableEqualsTheRecordsZeroPoints) {
  if (!hostHasAvx512())
    GTEST_SKIP() << "the table is an AVX-512 permute";
  const int64_t k = 200, n = 70, block = 32, lanes = 16, panels = (n + lanes - 1) / lanes;
  const int64_t blocks = (k + block - 1) / block;
  std::vector<int8_t> given(size_t(blocks * n), 5);
  EXPECT_EQ(int4UniformZeroCode(given.data(), DType::U4, int64_t(given.size())), 5);
  EXPECT_EQ(int4UniformZeroCode(given.data(), DType::I4, int64_t(given.size())), 13);
  EXPECT_EQ(int4UniformZeroCode(nullptr, DType::U4, 0), 0);
  EXPECT_EQ(int4UniformZeroCode(nullptr, DType::I4, 0), 8);
  given.back() = 4;
  EXPECT_EQ(int4UniformZeroCode(given.data(), DType::U4, int64_t(given.size())), -1);
  given.back() = 5;

  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("int4_gemv_shared_zero");
  for (int64_t rows = 1; rows <= kMaxInt4GemvRows; ++rows)
    for (int zero : {-1, 5, 8}) {
      Int4GemvSpec spec{"", k, n, block, lanes, rows, zero};
      spec.name = int4GemvKernelName(spec);
      emitInt4Gemv(module, spec);
    }
  jit.compile();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::uniform_int_distribution<int> code(0, 15);
  std::vector<int8_t> w(size_t(k * n));
  for (int8_t &v : w)
    v = int8_t(code(rng));
  std::vector<float> scale(size_t(blocks * n)), x(size_t(kMaxInt4GemvRows * k));
  for (float &v : scale)
    v = 0.01f + 0.1f * std::fabs(uniform(rng));
  for (float &v : x)
    v = uniform(rng);
  struct Form {
    const int8_t *zeros;
    DType type;
    int shared;
  };
  // u4 codes with every zero point 5; i4 codes without (stored as 8).
  std::vector<int8_t> signedW(w.size());
  for (size_t i = 0; i < w.size(); ++i)
    signedW[i] = int8_t(w[i] - 8);
  for (const Form &form : {Form{given.data(), DType::U4, 5}, Form{nullptr, DType::I4, 8}}) {
    const std::vector<uint8_t> packed =
        packInt4GemvWeights(form.type == DType::U4 ? w.data() : signedW.data(), form.type,
                            scale.data(), form.zeros, k, n, block, lanes);
    for (int64_t rows = 1; rows <= kMaxInt4GemvRows; ++rows) {
      SCOPED_TRACE(std::to_string(rows) + " rows, shared zero point " +
                   std::to_string(form.shared));
      Int4GemvSpec records{"", k, n, block, lanes, rows, -1}, table = records;
      table.uniformZero = form.shared;
      std::vector<float> want(size_t(rows * n)), got(want.size());
      jit.lookup<Int4GemvFn>(int4GemvKernelName(records))(x.data(), k, packed.data(), want.data(),
                                                          n, 0, panels);
      jit.lookup<Int4GemvFn>(int4GemvKernelName(table))(x.data(), k, packed.data(), got.data(), n,
                                                        0, panels);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), got.size() * 4), 0);
    }
  }
}

class CodegenInt4Gemm : public testing::TestWithParam<int64_t> {};
INSTANTIATE_TEST_SUITE_P(Widths, CodegenInt4Gemm, testing::Values(8, 16), lanesName);

TEST_P(CodegenInt4Gemm, EqualsTheFloatGemmOverTheDequantizedWeights) {
  const int64_t lanes = GetParam(), nr = 2 * lanes;
  struct Shape {
    int64_t k, n, block;
    DType type;
    bool zeros;
    int64_t rows, colBegin, colEnd;
  };
  const std::vector<Shape> shapes = {
      {64, 40, 32, DType::U4, true, 13, 0, 40},                      // one K block, a partial panel
      {700, 3 * nr + 5, 32, DType::I4, false, 40, 0, 3 * nr + 5},    // K blocks 256, 256, 188
      {700, 3 * nr + 5, 32, DType::I4, true, 200, nr, 2 * nr},       // a middle panel, 200 rows
      {700, 3 * nr + 5, 32, DType::U4, true, 7, 2 * nr, 3 * nr + 5}, // the last panels, a tail
      {96, lanes, 16, DType::I4, true, 2, 0, lanes},        // one record panel: zeros beside
      {2100, 2 * nr, 128, DType::U4, false, 30, 0, 2 * nr}, // kc 256 of blocks of 128
      {300, nr, 256, DType::I4, true, 1, 0, nr},            // one row; K blocks 256 and 44
      {700, 2 * nr, 32, DType::U4, true, 600, 0, 2 * nr},   // row blocks of 384 + 216 (16 lanes)
  };
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("int4_gemm_test");
  std::vector<std::string> names;
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    const GemmBlocking blocking = int4GemmBlocking(s.k, lanes, s.block);
    const std::string name = "int4_gemm_" + std::to_string(i);
    emitPackedGemm(module, PackedGemmSpec{name, s.k, s.n, {}, blocking, s.block});
    emitPackedGemm(module, PackedGemmSpec{name + "_f32", s.k, s.n, {}, blocking});
    names.push_back(name);
  }
  jit.compile();

  std::mt19937 rng(11);
  std::uniform_real_distribution<float> uniform(0.01f, 0.2f), activation(-1.0f, 1.0f);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const Shape &s = shapes[i];
    SCOPED_TRACE(names[i] + ": K=" + std::to_string(s.k) + " N=" + std::to_string(s.n) + " block " +
                 std::to_string(s.block) + " rows " + std::to_string(s.rows));
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
    std::vector<float> weights(size_t(s.k * s.n)); // as DequantizeLinear gives them
    for (int64_t kk = 0; kk < s.k; ++kk)
      for (int64_t j = 0; j < s.n; ++j) {
        const int64_t p = (kk / s.block) * s.n + j;
        const int q = w[size_t(kk * s.n + j)] - (s.zeros ? zero[size_t(p)] : 0);
        weights[size_t(kk * s.n + j)] = float(q) * scale[size_t(p)];
      }
    const GemmBlocking blocking = int4GemmBlocking(s.k, lanes, s.block);
    EXPECT_EQ(blocking.kc % s.block, 0);
    const std::vector<float> floats = packGemmWeights(weights.data(), s.k, s.n, false, blocking);
    const int64_t lda = s.k + 3, ldc = s.n + 5;
    std::vector<float> a(size_t(s.rows * lda));
    for (float &v : a)
      v = activation(rng);
    std::vector<float> got(size_t(s.rows * ldc), Sentinel), want(got);
    jit.lookup<PackedGemmFn>(names[i])(a.data(), lda,
                                       reinterpret_cast<const float *>(packed.data()), got.data(),
                                       ldc, 0, s.rows, nullptr, nullptr, 0, s.colBegin, s.colEnd);
    jit.lookup<PackedGemmFn>(names[i] + "_f32")(a.data(), lda, floats.data(), want.data(), ldc, 0,
                                                s.rows, nullptr, nullptr, 0, s.colBegin, s.colEnd);
    int failures = 0;
    for (int64_t row = 0; row < s.rows && failures < 5; ++row)
      for (int64_t col = 0; col < ldc && failures < 5; ++col) {
        const float value = got[size_t(row * ldc + col)];
        const bool inRange = col >= s.colBegin && col < s.colEnd;
        double sum = 0;
        for (int64_t kk = 0; inRange && kk < s.k; ++kk)
          sum += double(a[size_t(row * lda + kk)]) * weights[size_t(kk * s.n + col)];
        const float expected = inRange ? want[size_t(row * ldc + col)] : Sentinel;
        if (std::memcmp(&value, &expected, 4) != 0 ||
            (inRange && std::fabs(value - sum) > 1e-4 * (1 + std::fabs(sum))))
          ADD_FAILURE() << "c[" << row << "][" << col << "] = " << value << ", the f32 GEMM's "
                        << expected << ", in double " << sum << (++failures ? "" : "");
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
  EXPECT_THROW(emitInt4Gemv(module, Int4GemvSpec{"f", 32, 16, 32, 16, 1, 16}), Error);
  std::vector<int8_t> codes(64, 0);
  std::vector<float> scales(2, 1.0f);
  // The GEMM's K blocks must be whole quantization blocks.
  GemmBlocking blocking = chooseGemmBlocking(40, 8);
  blocking.kc = 40;
  EXPECT_THROW(emitPackedGemm(module, PackedGemmSpec{"e", 64, 16, {}, blocking, 32}), Error);
  EXPECT_THROW(packInt4GemvWeights(codes.data(), DType::I8, scales.data(), nullptr, 32, 2, 32, 8),
               Error);
}

// The record layout Int4Gemv.h documents, byte by byte: scales, zero points
// (unsigned: i4 plus 8), then the block's rows. At 8 lanes row r is a
// 32-bit word, column j at bits 4j; at 16 lanes rows go in octets of 64
// bytes, column j's row r at nibble r % 8 of the octet's word j. The
// 16-lane matrix ends with the bytes its kernel's loads may read past the
// last octet. The kernels' tests would pass with any layout their packer
// and emitter agree on; this pins the documented one.
TEST(CodegenInt4GemvLayout, RecordsAreAsDocumented) {
  for (int64_t lanes : {8, 16}) {
    const int64_t k = 11, n = lanes, block = 12;
    std::vector<int8_t> codes(static_cast<size_t>(k * n)), zeros(static_cast<size_t>(n));
    std::vector<float> scales(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) {
      scales[size_t(j)] = 0.5f + float(j);
      zeros[size_t(j)] = int8_t(j % 16 - 8);
      for (int64_t row = 0; row < k; ++row)
        codes[size_t(row * n + j)] = int8_t((3 * row + j) % 16 - 8);
    }
    const std::vector<uint8_t> packed = packInt4GemvWeights(codes.data(), DType::I4, scales.data(),
                                                            zeros.data(), k, n, block, lanes);
    const int64_t rows = lanes == 8 ? block : 16; // 16 lanes: two octets
    ASSERT_EQ(int4GemvRecordBytes(block, lanes), lanes * 5 + rows * lanes / 2);
    ASSERT_EQ(int64_t(packed.size()),
              int4GemvRecordBytes(block, lanes) + (lanes == 16 ? kInt4GemvOverreadBytes : 0));
    for (int64_t j = 0; j < n; ++j) {
      float scale = 0;
      std::memcpy(&scale, packed.data() + j * 4, 4);
      EXPECT_EQ(scale, scales[size_t(j)]) << lanes << " lanes, column " << j;
      EXPECT_EQ(packed[size_t(lanes * 4 + j)], uint8_t(j % 16)) << lanes << " lanes, column " << j;
    }
    const uint8_t *nibbles = packed.data() + lanes * 5;
    for (int64_t row = 0; row < rows; ++row)
      for (int64_t j = 0; j < n; ++j) {
        const int64_t nibble = lanes == 8 ? row * 8 + j : (row / 8) * 128 + j * 8 + row % 8;
        const int code = (nibbles[nibble / 2] >> (4 * (nibble % 2))) & 15;
        const int want = row < k ? (3 * int(row) + int(j)) % 16 : 0; // rows past K: 0
        EXPECT_EQ(code, want) << lanes << " lanes, row " << row << ", column " << j;
      }
    for (size_t byte = size_t(int4GemvRecordBytes(block, lanes)); byte < packed.size(); ++byte)
      EXPECT_EQ(packed[byte], 0) << "padding byte " << byte;
  }
}
