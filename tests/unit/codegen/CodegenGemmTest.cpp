//===- tests/unit/codegen/CodegenGemmTest.cpp - JIT'd GEMM vs a double reference ---===//
//
// Every kernel is emitted, JIT-compiled for the host and compared with a
// naive double-accumulating GEMM. Outputs are written into a larger buffer
// pre-filled with a sentinel so that stores outside [rows, N) are caught.
// Each test runs at both kernel widths (8 lanes: 6x16 tiles, 16 lanes: 6x32
// tiles); LLVM legalizes 16-lane vectors on any host, so both run anywhere.
//
//===----------------------------------------------------------------------===//
#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/GemmEmitter.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <utility>
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

double geluErf(double x) { return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0))); }
double geluTanh(double x) {
  return 0.5 * x * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

double activate(double x, GemmActivation activation) {
  switch (activation) {
  case GemmActivation::None:
    return x;
  case GemmActivation::Relu:
    return x > 0 ? x : 0;
  case GemmActivation::GeluErf:
    return geluErf(x);
  case GemmActivation::GeluTanh:
    return geluTanh(x);
  }
  return x;
}

/// One GEMM problem with padded leading dimensions and its inputs.
struct Problem {
  int64_t m, k, n, lda, ldc;
  std::vector<float> a, b, bias, residual;

  Problem(int64_t m, int64_t k, int64_t n, unsigned seed)
      : m(m), k(k), n(n), lda(k + 3), ldc(n + 5) {
    a = randomFloats(size_t(m * lda), seed);
    b = randomFloats(size_t(k * n), seed + 1);
    bias = randomFloats(size_t(n), seed + 2);
    residual = randomFloats(size_t(m * ldc), seed + 3);
  }

  /// B transposed to [n, k], for the transposed-B paths.
  std::vector<float> bTransposed() const {
    std::vector<float> t(size_t(k * n));
    for (int64_t row = 0; row < k; ++row)
      for (int64_t col = 0; col < n; ++col)
        t[size_t(col * k + row)] = b[size_t(row * n + col)];
    return t;
  }

  std::vector<float> output() const { return std::vector<float>(size_t(m * ldc), Sentinel); }

  /// Checks `c` against the double reference of epilogue(A * B).
  void check(const std::vector<float> &c, const GemmEpilogue &epilogue,
             const std::string &what) const {
    int failures = 0;
    for (int64_t row = 0; row < m; ++row) {
      for (int64_t col = 0; col < ldc; ++col) {
        float got = c[size_t(row * ldc + col)];
        if (col >= n) {
          if (got != Sentinel && failures++ < 5)
            ADD_FAILURE() << what << ": wrote past N at (" << row << ", " << col << ")";
          continue;
        }
        double sum = 0, magnitude = 0;
        for (int64_t i = 0; i < k; ++i) {
          double product = double(a[size_t(row * lda + i)]) * b[size_t(i * n + col)];
          sum += product;
          magnitude += std::fabs(product);
        }
        if (epilogue.bias)
          sum += bias[size_t(col)];
        double expected = activate(sum, epilogue.activation);
        if (epilogue.residual)
          expected += residual[size_t(row * ldc + col)];
        double tolerance = 2e-6 * (1.0 + magnitude + std::fabs(expected));
        if (!(std::fabs(got - expected) <= tolerance) && failures++ < 5)
          ADD_FAILURE() << what << ": C(" << row << ", " << col << ") = " << got << ", expected "
                        << expected;
      }
    }
  }
};

/// Compiles packed-B kernels on demand, one JIT per test.
class GemmKernels {
public:
  GemmKernels() : jit_(KernelJit::forHost()), module_(&jit_.newModule("gemm_test")) {}

  std::string add(const PackedGemmSpec &spec) {
    emitPackedGemm(*module_, spec);
    return spec.name;
  }
  std::string add(const RuntimeGemmSpec &spec) {
    emitRuntimeGemm(*module_, spec);
    return spec.name;
  }
  template <typename Fn> Fn *get(const std::string &name) {
    if (module_) {
      jit_.compile();
      module_ = nullptr;
    }
    return jit_.lookup<Fn>(name);
  }

private:
  KernelJit jit_;
  llvm::Module *module_;
};

std::string kernelName(int64_t k, int64_t n, const char *suffix = "") {
  return "gemm_k" + std::to_string(k) + "_n" + std::to_string(n) + suffix;
}

/// Runs a packed kernel over all rows of `problem` and returns C.
std::vector<float> runPacked(PackedGemmFn *kernel, const Problem &p, const GemmBlocking &blocking,
                             bool transposedB) {
  std::vector<float> packed =
      transposedB ? packGemmWeights(p.bTransposed().data(), p.k, p.n, true, blocking)
                  : packGemmWeights(p.b.data(), p.k, p.n, false, blocking);
  std::vector<float> c = p.output();
  kernel(p.a.data(), p.lda, packed.data(), c.data(), p.ldc, 0, p.m, p.bias.data(),
         p.residual.data(), p.ldc, 0, p.n);
  return c;
}

const int64_t Ms[] = {1, 5, 6, 7, 11, 13, 18, 128};
/// Depths (below the unroll, one and several K blocks) each with widths that end in a partial
/// panel, fill whole panels, and take several panels with a tail. Every width meets at least two
/// depths; the kernel's column and depth loops are independent, so the full product of the two
/// lists (60 kernels, each compiled by LLVM: most of this suite's time) checked nothing more.
const std::pair<int64_t, std::vector<int64_t>> KsAndNs[] = {
    {1, {1, 33, 384}},     {3, {8, 32, 48}},        {16, {15, 17, 384}},
    {64, {1, 16, 31, 33}}, {100, {15, 17, 32, 48}}, {384, {8, 16, 31, 384}}};

/// Whether kernels of `lanes` run natively on this host. Elsewhere (16 lanes without AVX-512)
/// LLVM splits every vector in two, and compiling that was most of the two sweeps' time below
/// (about 70 s of CPU on a 2-core Zen 3): there they take a subset of their shapes that still
/// runs every loop of the tile logic, and the whole sweeps run on AVX-512 hosts.
bool nativeWidth(int64_t lanes) {
  static const bool avx512 = TargetSelection::select().hasFeature("avx512f");
  return lanes != GemmLanesAvx512 || avx512;
}

/// A blocking of kc x mc at the test's kernel width.
GemmBlocking blockingOf(int64_t kc, int64_t mc, int64_t lanes) {
  GemmBlocking blocking{kc, mc};
  blocking.lanes = lanes;
  return blocking;
}

std::string lanesName(const testing::TestParamInfo<int64_t> &info) {
  return std::to_string(info.param) + "lanes";
}

class CodegenGemmPacking : public testing::TestWithParam<int64_t> {};
class CodegenGemm : public testing::TestWithParam<int64_t> {
protected:
  GemmBlocking chosen(int64_t k) const { return chooseGemmBlocking(k, GetParam()); }
};

} // namespace

