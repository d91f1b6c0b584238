//===- tests/unit/codegen/CodegenRowKernelsTest.cpp - Row kernels vs double math --===//
//
// JIT-compiles softmax, log-softmax, LayerNorm (with and without beta) and
// RMSNorm for the row lengths transformers and tails exercise, both with L
// baked in and with L passed at run time, and compares every element with a
// double-precision reference. Rows include large values (softmax must not
// overflow; LayerNorm must not lose its spread to a large mean), constant
// rows, and split row ranges that must give the same bits as one call.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/RowKernels.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

constexpr int64_t RowLengths[] = {1, 7, 8, 9, 64, 384, 1000};
constexpr float Epsilon = 1e-5f;

struct Variant {
  RowKernelKind kind;
  bool hasBeta;
  std::string label() const {
    return std::string(rowKernelKindName(kind)) + (hasBeta ? "_beta" : "");
  }
};

const Variant Variants[] = {{RowKernelKind::Softmax, false},
                            {RowKernelKind::LogSoftmax, false},
                            {RowKernelKind::LayerNorm, true},
                            {RowKernelKind::LayerNorm, false},
                            {RowKernelKind::RmsNorm, false}};

std::string kernelName(const Variant &variant, int64_t rowLength) {
  return "row_" + variant.label() + "_" + std::to_string(rowLength);
}

/// One JIT with every variant for every row length, plus the run-time-L
/// variants (rowLength 0).
KernelJit &rowJit() {
  static KernelJit jit = [] {
    KernelJit j = KernelJit::forHost();
    llvm::Module &module = j.newModule("row_kernels_test");
    for (const Variant &variant : Variants) {
      for (int64_t length : RowLengths)
        emitRowKernel(module, {variant.kind, length, Epsilon, variant.hasBeta},
                      kernelName(variant, length));
      emitRowKernel(module, {variant.kind, 0, Epsilon, variant.hasBeta}, kernelName(variant, 0));
    }
    j.compile();
    return j;
  }();
  return jit;
}

/// Rows of one test tensor: ordinary values, large values, a constant row,
/// a row of large mean and unit spread, and one wide-ranged row.
std::vector<float> makeRows(int64_t rows, int64_t length, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> data(size_t(rows * length));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < length; ++i) {
      float &x = data[size_t(r * length + i)];
      switch (r % 5) {
      case 0:
        x = 3.0f * normal(rng);
        break;
      case 1: // exp(x) would overflow without subtracting the max
        x = 1000.0f + 4.0f * normal(rng);
        break;
      case 2:
        x = 0.25f;
        break;
      case 3: // large mean, unit spread
        x = 1000.0f + normal(rng);
        break;
      default:
        x = -50.0f + 20.0f * normal(rng);
        break;
      }
    }
  return data;
}

/// The double-precision row operation and a per-element tolerance.
void referenceRow(const Variant &variant, const float *x, int64_t length, const float *gamma,
                  const float *beta, std::vector<double> &out, std::vector<double> &tolerance) {
  out.assign(size_t(length), 0.0);
  tolerance.assign(size_t(length), 0.0);
  if (length == 0)
    return;
  double max = *std::max_element(x, x + length);
  if (variant.kind == RowKernelKind::Softmax || variant.kind == RowKernelKind::LogSoftmax) {
    double sum = 0;
    for (int64_t i = 0; i < length; ++i)
      sum += std::exp(double(x[i]) - max);
    for (int64_t i = 0; i < length; ++i) {
      double shifted = double(x[i]) - max;
      // Rounding x - max in float moves exp by |x - max| * 2^-24 relative.
      double relative = 1e-6 + std::fabs(shifted) * 0x1p-23;
      if (variant.kind == RowKernelKind::Softmax) {
        out[size_t(i)] = std::exp(shifted) / sum;
        tolerance[size_t(i)] = relative * out[size_t(i)] + 1e-37;
      } else {
        out[size_t(i)] = shifted - std::log(sum);
        tolerance[size_t(i)] = 1e-6 * (1 + std::fabs(out[size_t(i)]));
      }
    }
    return;
  }
  bool isLayerNorm = variant.kind == RowKernelKind::LayerNorm;
  double mean = 0;
  if (isLayerNorm) {
    for (int64_t i = 0; i < length; ++i)
      mean += x[i];
    mean /= double(length);
  }
  double meanSquare = 0;
  for (int64_t i = 0; i < length; ++i)
    meanSquare += (x[i] - mean) * (x[i] - mean);
  meanSquare /= double(length);
  double scale = 1 / std::sqrt(meanSquare + double(Epsilon));
  // The float mean is off by up to half an ulp of itself; that error is
  // scaled by 1/stddev in every output.
  double meanRounding = isLayerNorm ? std::ldexp(std::fabs(mean), -23) * scale : 0;
  for (int64_t i = 0; i < length; ++i) {
    double normalized = (x[i] - mean) * scale;
    double b = variant.hasBeta ? beta[i] : 0.0;
    out[size_t(i)] = normalized * gamma[i] + b;
    tolerance[size_t(i)] = 2e-6 * (std::fabs(normalized * gamma[i]) + std::fabs(b) + 1) +
                           meanRounding * std::fabs(gamma[i]);
  }
}

