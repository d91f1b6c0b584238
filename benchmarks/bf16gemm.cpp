//===- benchmarks/bf16gemm.cpp - onnxc's bf16 GEMM kernels vs its f32 one ---===//
//
// For transformer shapes (M = 128, 512; K, N from MiniLM and BERT-base
// layers) and 1024^3, times every bf16 kernel the host runs (AMX,
// AVX512-BF16, portable) and the f32 packed GEMM in the same process on the
// same A, one thread, alternating, and prints GFLOP/s, the fraction of the
// measured AMX-BF16 peak (a loop of independent TDPBF16PS on tiles alone,
// like onnxc_bench_peak's FMA loop) and the speedup over f32. Weights are
// packed untimed, as onnxc packs them at compile time; with --cold-weights
// every run reads its own copy of B (1 GiB of copies in all), from DRAM as a
// model's weights come.
//
//   onnxc_bench_bf16gemm [--runs N] [--shape MxKxN]... [--cold-weights]
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/kernels/GemmEmitter.h"
#include "runtime/CpuFeatures.h"

#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace onnxc;
using namespace onnxc::bench;

namespace {

struct Shape {
  int64_t m, k, n;
};

template <typename F> double seconds(F &&f) {
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// Seconds for `iterations` rounds of four independent TDPBF16PS (each
/// 16 x 16 x 32 multiply-adds) on tiles that stay in the tile registers.
__attribute__((target("amx-tile,amx-bf16"), noinline)) double timeTileProducts(int64_t iterations) {
  alignas(64) unsigned char config[64] = {};
  config[0] = 1;
  for (int t = 0; t < 8; ++t) {
    config[16 + 2 * t] = 64;
    config[48 + t] = 16;
  }
  // Random bf16 operands in [0.5, 2) of either sign: the tile unit runs a
  // little faster on zeros.
  alignas(64) static uint16_t operand[16 * 32];
  uint32_t state = 12345;
  for (uint16_t &value : operand) {
    state = state * 1103515245u + 12345u;
    value = uint16_t(0x3f00 | ((state >> 16) & 0x80ff));
  }
  _tile_loadconfig(config);
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_loadd(4, operand, 64);
  _tile_loadd(5, operand, 64);
  _tile_loadd(6, operand, 64);
  _tile_loadd(7, operand, 64);
  auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < iterations; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  auto stop = std::chrono::steady_clock::now();
  alignas(64) static float sink[16 * 16];
  _tile_stored(0, sink, 64);
  _tile_release();
  return std::chrono::duration<double>(stop - start).count();
}

double amxPeakGflops() {
  const int64_t iterations = 2'000'000;
  timeTileProducts(iterations / 8);
  double best = 0;
  for (int r = 0; r < 5; ++r)
    best = std::max(best, double(iterations) * 4 * 16 * 16 * 32 * 2 / timeTileProducts(iterations) *
                              1e-9);
  return best;
}

std::vector<float> randomFloats(int64_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> values(static_cast<size_t>(count));
  for (float &v : values)
    v = dist(rng);
  return values;
}

struct Timed {
  std::string name;
  std::vector<double> gflops;
};

double best(const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); }

std::vector<Timed> benchmarkShape(KernelJit &jit, const Shape &s,
                                  const std::vector<Bf16GemmIsa> &isas, int runs,
                                  bool coldWeights) {
  static int counter = 0;
  std::vector<float> a = randomFloats(s.m * s.k, 1), b = randomFloats(s.k * s.n, 2);
  std::vector<float> c(size_t(s.m * s.n));
  // The f32 kernel, as onnxc compiles it for this host.
  const int64_t lanes = hostHasAvx512() ? GemmLanesAvx512 : GemmLanesAvx2;
  GemmBlocking blocking = chooseGemmBlocking(s.k, lanes);
  std::string f32Name = "f32_" + std::to_string(counter++);
  emitPackedGemm(jit.newModule(f32Name), PackedGemmSpec{f32Name, s.k, s.n, {}, blocking});
  std::vector<std::string> names;
  for (Bf16GemmIsa isa : isas) {
    names.push_back("bf16_" + std::to_string(counter++));
    emitBf16Gemm(jit.newModule(names.back()), Bf16GemmSpec{names.back(), s.k, s.n, {}, isa});
  }
  jit.compile();
  const int64_t copies = coldWeights ? std::max<int64_t>(2, (int64_t(1) << 28) / (s.k * s.n)) : 1;
  std::vector<float> f32Packed = packGemmWeights(b.data(), s.k, s.n, false, blocking);
  std::vector<uint16_t> bf16Packed = packBf16GemmWeights(b.data(), s.k, s.n, false);
  std::vector<float> f32Copies(f32Packed.size() * size_t(copies));
  std::vector<uint16_t> bf16Copies(bf16Packed.size() * size_t(copies));
  for (int64_t i = 0; i < copies; ++i) {
    std::copy(f32Packed.begin(), f32Packed.end(),
              f32Copies.begin() + i * int64_t(f32Packed.size()));
    std::copy(bf16Packed.begin(), bf16Packed.end(),
              bf16Copies.begin() + i * int64_t(bf16Packed.size()));
  }
  std::vector<Timed> timed(isas.size() + 1);
  timed[0].name = "f32";
  auto *f32 = jit.lookup<PackedGemmFn>(f32Name);
  const double flop = 2.0 * double(s.m) * double(s.k) * double(s.n);
  int64_t use = 0;
  for (int r = 0; r < runs; ++r) {
    const int64_t copy = use++ % copies;
    timed[0].gflops.push_back(flop * 1e-9 / seconds([&] {
                                f32(a.data(), s.k,
                                    f32Copies.data() + copy * int64_t(f32Packed.size()), c.data(),
                                    s.n, 0, s.m, nullptr, nullptr, 0, 0, s.n);
                              }));
    for (size_t i = 0; i < isas.size(); ++i) {
      timed[i + 1].name = bf16GemmIsaName(isas[i]);
      auto *kernel = jit.lookup<Bf16GemmFn>(names[i]);
      timed[i + 1].gflops.push_back(flop * 1e-9 / seconds([&] {
                                      kernel(a.data(), s.k,
                                             bf16Copies.data() + copy * int64_t(bf16Packed.size()),
                                             c.data(), s.n, 0, s.m, nullptr, nullptr, 0, 0, s.n);
                                    }));
    }
  }
  return timed;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 20;
  bool coldWeights = false;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    Shape s;
    if (arg == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else if (arg == "--cold-weights")
      coldWeights = true;
    else if (arg == "--shape" && i + 1 < argc &&
             std::sscanf(argv[++i], "%ldx%ldx%ld", &s.m, &s.k, &s.n) == 3)
      shapes.push_back(s);
    else {
      std::fprintf(stderr, "usage: %s [--runs N] [--shape MxKxN]... [--cold-weights]\n", argv[0]);
      return 2;
    }
  }
  if (shapes.empty()) {
    for (int64_t m : {128, 512})
      for (auto [k, n] : {std::pair<int64_t, int64_t>{384, 384},
                          {384, 1536},
                          {1536, 384},
                          {768, 768},
                          {768, 3072},
                          {3072, 768}})
        shapes.push_back({m, k, n});
    shapes.push_back({1024, 1024, 1024});
  }
  const TargetSelection host = TargetSelection::select();
  std::vector<Bf16GemmIsa> isas = {Bf16GemmIsa::Portable};
  double peak = 0;
  if (host.hasFeature("avx512bf16"))
    isas.push_back(Bf16GemmIsa::Avx512Bf16);
  std::string amxProblem = runtime::checkCpuFeatures("amx-tile,amx-bf16");
  if (amxProblem.empty() && host.hasFeature("avx512bf16")) {
    isas.push_back(Bf16GemmIsa::Amx);
    peak = amxPeakGflops();
  }
  KernelJit jit = KernelJit::forHost();
  std::printf("one thread; JIT for cpu '%s'; %s weights\n", jit.cpuName().c_str(),
              coldWeights ? "cold (DRAM)" : "warm");
  if (peak > 0)
    std::printf("measured AMX-BF16 peak %.1f GFLOP/s (TDPBF16PS on tiles alone)\n", peak);
  else
    std::printf("no AMX-BF16 here (%s): no peak to compare with\n", amxProblem.c_str());
  std::printf("GFLOP/s, best of %d runs; %%pk = of the AMX peak; x f32 = speedup over the f32 "
              "kernel\n",
              runs);
  for (const Shape &s : shapes) {
    std::vector<Timed> timed = benchmarkShape(jit, s, isas, runs, coldWeights);
    std::printf("%5ld %5ld %5ld |", s.m, s.k, s.n);
    for (const Timed &t : timed) {
      std::printf(" %s %7.1f", t.name.c_str(), best(t.gflops));
      if (&t != &timed[0]) {
        if (peak > 0)
          std::printf(" (%4.1f%%pk", 100 * best(t.gflops) / peak);
        else
          std::printf(" (");
        std::printf(" %4.2fx f32)", best(t.gflops) / best(timed[0].gflops));
      }
      std::printf(" |");
    }
    std::printf("\n");
  }
  return 0;
}