INSTANTIATE_TEST_SUITE_P(Widths, CodegenGemmPacking,
                         testing::Values(GemmLanesAvx2, GemmLanesAvx512), lanesName);
INSTANTIATE_TEST_SUITE_P(Widths, CodegenGemm, testing::Values(GemmLanesAvx2, GemmLanesAvx512),
                         lanesName);

TEST_P(CodegenGemmPacking, LayoutMatchesTheDocumentedFormula) {
  const int64_t k = 11, n = 37;
  GemmBlocking blocking = blockingOf(4, 6, GetParam());
  const int64_t nr = blocking.nr(), nPadded = (n + nr - 1) / nr * nr;
  std::vector<float> b(size_t(k * n));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(i + 1);
  std::vector<float> packed = packGemmWeights(b.data(), k, n, false, blocking);
  ASSERT_EQ(packed.size(), size_t(k * nPadded));
  ASSERT_EQ(packedGemmWeightsSize(k, n, nr), k * nPadded);
  for (int64_t row = 0; row < k; ++row) {
    int64_t blockBegin = row / 4 * 4, depth = std::min<int64_t>(4, k - blockBegin);
    for (int64_t col = 0; col < nPadded; ++col) {
      int64_t index =
          blockBegin * nPadded + col / nr * nr * depth + (row - blockBegin) * nr + col % nr;
      float expected = col < n ? b[size_t(row * n + col)] : 0.0f;
      EXPECT_EQ(packed[size_t(index)], expected) << row << ", " << col;
    }
  }
  Problem p(1, k, n, 7);
  EXPECT_EQ(packGemmWeights(p.b.data(), k, n, false, blocking),
            packGemmWeights(p.bTransposed().data(), k, n, true, blocking));
}