struct RowCase {
  int64_t rows, length;
  std::vector<float> in, gamma, beta;
};

RowCase makeCase(int64_t length, uint32_t seed) {
  RowCase c{5, length, makeRows(5, length, seed), {}, {}};
  std::mt19937 rng(seed + 1);
  std::uniform_real_distribution<float> uniform(-2.0f, 2.0f);
  for (int64_t i = 0; i < length; ++i) {
    c.gamma.push_back(uniform(rng));
    c.beta.push_back(uniform(rng));
  }
  return c;
}

void expectRowsMatch(const Variant &variant, const RowCase &c, const std::vector<float> &out,
                     const std::string &what) {
  std::vector<double> ref, tolerance;
  int64_t failures = 0;
  for (int64_t r = 0; r < c.rows; ++r) {
    referenceRow(variant, c.in.data() + r * c.length, c.length, c.gamma.data(), c.beta.data(), ref,
                 tolerance);
    for (int64_t i = 0; i < c.length; ++i) {
      float y = out[size_t(r * c.length + i)];
      if (!(std::fabs(y - ref[size_t(i)]) <= tolerance[size_t(i)]) && failures++ < 5)
        ADD_FAILURE() << what << " row " << r << " element " << i << ": " << y << " vs "
                      << ref[size_t(i)] << " (tolerance " << tolerance[size_t(i)] << ")";
    }
  }
  EXPECT_EQ(failures, 0) << what;
}

class RowKernelTest : public ::testing::TestWithParam<int64_t> {};

TEST_P(RowKernelTest, MatchesDoubleReferenceWithBakedAndRuntimeLength) {
  int64_t length = GetParam();
  for (const Variant &variant : Variants) {
    RowCase c = makeCase(length, uint32_t(length * 7 + int(variant.kind)));
    std::vector<float> baked(c.in.size()), runtime(c.in.size());
    auto *bakedFn = rowJit().lookup<RowKernelFn>(kernelName(variant, length));
    auto *runtimeFn = rowJit().lookup<RuntimeLengthRowKernelFn>(kernelName(variant, 0));
    const float *beta = variant.hasBeta ? c.beta.data() : nullptr;
    bakedFn(c.in.data(), baked.data(), c.gamma.data(), beta, 0, c.rows);
    runtimeFn(c.in.data(), runtime.data(), c.gamma.data(), beta, 0, c.rows, length);
    std::string what = variant.label() + " L=" + std::to_string(length);
    expectRowsMatch(variant, c, baked, what + " baked");
    expectRowsMatch(variant, c, runtime, what + " runtime");
  }
}

