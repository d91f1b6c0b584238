//===- benchmarks/PeakFlops.h - This core's fp32 FMA peak, measured --------===//
//
// Shared by onnxc_bench_peak and onnxc_bench_gemm so every kernel figure is
// a fraction of the same measured number. The loop runs 12 independent
// <8 x float> FMA chains: with 2 FMA pipes and 4-5 cycles of latency a core
// needs 8-10 chains in flight, so 12 leave no pipe idle, and 12 accumulators
// plus 2 constants fit the 16 ymm registers without spills. On a CPU with
// AVX-512 the same loop runs on <16 x float> zmm registers (the peak of the
// 16-lane GEMM kernels; twice the 8-lane one where the FMA units are 512
// bits wide, about the same where they are 256 bits and double-pumped).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <vector>

namespace onnxc::bench {

/// Seconds for `iterations` rounds of 12 independent 8-wide FMAs. Twelve
/// named accumulators, written out, because an array plus an inner loop is
/// not reliably unrolled into registers at -O2.
__attribute__((target("avx2,fma"), noinline)) inline double timeFmaChains(int64_t iterations) {
  __m256 a0 = _mm256_set1_ps(0), a1 = _mm256_set1_ps(1), a2 = _mm256_set1_ps(2),
         a3 = _mm256_set1_ps(3), a4 = _mm256_set1_ps(4), a5 = _mm256_set1_ps(5),
         a6 = _mm256_set1_ps(6), a7 = _mm256_set1_ps(7), a8 = _mm256_set1_ps(8),
         a9 = _mm256_set1_ps(9), a10 = _mm256_set1_ps(10), a11 = _mm256_set1_ps(11);
  // x * 0.99999994 + 1e-7 stays bounded and normal for any number of steps.
  const __m256 scale = _mm256_set1_ps(0.99999994f), offset = _mm256_set1_ps(1e-7f);
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    a0 = _mm256_fmadd_ps(a0, scale, offset);
    a1 = _mm256_fmadd_ps(a1, scale, offset);
    a2 = _mm256_fmadd_ps(a2, scale, offset);
    a3 = _mm256_fmadd_ps(a3, scale, offset);
    a4 = _mm256_fmadd_ps(a4, scale, offset);
    a5 = _mm256_fmadd_ps(a5, scale, offset);
    a6 = _mm256_fmadd_ps(a6, scale, offset);
    a7 = _mm256_fmadd_ps(a7, scale, offset);
    a8 = _mm256_fmadd_ps(a8, scale, offset);
    a9 = _mm256_fmadd_ps(a9, scale, offset);
    a10 = _mm256_fmadd_ps(a10, scale, offset);
    a11 = _mm256_fmadd_ps(a11, scale, offset);
    // Keeps the compiler from collapsing or reordering the chains away.
    asm volatile(""
                 : "+x"(a0), "+x"(a1), "+x"(a2), "+x"(a3), "+x"(a4), "+x"(a5), "+x"(a6), "+x"(a7),
                   "+x"(a8), "+x"(a9), "+x"(a10), "+x"(a11));
  }
  auto stop = std::chrono::steady_clock::now();
  __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  sum = _mm256_add_ps(sum, _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11)));
  float sink[8];
  _mm256_storeu_ps(sink, sum);
  asm volatile("" ::"m"(sink));
  return std::chrono::duration<double>(stop - start).count();
}

/// The same 12 chains on <16 x float>.
__attribute__((target("avx512f"), noinline)) inline double timeFmaChains512(int64_t iterations) {
  __m512 a0 = _mm512_set1_ps(0), a1 = _mm512_set1_ps(1), a2 = _mm512_set1_ps(2),
         a3 = _mm512_set1_ps(3), a4 = _mm512_set1_ps(4), a5 = _mm512_set1_ps(5),
         a6 = _mm512_set1_ps(6), a7 = _mm512_set1_ps(7), a8 = _mm512_set1_ps(8),
         a9 = _mm512_set1_ps(9), a10 = _mm512_set1_ps(10), a11 = _mm512_set1_ps(11);
  const __m512 scale = _mm512_set1_ps(0.99999994f), offset = _mm512_set1_ps(1e-7f);
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    a0 = _mm512_fmadd_ps(a0, scale, offset);
    a1 = _mm512_fmadd_ps(a1, scale, offset);
    a2 = _mm512_fmadd_ps(a2, scale, offset);
    a3 = _mm512_fmadd_ps(a3, scale, offset);
    a4 = _mm512_fmadd_ps(a4, scale, offset);
    a5 = _mm512_fmadd_ps(a5, scale, offset);
    a6 = _mm512_fmadd_ps(a6, scale, offset);
    a7 = _mm512_fmadd_ps(a7, scale, offset);
    a8 = _mm512_fmadd_ps(a8, scale, offset);
    a9 = _mm512_fmadd_ps(a9, scale, offset);
    a10 = _mm512_fmadd_ps(a10, scale, offset);
    a11 = _mm512_fmadd_ps(a11, scale, offset);
    asm volatile(""
                 : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6), "+v"(a7),
                   "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));
  }
  auto stop = std::chrono::steady_clock::now();
  __m512 sum = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
  sum = _mm512_add_ps(sum, _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11)));
  float sink[16];
  _mm512_storeu_ps(sink, sum);
  asm volatile("" ::"m"(sink));
  return std::chrono::duration<double>(stop - start).count();
}

/// Whether this CPU runs the 16-lane chains (and onnxc's 16-lane GEMM).
inline bool hostHasAvx512() { return __builtin_cpu_supports("avx512f"); }

/// Seconds for `iterations` rounds of 12 FMAs of `lanes` (8 or 16) floats.
inline double timeFmaChainsOf(int lanes, int64_t iterations) {
  return lanes == 16 ? timeFmaChains512(iterations) : timeFmaChains(iterations);
}

/// GFLOP/s of each of `repeats` timed runs of about 0.1 s, at `lanes` floats
/// per vector (8: AVX2; 16: AVX-512, only where hostHasAvx512()).
inline std::vector<double> measurePeakGflops(int repeats = 15, int lanes = 8) {
  const int64_t iterations = 20'000'000;
  timeFmaChainsOf(lanes, iterations / 4); // wake the core up to its steady clock
  std::vector<double> gflops;
  for (int r = 0; r < repeats; ++r)
    gflops.push_back(double(iterations) * 12 * 2 * lanes / timeFmaChainsOf(lanes, iterations) *
                     1e-9);
  return gflops;
}

/// Median of `values` (copied, so the caller's order is kept).
inline double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : 0.5 * (values[mid - 1] + values[mid]);
}

} // namespace onnxc::bench