TEST_P(CodegenGemmPacking, BlockingKeepsBlocksEvenAndBounded) {
  for (int64_t k : {1, 64, 100, 320, 384, 768, 1024, 1536, 1537, 3072}) {
    GemmBlocking blocking = chooseGemmBlocking(k, GetParam());
    EXPECT_EQ(blocking.lanes, GetParam());
    EXPECT_EQ(blocking.mc % blocking.mr(), 0);
    if (k <= 1536) {
      EXPECT_GE(blocking.kc, k) << "K up to 1536 is one block, K=" << k;
      EXPECT_FALSE(blocking.packA) << "one block reads A directly, K=" << k;
      continue;
    }
    EXPECT_LE(blocking.kc, 320) << k;
    EXPECT_TRUE(blocking.packA) << "several blocks pack A, K=" << k;
    int64_t blocks = (k + blocking.kc - 1) / blocking.kc;
    EXPECT_GT(k - (blocks - 1) * blocking.kc, blocking.kc / 2) << "short last block for K=" << k;
  }
}

TEST_P(CodegenGemm, AllShapesMatchReference) {
  // Emulated widths: each depth's first and last width (a partial panel and several panels
  // with a tail, or whole panels).
  auto widths = [&](const std::vector<int64_t> &ns) {
    return nativeWidth(GetParam()) ? ns : std::vector<int64_t>{ns.front(), ns.back()};
  };
  GemmKernels kernels;
  for (const auto &[k, ns] : KsAndNs)
    for (int64_t n : widths(ns))
      kernels.add(PackedGemmSpec{kernelName(k, n), k, n, {}, chosen(k)});
  for (const auto &[k, ns] : KsAndNs)
    for (int64_t n : widths(ns)) {
      auto *kernel = kernels.get<PackedGemmFn>(kernelName(k, n));
      for (int64_t m : Ms) {
        Problem p(m, k, n, unsigned(m * 1000 + k * 10 + n));
        std::string what =
            "M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n);
        p.check(runPacked(kernel, p, chosen(k), false), {}, what);
      }
    }
}

TEST_P(CodegenGemm, DeepSingleBlocksAndSplitBlocks) {
  // K = 1536 is one block (A read directly, a 96 KiB B panel); K = 1537 is
  // six blocks of at most 320 rows with A packed. With the chosen mc of 16
  // tiles, M = 197 is one row block with 16 lanes (192 rows and a merged
  // remainder of 5) and two with 8 (96 + 101); M = 300 is two (192 + 108)
  // and three (96 + 96 + 108). With 16 lanes, blocks of 16 tiles or more
  // (M = 197, 300), of 8 to 15 (M = 97) and of fewer (M = 8) prefetch the
  // next B panel at three densities, each its own tile loop.
  GemmKernels kernels;
  for (int64_t k : {1536, 1537})
    kernels.add(PackedGemmSpec{
        kernelName(k, 40), k, 40, {true, GemmActivation::GeluErf, false}, chosen(k)});
  for (int64_t k : {1536, 1537})
    for (int64_t m : {1, 8, 97, 197, 300}) {
      Problem p(m, k, 40, unsigned(k + m));
      p.check(runPacked(kernels.get<PackedGemmFn>(kernelName(k, 40)), p, chosen(k), false),
              {true, GemmActivation::GeluErf, false},
              "M=" + std::to_string(m) + " K=" + std::to_string(k));
    }
}

TEST_P(CodegenGemm, SmallBlocksExerciseEveryLoop) {
  // kc = 10 leaves a remainder for the 4x-unrolled k loop and many K blocks;
  // mc = 12 gives several A blocks: a last one of 6 rows (M = 30), or one
  // that takes a remainder of under 6 rows with it (M = 29: 12 + 17).
  GemmBlocking blocking = blockingOf(10, 12, GetParam());
  GemmKernels kernels;
  for (int64_t k : {7, 33, 100})
    for (int64_t n : {5, 16, 40})
      kernels.add(
          PackedGemmSpec{kernelName(k, n), k, n, {true, GemmActivation::Relu, true}, blocking});
  for (int64_t k : {7, 33, 100})
    for (int64_t n : {5, 16, 40})
      for (int64_t m : {1, 11, 12, 29, 30}) {
        Problem p(m, k, n, unsigned(k + n + m));
        p.check(runPacked(kernels.get<PackedGemmFn>(kernelName(k, n)), p, blocking, false),
                {true, GemmActivation::Relu, true},
                "M=" + std::to_string(m) + " K=" + std::to_string(k) + " N=" + std::to_string(n));
      }
}

