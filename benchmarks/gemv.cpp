//===- benchmarks/gemv.cpp - the recurrent step's GEMV vs a plain read -----===//
//
// A batch-1 LSTM/GRU step is y = Rb + h · Rᵀ: every weight of R is read once
// for one multiply-add, so the step is bound by how fast R streams from
// wherever it lives (L2 for small layers, L3 at hidden 512-1024), not by
// the FMA pipes. For the recurrent shapes (K = hidden, N = gates·hidden)
// this times codegen/kernels/GemvEmitter's kernel on packed weights and, on a buffer
// of the same bytes, the fastest plain read this file can write (eight
// independent vector sums), and prints both in GB/s of weights plus the
// GEMV's GFLOP/s and its fraction of the read. Each GEMV runs back to back
// on the same weights, as the time loop does. Thread CPU time, best and
// median of the runs (the machine is shared). The FMA peak is measured the
// same way first: the GEMV's GFLOP/s are far below it by nature.
//
//   onnxc_bench_gemv [--runs N] [--shape KxN]... [--lanes 8|16]
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include "codegen/KernelJit.h"
#include "codegen/kernels/GemvEmitter.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;
using namespace onnxc::bench;

namespace {

double threadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

struct Buffer {
  float *data;
  explicit Buffer(size_t floats)
      : data(static_cast<float *>(std::aligned_alloc(64, (floats * 4 + 63) / 64 * 64))) {}
  ~Buffer() { std::free(data); }
  Buffer(const Buffer &) = delete;
  Buffer &operator=(const Buffer &) = delete;
};

/// Sum of `floats` floats (a multiple of 128) with eight independent vector
/// chains, written out so that they stay in registers; 512-bit loads where
/// the CPU has them (the GEMV's own width there).
__attribute__((target("avx2"), noinline)) float readAll256(const float *p, size_t floats) {
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i < floats; i += 64) {
    a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
    a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
    a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
    a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
    a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
    a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
    a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
  }
  __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0] + out[7];
}

__attribute__((target("avx512f"), noinline)) float readAll512(const float *p, size_t floats) {
  __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i < floats; i += 128) {
    a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
    a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
    a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
    a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
    a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
    a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
    a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
    a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
  }
  __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  return _mm512_reduce_add_ps(sum);
}

struct Stats {
  double best, median;
};

/// GB/s of `bytes` per call over `runs` timed batches of calls lasting ~20 ms.
template <typename F> Stats measure(F &&call, double bytes, int runs) {
  call();
  int calls = 1;
  for (double t = 0; t < 0.02; calls *= 2) {
    double start = threadCpuSeconds();
    for (int i = 0; i < calls; ++i)
      call();
    t = threadCpuSeconds() - start;
  }
  std::vector<double> rates;
  for (int r = 0; r < runs; ++r) {
    double start = threadCpuSeconds();
    for (int i = 0; i < calls; ++i)
      call();
    rates.push_back(bytes * calls / (threadCpuSeconds() - start) * 1e-9);
  }
  std::sort(rates.begin(), rates.end());
  return {rates.back(), rates[rates.size() / 2]};
}

struct Shape {
  int64_t k, n;
};

/// The FMA peak at `lanes` (PeakFlops.h's chains), best of 10 samples timed
/// in thread CPU time like everything else here.
double cpuTimePeakGflops(int64_t lanes) {
  const int64_t iterations = 5'000'000;
  timeFmaChainsOf(int(lanes), iterations); // wake the core up to its steady clock
  double best = 0;
  for (int r = 0; r < 10; ++r) {
    double start = threadCpuSeconds();
    timeFmaChainsOf(int(lanes), iterations);
    best = std::max(best, double(iterations) * 12 * 2 * double(lanes) /
                              (threadCpuSeconds() - start) * 1e-9);
  }
  return best;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 15;
  int64_t lanes = hostHasAvx512() ? GemmLanesAvx512 : GemmLanesAvx2;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc)
      runs = std::atoi(argv[++i]);
    else if (arg == "--lanes" && i + 1 < argc)
      lanes = std::atoi(argv[++i]);
    else if (arg == "--shape" && i + 1 < argc) {
      Shape s{};
      if (std::sscanf(argv[++i], "%ldx%ld", &s.k, &s.n) != 2) {
        std::fprintf(stderr, "--shape wants KxN\n");
        return 2;
      }
      shapes.push_back(s);
    } else {
      std::fprintf(stderr, "usage: onnxc_bench_gemv [--runs N] [--shape KxN]... [--lanes 8|16]\n");
      return 2;
    }
  }
  if (shapes.empty()) // silero-vad's LSTM, then LSTM and GRU layers of hidden 512 and 1024
    shapes = {{128, 512}, {512, 2048}, {512, 1536}, {1024, 4096}, {1024, 3072}};

  KernelJit jit = KernelJit::forHost();
  for (const Shape &s : shapes)
    emitPackedGemv(jit.newModule("m" + std::to_string(s.k) + "x" + std::to_string(s.n)),
                   PackedGemvSpec{"gemv_" + std::to_string(s.k) + "x" + std::to_string(s.n), s.k,
                                  s.n, lanes, true});
  jit.compile();

  std::printf("GEMV y = bias + x · B (B packed, %ld lanes), one thread, %d runs; GB/s of B\n",
              long(lanes), runs);
  std::printf("fp32 FMA peak at %ld lanes: %.1f GFLOP/s (best of 10, thread CPU time)\n",
              long(lanes), cpuTimePeakGflops(lanes));
  std::printf("%-12s %9s | %9s %8s %8s | %9s %8s | %s\n", "K x N", "B MiB", "GEMV GB/s", "median",
              "GFLOP/s", "read GB/s", "median", "GEMV / read");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (const Shape &s : shapes) {
    const int64_t padded = gemmPaddedColumns(s.n, 2 * lanes);
    const size_t floats = size_t(s.k * padded);
    std::vector<float> b(size_t(s.k * s.n));
    for (float &v : b)
      v = dist(rng);
    Buffer packed{floats}, x{size_t(s.k)}, bias{size_t(s.n)}, y{size_t(padded)};
    packGemmWeights(b.data(), s.k, s.n, false, gemvBlocking(s.k, lanes), packed.data);
    for (int64_t i = 0; i < s.k; ++i)
      x.data[i] = dist(rng);
    std::memset(bias.data, 0, size_t(s.n) * 4);
    auto *gemv =
        jit.lookup<PackedGemvFn>("gemv_" + std::to_string(s.k) + "x" + std::to_string(s.n));
    const double bytes = double(floats) * 4;
    Stats ours = measure([&] { gemv(x.data, packed.data, bias.data, y.data); }, bytes, runs);
    volatile float sink = 0;
    const size_t whole = floats / 128 * 128;
    Stats read = measure(
        [&] {
          sink = sink + (lanes == GemmLanesAvx512 ? readAll512(packed.data, whole)
                                                  : readAll256(packed.data, whole));
        },
        bytes, runs);
    std::printf("%5ldx%-6ld %9.2f | %9.1f %8.1f %8.1f | %9.1f %8.1f | %.2f\n", long(s.k), long(s.n),
                bytes / (1 << 20), ours.best, ours.median,
                ours.median * 2 * double(s.k) * double(s.n) / bytes, read.best, read.median,
                ours.median / read.median);
  }
  return 0;
}
