//===- benchmarks/peak.cpp - fp32 FMA peak of one core ---------------------===//
//
// Prints this core's measured fp32 FMA throughput (the denominator of every
// "fraction of peak" figure) and, from a chain of dependent 1-cycle integer
// adds, the core clock and FLOP per cycle. Run it pinned and on an idle
// machine; the max over runs is the peak, the median shows the noise.
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include <chrono>
#include <cstdio>

namespace {

/// Cycles per second from a loop of 16 dependent `add`s per iteration: each
/// costs one cycle on every x86 core of the last decade, and the loop
/// counter runs beside the chain, so the loop takes 16 cycles per iteration.
double measureClockHz() {
  const int64_t iterations = 5'000'000;
  uint64_t value = 0;
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i)
    asm volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                 "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                 "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\t"
                 "add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0"
                 : "+r"(value));
  auto stop = std::chrono::steady_clock::now();
  return double(iterations) * 16 / std::chrono::duration<double>(stop - start).count();
}

} // namespace

int main() {
  using namespace onnxc::bench;
  // Clock and FMA runs alternate, so on a shared machine each FLOP/cycle
  // ratio compares two measurements taken under the same contention.
  const int runs = 15;
  const int64_t iterations = 20'000'000;
  timeFmaChains(iterations / 4); // wake the core up to its steady clock
  std::vector<double> gflops, clocks, flopPerCycle;
  for (int r = 0; r < runs; ++r) {
    double before = measureClockHz();
    gflops.push_back(double(iterations) * 12 * 16 / timeFmaChains(iterations) * 1e-9);
    clocks.push_back(std::max(before, measureClockHz()));
    flopPerCycle.push_back(gflops.back() * 1e9 / clocks.back());
  }
  std::printf("fp32 FMA peak, one core (12 chains of 8-wide FMA, %d runs):\n", runs);
  std::printf("  max %.1f GFLOP/s   median %.1f   min %.1f\n",
              *std::max_element(gflops.begin(), gflops.end()), median(gflops),
              *std::min_element(gflops.begin(), gflops.end()));
  std::printf("  clock ~%.2f GHz max, %.2f median (dependent-add chain)\n",
              *std::max_element(clocks.begin(), clocks.end()) * 1e-9, median(clocks) * 1e-9);
  std::printf("  %.1f FLOP/cycle median (32 = two 8-wide FMA pipes)\n", median(flopPerCycle));
  return 0;
}