TEST_P(CodegenGemm, DirectAEveryTailAndBlock) {
  // A read from its rows (no packing): every tail of 1 to 5 rows, several A
  // blocks (mc = 12) and several K blocks (kc = 16, each starting A further
  // right), with the fused epilogue.
  GemmBlocking blocking = blockingOf(16, 12, GetParam());
  blocking.packA = false;
  GemmKernels kernels;
  for (int64_t k : {7, 40})
    kernels.add(
        PackedGemmSpec{kernelName(k, 24), k, 24, {true, GemmActivation::Relu, true}, blocking});
  for (int64_t k : {7, 40})
    for (int64_t m = 1; m <= 18; ++m) {
      Problem p(m, k, 24, unsigned(31 * k + m));
      p.check(runPacked(kernels.get<PackedGemmFn>(kernelName(k, 24)), p, blocking, false),
              {true, GemmActivation::Relu, true},
              "M=" + std::to_string(m) + " K=" + std::to_string(k));
    }
}

TEST_P(CodegenGemm, VectorizedAPackingEdges) {
  // A is packed 8 k at a time with overlapping stores: depths around
  // multiples of 8 cover the remainder loop, and rows == mc with
  // depth == kc makes the last store of a block overrun the block's end.
  GemmBlocking blocking = blockingOf(16, 12, GetParam());
  const int64_t depths[] = {5, 8, 9, 15, 16, 17, 24, 32, 40};
  GemmKernels kernels;
  for (int64_t k : depths)
    kernels.add(
        PackedGemmSpec{kernelName(k, 40), k, 40, {true, GemmActivation::None, true}, blocking});
  for (int64_t k : depths)
    for (int64_t m : {6, 12, 17, 24, 36}) {
      Problem p(m, k, 40, unsigned(7 * k + m));
      p.check(runPacked(kernels.get<PackedGemmFn>(kernelName(k, 40)), p, blocking, false),
              {true, GemmActivation::None, true},
              "M=" + std::to_string(m) + " K=" + std::to_string(k));
    }
}

TEST_P(CodegenGemm, EpiloguesMatchReference) {
  const GemmActivation activations[] = {GemmActivation::None, GemmActivation::Relu,
                                        GemmActivation::GeluErf, GemmActivation::GeluTanh};
  // Every activation with and without a bias and with and without a residual, each of the
  // four once per shape: the epilogue is the same code at every shape, and each kernel compiled
  // is a second of LLVM's time.
  const std::tuple<int64_t, int64_t, int64_t, std::array<int, 2>> shapes[] = {{13, 100, 17, {0, 3}},
                                                                              {7, 384, 48, {1, 2}}};
  GemmKernels kernels;
  std::vector<std::tuple<std::string, GemmEpilogue, int64_t, int64_t, int64_t>> cases;
  // Emulated widths: the first shape (row and column tails, without and with bias and residual).
  const size_t shapeCount = nativeWidth(GetParam()) ? std::size(shapes) : 1;
  for (size_t s = 0; s < shapeCount; ++s)
    for (auto [m, k, n, flagSets] = shapes[s]; GemmActivation activation : activations)
      for (int flags : flagSets) {
        GemmEpilogue epilogue{bool(flags & 1), activation, bool(flags & 2)};
        std::string name = kernelName(k, n, ("_e" + std::to_string(cases.size())).c_str());
        kernels.add(PackedGemmSpec{name, k, n, epilogue, chosen(k)});
        cases.emplace_back(name, epilogue, m, k, n);
      }
  for (auto &[name, epilogue, m, k, n] : cases) {
    // Scaled inputs push pre-activations to about +-6, through every GELU regime.
    Problem p(m, k, n, 99);
    for (float &v : p.a)
      v *= float(6.0 / std::sqrt(double(k)));
    p.check(runPacked(kernels.get<PackedGemmFn>(name), p, chosen(k), false), epilogue, name);
  }
}

