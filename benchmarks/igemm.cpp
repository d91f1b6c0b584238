//===- benchmarks/igemm.cpp - onnxc's int8 GEMM vs its fp32 GEMM, one thread ===//
//
// For the transformer shapes of onnxc_bench_gemm (M = 128, 512; K, N from
// MiniLM and BERT-base layers), times the packed fp32 kernel of
// codegen/kernels/GemmEmitter and the u8 x s8 kernel of codegen/kernels/IntegerGemm (with
// its dequantize + bias store) on the same shape, alternating, and prints
// best/median GFLOP/s and GOP/s (2 MNK each) and the ratio of the medians.
// Only the kernels are timed: weights are packed at compile time, and A's
// quantization (one pass over M x K floats, before the kernel) is not
// included, as the fp32 figure includes no pass over A either. Times are
// the thread's CPU time (the machine is shared).
//
//   onnxc_bench_igemm [--runs N] [--shape MxKxN]... [--isa avx512-vnni|avx-vnni|avx2|generic]
//
// --isa defaults to what onnxc picks for the host (chooseIntegerGemmIsa);
// the fp32 kernel is the one onnxc picks (16 lanes with AVX-512F).
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/GemmEmitter.h"
#include "codegen/kernels/IntegerGemm.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;
using namespace onnxc::bench;

