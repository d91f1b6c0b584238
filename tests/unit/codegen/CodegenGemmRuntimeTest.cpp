//===- tests/unit/codegen/CodegenGemmRuntimeTest.cpp - Batched GEMM of activations -===//
//
// The runtime-B kernels pack B per batch item into a caller buffer: checked
// for constant and run-time K/N, plain and transposed B, strided batches and
// batch ranges (how the runtime splits items over threads).
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/kernels/GemmEmitter.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;

namespace {

struct BatchedProblem {
  int64_t batch, m, k, n;
  bool transposed;
  int64_t lda, ldb, ldc, strideA, strideB, strideC;
  std::vector<float> a, b;

  BatchedProblem(int64_t batch, int64_t m, int64_t k, int64_t n, bool transposed)
      : batch(batch), m(m), k(k), n(n), transposed(transposed) {
    lda = k + 1;
    ldb = (transposed ? k : n) + 2;
    ldc = n + 3;
    strideA = m * lda + 5;
    strideB = (transposed ? n : k) * ldb + 7;
    strideC = m * ldc + 11;
    std::mt19937 rng(unsigned(batch * 7 + m * 5 + k * 3 + n));
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    a.resize(size_t(batch * strideA));
    b.resize(size_t(batch * strideB));
    for (float &v : a)
      v = dist(rng);
    for (float &v : b)
      v = dist(rng);
  }

  float bAt(int64_t item, int64_t row, int64_t col) const {
    int64_t offset = transposed ? col * ldb + row : row * ldb + col;
    return b[size_t(item * strideB + offset)];
  }

  void check(const std::vector<float> &c, int64_t itemBegin, int64_t itemEnd) const {
    int failures = 0;
    for (int64_t item = 0; item < batch; ++item)
      for (int64_t row = 0; row < m; ++row)
        for (int64_t col = 0; col < n; ++col) {
          float got = c[size_t(item * strideC + row * ldc + col)];
          if (item < itemBegin || item >= itemEnd) {
            if (got != 0.0f && failures++ < 5)
              ADD_FAILURE() << "item " << item << " outside the range was written";
            continue;
          }
          double sum = 0, magnitude = 0;
          for (int64_t i = 0; i < k; ++i) {
            double product = double(a[size_t(item * strideA + row * lda + i)]) * bAt(item, i, col);
            sum += product;
            magnitude += std::fabs(product);
          }
          if (!(std::fabs(got - sum) <= 2e-6 * (1 + magnitude)) && failures++ < 5)
            ADD_FAILURE() << "item " << item << " C(" << row << ", " << col << ") = " << got
                          << ", expected " << sum;
        }
  }
};

void runAndCheck(RuntimeGemmFn *kernel, const BatchedProblem &p, int64_t itemBegin, int64_t itemEnd,
                 int64_t lanes) {
  std::vector<float> c(size_t(p.batch * p.strideC), 0.0f);
  std::vector<float> packBuffer(size_t(packedGemmWeightsSize(p.k, p.n, 2 * lanes)), NAN);
  kernel(p.a.data(), p.lda, p.strideA, p.b.data(), p.ldb, p.strideB, c.data(), p.ldc, p.strideC,
         p.m, p.k, p.n, itemBegin, itemEnd, packBuffer.data());
  p.check(c, itemBegin, itemEnd);
}

/// kc x mc (0: the defaults) at the test's kernel width.
GemmBlocking blockingOf(int64_t lanes, int64_t kc = 0, int64_t mc = 0) {
  GemmBlocking blocking;
  if (kc)
    blocking.kc = kc;
  if (mc)
    blocking.mc = mc;
  blocking.lanes = lanes;
  return blocking;
}

/// Both kernel widths (8 and 16 lanes); 16-lane vectors run on any host.
class CodegenGemmRuntime : public testing::TestWithParam<int64_t> {};

} // namespace

INSTANTIATE_TEST_SUITE_P(Widths, CodegenGemmRuntime,
                         testing::Values(GemmLanesAvx2, GemmLanesAvx512),
                         [](const testing::TestParamInfo<int64_t> &info) {
                           return std::to_string(info.param) + "lanes";
                         });

TEST_P(CodegenGemmRuntime, ConstantDims) {
  const int64_t lanes = GetParam();
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("runtime_gemm");
  // Q * K^T of one head (K = head dim 64, N = 40 keys) and P * V (K = 40, N = 64).
  emitRuntimeGemm(module, RuntimeGemmSpec{"qk", 64, 40, true, blockingOf(lanes)});
  emitRuntimeGemm(module, RuntimeGemmSpec{"pv", 40, 64, false, blockingOf(lanes)});
  jit.compile();
  for (int64_t m : {1, 7, 40}) {
    runAndCheck(jit.lookup<RuntimeGemmFn>("qk"), BatchedProblem(3, m, 64, 40, true), 0, 3, lanes);
    runAndCheck(jit.lookup<RuntimeGemmFn>("pv"), BatchedProblem(3, m, 40, 64, false), 1, 3, lanes);
  }
}

TEST_P(CodegenGemmRuntime, RunTimeDims) {
  const int64_t lanes = GetParam();
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("runtime_gemm_dynamic");
  // Small kc: several K blocks; mc of one tile: several A blocks.
  const int64_t mc = gemmTileRows(lanes);
  emitRuntimeGemm(module, RuntimeGemmSpec{"dyn", 0, 0, false, blockingOf(lanes, 12, mc)});
  emitRuntimeGemm(module, RuntimeGemmSpec{"dynT", 0, 0, true, blockingOf(lanes, 12, mc)});
  emitRuntimeGemm(module, RuntimeGemmSpec{"keysOnly", 64, 0, true, blockingOf(lanes)});
  jit.compile();
  for (bool transposed : {false, true})
    for (int64_t m : {1, 6, 13, 31})
      for (int64_t k : {1, 12, 29})
        for (int64_t n : {1, 16, 33, 65}) {
          SCOPED_TRACE("m=" + std::to_string(m) + " k=" + std::to_string(k) +
                       " n=" + std::to_string(n) + (transposed ? " transposed" : ""));
          runAndCheck(jit.lookup<RuntimeGemmFn>(transposed ? "dynT" : "dyn"),
                      BatchedProblem(2, m, k, n, transposed), 0, 2, lanes);
        }
  for (int64_t n : {3, 128})
    runAndCheck(jit.lookup<RuntimeGemmFn>("keysOnly"), BatchedProblem(4, 9, 64, n, true), 0, 4,
                lanes);
}