TEST_P(CodegenGemm, RowRangesComposeToTheFullProduct) {
  GemmKernels kernels;
  GemmEpilogue epilogue{true, GemmActivation::GeluTanh, true};
  kernels.add(PackedGemmSpec{"split", 384, 48, epilogue, chosen(384)});
  auto *kernel = kernels.get<PackedGemmFn>("split");
  Problem p(128, 384, 48, 5);
  std::vector<float> packed = packGemmWeights(p.b.data(), 384, 48, false, chosen(384));
  std::vector<float> c = p.output();
  const int64_t bounds[] = {0, 5, 13, 14, 101, 128};
  for (int i = 0; i + 1 < 6; ++i)
    kernel(p.a.data(), p.lda, packed.data(), c.data(), p.ldc, bounds[i], bounds[i + 1],
           p.bias.data(), p.residual.data(), p.ldc, 0, 48);
  p.check(c, epilogue, "split rows");
  // An empty range writes nothing.
  std::vector<float> untouched = p.output();
  kernel(p.a.data(), p.lda, packed.data(), untouched.data(), p.ldc, 7, 7, p.bias.data(),
         p.residual.data(), p.ldc, 0, 48);
  EXPECT_EQ(untouched, p.output());
}

TEST_P(CodegenGemm, RowAndColumnRangesComposeToTheFullProduct) {
  // Row ranges of 1 or 2 rows (a decoder's step) take four B panels side by
  // side, and a thread's task may be a range of columns. N = 170 leaves
  // whole groups, single full panels and a tail panel at both widths; the
  // column bounds split it into ranges of 1 and 4 panels and the rest (with
  // the tail); K = 1537 is several K blocks (C read back, A packed).
  GemmKernels kernels;
  GemmEpilogue epilogue{true, GemmActivation::GeluErf, true};
  const int64_t n = 170, depths[] = {7, 384, 1537};
  for (int64_t k : depths)
    kernels.add(PackedGemmSpec{kernelName(k, n), k, n, epilogue, chosen(k)});
  const int64_t nr = 2 * GetParam();
  const int64_t rowBounds[] = {0, 1, 3, 4, 20}, colBounds[] = {0, nr, 5 * nr, n};
  for (int64_t k : depths) {
    auto *kernel = kernels.get<PackedGemmFn>(kernelName(k, n));
    Problem p(20, k, n, unsigned(k));
    for (float &v : p.a)
      v *= float(6.0 / std::sqrt(double(k)));
    std::vector<float> packed = packGemmWeights(p.b.data(), k, n, false, chosen(k));
    std::vector<float> c = p.output();
    for (int i = 0; i + 1 < 5; ++i)
      for (int j = 0; j + 1 < 4; ++j)
        kernel(p.a.data(), p.lda, packed.data(), c.data(), p.ldc, rowBounds[i], rowBounds[i + 1],
               p.bias.data(), p.residual.data(), p.ldc, colBounds[j], colBounds[j + 1]);
    p.check(c, epilogue, "K=" + std::to_string(k));
  }
}

TEST_P(CodegenGemm, TransposedWeights) {
  GemmKernels kernels;
  for (int64_t n : {15, 384})
    kernels.add(PackedGemmSpec{kernelName(100, n), 100, n, {}, chosen(100)});
  for (int64_t n : {15, 384}) {
    Problem p(13, 100, n, 11);
    p.check(runPacked(kernels.get<PackedGemmFn>(kernelName(100, n)), p, chosen(100), true), {},
            "transposed N=" + std::to_string(n));
  }
}

TEST_P(CodegenGemm, RejectsBadSpecs) {
  KernelJit jit = KernelJit::forHost();
  llvm::Module &module = jit.newModule("bad");
  EXPECT_THROW(emitPackedGemm(module, PackedGemmSpec{"zero", 0, 16, {}, {}}), Error);
  EXPECT_THROW(emitPackedGemm(module, PackedGemmSpec{"mc", 16, 16, {}, {16, 10}}), Error);
  EXPECT_THROW(emitPackedGemm(module, PackedGemmSpec{"lanes", 16, 16, {}, blockingOf(16, 12, 4)}),
               Error);
  emitPackedGemm(module, PackedGemmSpec{"twice", 16, 16, {}, {}});
  EXPECT_THROW(emitPackedGemm(module, PackedGemmSpec{"twice", 16, 16, {}, {}}), Error);
}