namespace {

struct Shape {
  int64_t m, k, n;
};

double threadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

/// Timed in this thread's CPU time: on the shared machine a preempted run
/// still counts only the time it ran (as onnxc_bench_gemm --cpu-clock).
template <typename F> double seconds(F &&f) {
  double start = threadCpuSeconds();
  f();
  return threadCpuSeconds() - start;
}

template <typename T> struct Aligned {
  T *data;
  explicit Aligned(size_t count)
      : data(static_cast<T *>(std::aligned_alloc(64, (count * sizeof(T) + 63) / 64 * 64))) {}
  ~Aligned() { std::free(data); }
  Aligned(const Aligned &) = delete;
  Aligned &operator=(const Aligned &) = delete;
};

struct Result {
  Shape shape;
  int runs;
  std::vector<double> fp32, int8;
};

Result benchmarkShape(KernelJit &jit, const Shape &s, IntegerGemmIsa isa, int runs) {
  const int lanes = hostHasAvx512() ? 16 : 8;
  GemmBlocking blocking = chooseGemmBlocking(s.k, lanes);
  std::string suffix = std::to_string(s.m) + "_" + std::to_string(s.k) + "_" + std::to_string(s.n);
  emitPackedGemm(jit.newModule("f" + suffix),
                 PackedGemmSpec{"fgemm_" + suffix, s.k, s.n, {true}, blocking});
  emitIntegerGemm(jit.newModule("i" + suffix),
                  IntegerGemmSpec{"igemm_" + suffix, s.k, s.n, isa, true});
  jit.compile();
  auto *fp32 = jit.lookup<PackedGemmFn>("fgemm_" + suffix);
  auto *int8 = jit.lookup<IntegerGemmFn>("igemm_" + suffix);

  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  std::uniform_int_distribution<int> byte(0, 255), weight(-127, 127);
  Aligned<float> a(size_t(s.m * s.k)), c(size_t(s.m * s.n)), bias(size_t(s.n));
  std::vector<float> b(size_t(s.k * s.n));
  for (int64_t i = 0; i < s.m * s.k; ++i)
    a.data[i] = unit(rng);
  for (float &v : b)
    v = unit(rng);
  for (int64_t i = 0; i < s.n; ++i)
    bias.data[i] = unit(rng);
  Aligned<float> packed(size_t(packedGemmWeightsSize(s.k, s.n, blocking.nr())));
  packGemmWeights(b.data(), s.k, s.n, false, blocking, packed.data);

  const int64_t kPadded = integerGemmPaddedDepth(s.k);
  Aligned<uint8_t> aq(size_t(s.m * kPadded));
  std::vector<int8_t> w(size_t(s.k * s.n));
  for (int8_t &v : w)
    v = int8_t(weight(rng));
  std::vector<int32_t> rowSums(size_t(s.m));
  for (int64_t r = 0; r < s.m; ++r)
    for (int64_t col = 0; col < kPadded; ++col) {
      uint8_t v = col < s.k ? uint8_t(byte(rng)) : 0;
      aq.data[r * kPadded + col] = v;
      rowSums[size_t(r)] += v;
    }
  PackedIntegerWeights iw = packIntegerGemmWeights(w.data(), false, s.k, s.n, {0.01f}, {0}, isa);

  auto runFp32 = [&] {
    fp32(a.data, s.k, packed.data, c.data, s.n, 0, s.m, bias.data, nullptr, 0, 0, s.n);
  };
  auto runInt8 = [&] {
    int8(aq.data, kPadded, iw.packed.data(), c.data, s.n, 0, s.m, rowSums.data(), 128, 0.02f,
         iw.columns.data(), bias.data);
  };
  if (runs <= 0) {
    double once = seconds(runFp32) + seconds(runInt8);
    runs = std::max(5, std::min(300, int(1.0 / once)));
  }
  const double ops = 2.0 * double(s.m) * double(s.k) * double(s.n);
  Result result{s, runs, {}, {}};
  for (int r = 0; r < runs; ++r) {
    result.fp32.push_back(ops / seconds(runFp32) * 1e-9);
    result.int8.push_back(ops / seconds(runInt8) * 1e-9);
  }
  return result;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 0;
  std::vector<Shape> shapes;
  IntegerGemmIsa isa = chooseIntegerGemmIsa(TargetSelection::select());
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    std::string value = i + 1 < argc ? argv[i + 1] : "";
    if (arg == "--runs" && !value.empty()) {
      runs = std::stoi(value);
      ++i;
    } else if (arg == "--shape" && !value.empty()) {
      Shape s;
      if (std::sscanf(value.c_str(), "%ldx%ldx%ld", &s.m, &s.k, &s.n) != 3) {
        std::fprintf(stderr, "--shape wants MxKxN\n");
        return 2;
      }
      shapes.push_back(s);
      ++i;
    } else if (arg == "--isa" && !value.empty()) {
      bool found = false;
      for (IntegerGemmIsa candidate : {IntegerGemmIsa::Generic, IntegerGemmIsa::Avx2,
                                       IntegerGemmIsa::AvxVnni, IntegerGemmIsa::Avx512Vnni})
        if (value == integerGemmIsaName(candidate)) {
          isa = candidate;
          found = true;
        }
      if (!found) {
        std::fprintf(stderr, "--isa is avx512-vnni, avx-vnni, avx2 or generic\n");
        return 2;
      }
      ++i;
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--shape MxKxN]... [--isa NAME]\n", argv[0]);
      return 2;
    }
  }
  if (shapes.empty()) {
    const std::pair<int64_t, int64_t> layers[] = {{384, 384}, {384, 1536}, {1536, 384},
                                                  {768, 768}, {768, 3072}, {3072, 768}};
    for (int64_t m : {128, 512})
      for (auto [k, n] : layers)
        shapes.push_back({m, k, n});
  }
  KernelJit jit = KernelJit::forHost();
  std::vector<Result> results;
  for (const Shape &shape : shapes)
    results.push_back(benchmarkShape(jit, shape, isa, runs));
  std::printf(
      "thread CPU clock; one thread; JIT for cpu '%s'; fp32 kernel %d lanes, int8 kernel %s\n",
      jit.cpuName().c_str(), hostHasAvx512() ? 16 : 8, integerGemmIsaName(isa));
  std::printf("both with the bias epilogue; int8 excludes A's quantization pass\n");
  std::printf("    M     K     N | fp32 GFLOP/s  med | int8 GOP/s   med | ratio (med) | runs\n");
  auto best = [](const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); };
  for (const Result &r : results)
    std::printf("%5ld %5ld %5ld | %8.1f %8.1f | %8.1f %8.1f | %5.2f %5.2f | %4d\n", r.shape.m,
                r.shape.k, r.shape.n, best(r.fp32), median(r.fp32), best(r.int8), median(r.int8),
                best(r.int8) / best(r.fp32), median(r.int8) / median(r.fp32), r.runs);
  return 0;
}
