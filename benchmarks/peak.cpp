//===- benchmarks/peak.cpp - fp32 FMA peak of one core ---------------------===//
//
// Prints this core's measured fp32 FMA throughput (the denominator of every
// "fraction of peak" figure) at 8 lanes and, where the CPU has AVX-512, at
// 16, and from a chain of dependent integer multiplies the core clock and
// FLOP per cycle. Run it pinned and on an idle machine; the max over runs is
// the peak, the median shows the noise.
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include <chrono>
#include <cstdio>

namespace {

/// Cycles per second from a loop of 16 dependent 64-bit `imul`s per
/// iteration: 3 cycles each on every x86 core of the last fifteen years
/// (Intel since Core 2, AMD since Zen), so an iteration takes 48 cycles. A
/// chain of `add $1` is no clock: Golden Cove and later (Sapphire and
/// Emerald Rapids) fold small immediate adds at rename and read 15 GHz.
double measureClockHz() {
  const int64_t iterations = 2'000'000;
  uint64_t value = 3, one = 1;
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i)
    asm volatile("imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
                 "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
                 "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0\n\t"
                 "imul %1, %0\n\timul %1, %0\n\timul %1, %0\n\timul %1, %0"
                 : "+r"(value)
                 : "r"(one));
  auto stop = std::chrono::steady_clock::now();
  return double(iterations) * 16 * 3 / std::chrono::duration<double>(stop - start).count();
}

/// Alternates clock and FMA runs, so each FLOP/cycle ratio compares two
/// measurements taken under the same contention, and prints one block.
void reportPeak(int lanes) {
  using namespace onnxc::bench;
  const int runs = 15;
  const int64_t iterations = 20'000'000;
  timeFmaChainsOf(lanes, iterations / 4); // wake the core up to its steady clock
  std::vector<double> gflops, clocks, flopPerCycle;
  for (int r = 0; r < runs; ++r) {
    double before = measureClockHz();
    gflops.push_back(double(iterations) * 12 * 2 * lanes / timeFmaChainsOf(lanes, iterations) *
                     1e-9);
    clocks.push_back(std::max(before, measureClockHz()));
    flopPerCycle.push_back(gflops.back() * 1e9 / clocks.back());
  }
  std::printf("fp32 FMA peak, one core (12 chains of %d-wide FMA, %d runs):\n", lanes, runs);
  std::printf("  max %.1f GFLOP/s   median %.1f   min %.1f\n",
              *std::max_element(gflops.begin(), gflops.end()), median(gflops),
              *std::min_element(gflops.begin(), gflops.end()));
  std::printf("  clock ~%.2f GHz max, %.2f median (dependent-imul chain)\n",
              *std::max_element(clocks.begin(), clocks.end()) * 1e-9, median(clocks) * 1e-9);
  std::printf("  %.1f FLOP/cycle median (%d = two %d-wide FMA pipes)\n", median(flopPerCycle),
              4 * lanes, lanes);
}

} // namespace

int main() {
  reportPeak(8);
  if (onnxc::bench::hostHasAvx512())
    reportPeak(16);
  return 0;
}