TEST_P(RowKernelTest, SplitRowRangesAndInPlaceGiveTheSameBits) {
  int64_t length = GetParam();
  for (const Variant &variant : Variants) {
    RowCase c = makeCase(length, 99);
    auto *fn = rowJit().lookup<RowKernelFn>(kernelName(variant, length));
    const float *beta = variant.hasBeta ? c.beta.data() : nullptr;
    std::vector<float> whole(c.in.size()), split(c.in.size(), -7.0f);
    fn(c.in.data(), whole.data(), c.gamma.data(), beta, 0, c.rows);
    // Rows outside [begin, end) stay untouched; empty ranges do nothing.
    fn(c.in.data(), split.data(), c.gamma.data(), beta, 2, 4);
    for (int64_t i = 0; i < 2 * length; ++i)
      ASSERT_EQ(split[size_t(i)], -7.0f) << variant.label();
    fn(c.in.data(), split.data(), c.gamma.data(), beta, 3, 3);
    fn(c.in.data(), split.data(), c.gamma.data(), beta, 0, 2);
    fn(c.in.data(), split.data(), c.gamma.data(), beta, 4, 5);
    std::vector<float> inPlace = c.in;
    fn(inPlace.data(), inPlace.data(), c.gamma.data(), beta, 0, c.rows);
    for (size_t i = 0; i < whole.size(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(split[i]), std::bit_cast<uint32_t>(whole[i]))
          << variant.label() << " element " << i;
      ASSERT_EQ(std::bit_cast<uint32_t>(inPlace[i]), std::bit_cast<uint32_t>(whole[i]))
          << variant.label() << " in place, element " << i;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(CodegenRow, RowKernelTest, ::testing::ValuesIn(RowLengths),
                         [](const auto &info) { return "L" + std::to_string(info.param); });

TEST(CodegenRow, RuntimeLengthHandlesEmptyRowsAndOddLengths) {
  // Every length from 0 to 40 through the one run-time-L softmax.
  auto *fn = rowJit().lookup<RuntimeLengthRowKernelFn>(kernelName(Variants[0], 0));
  for (int64_t length = 0; length <= 40; ++length) {
    RowCase c = makeCase(length, uint32_t(length));
    std::vector<float> out(c.in.size());
    fn(c.in.data(), out.data(), nullptr, nullptr, 0, c.rows, length);
    expectRowsMatch(Variants[0], c, out, "softmax L=" + std::to_string(length));
  }
}

TEST(CodegenRow, SoftmaxPropagatesNaNAndHandlesInfinity) {
  auto *fn = rowJit().lookup<RowKernelFn>(kernelName(Variants[0], 9));
  std::vector<float> in = {0, 1, 2, 3, std::nanf(""), 5, 6, 7, 8};
  std::vector<float> out(9);
  fn(in.data(), out.data(), nullptr, nullptr, 0, 1);
  for (float y : out)
    EXPECT_TRUE(std::isnan(y));
  // -inf entries get probability 0; the rest is a normal softmax.
  in = {-INFINITY, 0, -INFINITY, 0, -INFINITY, 0, -INFINITY, 0, -INFINITY};
  fn(in.data(), out.data(), nullptr, nullptr, 0, 1);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], i % 2 ? 0.25f : 0.0f);
}

TEST(CodegenRow, NormsOfHugeRowsDoNotOverflow) {
  // Squares above FLT_MAX used to make the scale 0 and every output 0 (the
  // jit-differential fuzzer's RMSNorm of a row holding 1e30); the kernels
  // rescale such rows by their peak and must match the double reference.
  std::mt19937 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (const Variant &variant : Variants) {
    if (variant.kind != RowKernelKind::LayerNorm && variant.kind != RowKernelKind::RmsNorm)
      continue;
    for (int64_t length : {1, 9, 384}) {
      RowCase c = makeCase(length, 11);
      c.rows = 4;
      c.in.assign(size_t(c.rows * length), 0.0f);
      for (int64_t i = 0; i < length; ++i) {
        c.in[size_t(i)] = 1e30f * normal(rng);                            // all huge
        c.in[size_t(length + i)] = i == length / 2 ? 1e25f : normal(rng); // one huge
        c.in[size_t(2 * length + i)] = 1e20f + 1e19f * normal(rng);       // huge mean, spread
        c.in[size_t(3 * length + i)] = 3e37f * normal(rng);               // near FLT_MAX
      }
      std::string what = variant.label() + " L=" + std::to_string(length);
      const float *beta = variant.hasBeta ? c.beta.data() : nullptr;
      std::vector<float> baked(c.in.size()), runtime(c.in.size());
      rowJit().lookup<RowKernelFn>(kernelName(variant, length))(c.in.data(), baked.data(),
                                                                c.gamma.data(), beta, 0, c.rows);
      rowJit().lookup<RuntimeLengthRowKernelFn>(kernelName(variant, 0))(
          c.in.data(), runtime.data(), c.gamma.data(), beta, 0, c.rows, length);
      expectRowsMatch(variant, c, baked, what + " baked");
      expectRowsMatch(variant, c, runtime, what + " runtime");
    }
  }
}

TEST(CodegenRow, RmsNormOfARowWithInfinityIsZeroAndNaN) {
  // As the evaluator: rms = inf, so finite elements give 0 and the infinite
  // one NaN (the rescaling of huge rows must not turn the row into NaN).
  auto *fn = rowJit().lookup<RowKernelFn>(kernelName(Variants[4], 9));
  std::vector<float> in = {1, -2, INFINITY, 3, 4, 5, 6, 7, 8}, gamma(9, 1.0f), out(9);
  fn(in.data(), out.data(), gamma.data(), nullptr, 0, 1);
  for (size_t i = 0; i < in.size(); ++i) {
    if (std::isinf(in[i]))
      EXPECT_TRUE(std::isnan(out[i])) << i;
    else
      EXPECT_EQ(out[i], 0.0f) << i;
  }
}

TEST(CodegenRow, GenericX86_64TargetIsAlsoAccurate) {
  // No FMA and no AVX: fmuladd splits, masked loads are scalarized, and the
  // results must still meet the same tolerances.
  KernelJit jit(TargetSelection::genericX86_64().jitTargetMachineBuilder());
  llvm::Module &module = jit.newModule("generic_rows");
  for (const Variant &variant : Variants)
    emitRowKernel(module, {variant.kind, 0, Epsilon, variant.hasBeta}, kernelName(variant, 0));
  jit.compile();
  for (const Variant &variant : Variants)
    for (int64_t length : {9, 384}) {
      RowCase c = makeCase(length, 5);
      std::vector<float> out(c.in.size());
      jit.lookup<RuntimeLengthRowKernelFn>(kernelName(variant, 0))(
          c.in.data(), out.data(), c.gamma.data(), variant.hasBeta ? c.beta.data() : nullptr, 0,
          c.rows, length);
      expectRowsMatch(variant, c, out,
                      "generic " + variant.label() + " L=" + std::to_string(length));
    }
}

TEST(CodegenRow, RejectsBadSpecs) {
  llvm::LLVMContext context;
  llvm::Module module("bad", context);
  EXPECT_THROW(emitRowKernel(module, {RowKernelKind::Softmax, -1}, "a"), Error);
  EXPECT_THROW(emitRowKernel(module, {RowKernelKind::LayerNorm, 8, -1.0f}, "b"), Error);
  EXPECT_THROW(emitRowKernel(module, {RowKernelKind::RmsNorm, 8, 1e-5f, true}, "c"), Error);
}

} // namespace
