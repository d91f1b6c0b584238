//===- benchmarks/gemm.cpp - onnxc's JIT'd GEMM vs OpenBLAS, one thread ----===//
//
// For transformer GEMM shapes (M tokens = 128, 512, 2048; K, N from the
// 384/768/1536/3072 of MiniLM and BERT-base layers) and 1024^3, times the
// packed-B kernel of codegen/kernels/GemmEmitter and cblas_sgemm (one thread) in the
// same process on the same buffers, alternating between the two, and prints
// min/median GFLOP/s, fraction of the measured FMA peak, and the ratio.
// Weight packing is not timed: onnxc packs weights at compile time.
//
//   onnxc_bench_gemm [--runs N] [--shape MxKxN]... [--kc N] [--mc N] [--pack-a on|off] [--asm PATH]
//                    [--lanes 8|16] [--cpu-clock] [--cold-weights]
//
// --lanes picks the kernel width (default: 16 where the host has AVX-512F,
// as onnxc compiles for it, else 8); the peak is measured at the same width.
//
// --cpu-clock times everything (the peak included) in this thread's CPU
// time instead of wall time: on a machine shared with other jobs, a run
// that was preempted then still counts only the time it ran (the cache
// pollution by the other jobs remains). On an idle machine both agree.
//
// --cold-weights gives every run its own copy of B (the copies 1 GiB in
// all, in 2 MiB pages where the kernel allows, as a model's .so is mapped),
// so that B comes from DRAM as a model's weights do, not from the cache
// the previous run left it in. On Sapphire Rapids this costs 10-20% at
// ViT's shapes: the in-model rate, which a warm B overstates.
//
// --asm writes the -O3 assembly of the first shape's kernel (as the JIT
// compiles it for this host) to PATH, for checking the micro-kernel's inner
// loop for spills and its loads and broadcasts.
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/ObjectEmitter.h"
#include "codegen/kernels/GemmEmitter.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

#include <cblas.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <random>
#include <string>
#include <sys/mman.h>

using namespace onnxc;
using namespace onnxc::bench;

namespace {

struct Shape {
  int64_t m, k, n;
};

struct AlignedFree {
  void operator()(float *p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], AlignedFree>;

Buffer allocate(int64_t count) {
  size_t bytes = (size_t(count) * sizeof(float) + 63) / 64 * 64;
  return Buffer(static_cast<float *>(std::aligned_alloc(64, bytes)));
}

/// Large buffers in 2 MiB pages where the kernel gives them, as a compiled
/// model's weights are mapped (its .so's read-only segment).
Buffer allocateHuge(int64_t count) {
  constexpr size_t page = size_t(2) << 20;
  size_t bytes = (size_t(count) * sizeof(float) + page - 1) / page * page;
  auto *data = static_cast<float *>(std::aligned_alloc(page, bytes));
  madvise(data, bytes, MADV_HUGEPAGE);
  return Buffer(data);
}

Buffer randomBuffer(int64_t count, unsigned seed) {
  Buffer buffer = allocate(count);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (int64_t i = 0; i < count; ++i)
    buffer[size_t(i)] = dist(rng);
  return buffer;
}

bool useCpuClock = false;

double threadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

template <typename F> double seconds(F &&f) {
  if (useCpuClock) {
    double start = threadCpuSeconds();
    f();
    return threadCpuSeconds() - start;
  }
  auto start = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

/// measurePeakGflops, timed by `seconds` (so by the CPU clock if chosen).
std::vector<double> peakSamples(int repeats, int lanes) {
  if (!useCpuClock)
    return measurePeakGflops(repeats, lanes);
  const int64_t iterations = 20'000'000;
  timeFmaChainsOf(lanes, iterations / 4);
  std::vector<double> gflops;
  for (int r = 0; r < repeats; ++r)
    gflops.push_back(double(iterations) * 12 * 2 * lanes /
                     seconds([&] { timeFmaChainsOf(lanes, iterations); }) * 1e-9);
  return gflops;
}

struct Options {
  int runs = 0; // 0: enough runs for ~0.5 s per library and shape, at least 5
  std::vector<Shape> shapes;
  GemmBlocking blocking{0, 0};
  int packA = -1; // -1: as chooseGemmBlocking decides
  int lanes = hostHasAvx512() ? 16 : 8;
  std::string asmPath;
  // Each run reads a different copy of B, the copies together 1 GiB: B then
  // comes from DRAM, as a model's weights do (ViT-base's are 344 MB), rather
  // than from the cache where the previous run left it.
  bool coldWeights = false;
};

Options parseOptions(int argc, char **argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&] {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "missing value after %s\n", arg.c_str());
        std::exit(2);
      }
      return std::string(argv[++i]);
    };
    if (arg == "--runs")
      options.runs = std::stoi(value());
    else if (arg == "--kc")
      options.blocking.kc = std::stoll(value());
    else if (arg == "--pack-a")
      options.packA = value() == "on" ? 1 : 0;
    else if (arg == "--mc")
      options.blocking.mc = std::stoll(value());
    else if (arg == "--lanes") {
      options.lanes = std::stoi(value());
      if (options.lanes != 8 && (options.lanes != 16 || !hostHasAvx512())) {
        std::fprintf(stderr, "--lanes is 8, or 16 on a CPU with AVX-512F\n");
        std::exit(2);
      }
    } else if (arg == "--cpu-clock")
      useCpuClock = true;
    else if (arg == "--cold-weights")
      options.coldWeights = true;
    else if (arg == "--asm")
      options.asmPath = value();
    else if (arg == "--shape") {
      Shape s;
      if (std::sscanf(value().c_str(), "%ldx%ldx%ld", &s.m, &s.k, &s.n) != 3) {
        std::fprintf(stderr, "--shape wants MxKxN\n");
        std::exit(2);
      }
      options.shapes.push_back(s);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--runs N] [--shape MxKxN]... [--kc N] [--mc N] [--pack-a on|off] "
                   "[--asm PATH] [--lanes 8|16] "
                   "[--cpu-clock] [--cold-weights]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (options.shapes.empty()) {
    const std::pair<int64_t, int64_t> layers[] = {{384, 384}, {384, 1536}, {1536, 384},
                                                  {768, 768}, {768, 3072}, {3072, 768}};
    for (int64_t m : {128, 512, 2048})
      for (auto [k, n] : layers)
        options.shapes.push_back({m, k, n});
    options.shapes.push_back({1024, 1024, 1024});
  }
  return options;
}

/// Timing of one shape; printed once all shapes ran, against the best peak.
struct Result {
  Shape shape;
  int64_t kc;
  bool packA;
  int runs;
  std::vector<double> onnxcGflops, blasGflops;
  double worstError;
};

GemmBlocking blockingFor(const Shape &s, const Options &options) {
  GemmBlocking blocking = chooseGemmBlocking(s.k, options.lanes);
  if (options.blocking.kc > 0)
    blocking.kc = options.blocking.kc;
  if (options.blocking.mc > 0)
    blocking.mc = options.blocking.mc;
  if (options.packA >= 0)
    blocking.packA = options.packA != 0;
  return blocking;
}

/// Writes the host assembly of the kernel benchmarkShape would run.
void writeAssembly(const Shape &s, const Options &options) {
  llvm::LLVMContext context;
  llvm::Module module("gemm_asm", context);
  emitPackedGemm(module, PackedGemmSpec{"gemm", s.k, s.n, {}, blockingFor(s, options)});
  emitModule(module, TargetSelection::select(), EmitKind::Assembly, options.asmPath);
  std::printf("wrote the assembly of %ldx%ldx%ld to %s\n", s.m, s.k, s.n, options.asmPath.c_str());
}

Result benchmarkShape(KernelJit &jit, const Shape &s, const Options &options) {
  GemmBlocking blocking = blockingFor(s, options);
  std::string name =
      "gemm_" + std::to_string(s.m) + "_" + std::to_string(s.k) + "_" + std::to_string(s.n);
  emitPackedGemm(jit.newModule(name), PackedGemmSpec{name, s.k, s.n, {}, blocking});
  jit.compile();
  auto *kernel = jit.lookup<PackedGemmFn>(name);

  Buffer a = randomBuffer(s.m * s.k, 1), b = randomBuffer(s.k * s.n, 2);
  const int64_t packedSize = packedGemmWeightsSize(s.k, s.n, blocking.nr());
  Buffer cOnnxc = allocate(s.m * s.n), cBlas = allocate(s.m * s.n);
  // With --cold-weights, copies of B (both layouts) that runs take in turn;
  // the first is packed, the others copied from it.
  const int64_t copies =
      options.coldWeights ? std::max<int64_t>(2, (int64_t(1) << 28) / (packedSize + s.k * s.n)) : 1;
  Buffer packedCopies = allocateHuge(packedSize * copies),
         bCopies = allocateHuge(s.k * s.n * copies);
  packGemmWeights(b.get(), s.k, s.n, false, blocking, packedCopies.get());
  for (int64_t c = 0; c < copies; ++c) {
    if (c > 0)
      std::copy(packedCopies.get(), packedCopies.get() + packedSize,
                packedCopies.get() + c * packedSize);
    std::copy(b.get(), b.get() + s.k * s.n, bCopies.get() + c * s.k * s.n);
  }
  int64_t onnxcCopy = 0, blasCopy = 0;
  auto runOnnxc = [&] {
    const float *weights = packedCopies.get() + (onnxcCopy++ % copies) * packedSize;
    kernel(a.get(), s.k, weights, cOnnxc.get(), s.n, 0, s.m, nullptr, nullptr, 0, 0, s.n);
  };
  auto runBlas = [&] {
    const float *weights = bCopies.get() + (blasCopy++ % copies) * s.k * s.n;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, int(s.m), int(s.n), int(s.k), 1.0f,
                a.get(), int(s.k), weights, int(s.n), 0.0f, cBlas.get(), int(s.n));
  };
  double flop = 2.0 * double(s.m) * double(s.k) * double(s.n);
  int runs = options.runs;
  if (runs <= 0) {
    double once = seconds(runBlas) + seconds(runOnnxc);
    runs = std::max(5, std::min(200, int(1.0 / once)));
  }
  std::vector<double> onnxcGflops, blasGflops;
  for (int r = 0; r < runs; ++r) {
    onnxcGflops.push_back(flop / seconds(runOnnxc) * 1e-9);
    blasGflops.push_back(flop / seconds(runBlas) * 1e-9);
  }
  double worstError = 0;
  for (int64_t i = 0; i < s.m * s.n; ++i)
    worstError = std::max(worstError, double(std::fabs(cOnnxc[size_t(i)] - cBlas[size_t(i)])));

  return Result{s, blocking.kc, blocking.packA, runs, onnxcGflops, blasGflops, worstError};
}

void printResult(const Result &r, double peak) {
  // "best" is the fastest run (what min time gives), "median" the typical one.
  auto best = [](const std::vector<double> &v) { return *std::max_element(v.begin(), v.end()); };
  double onnxcBest = best(r.onnxcGflops), blasBest = best(r.blasGflops);
  std::printf("%5ld %5ld %5ld | %6.1f %6.1f %5.1f%% | %6.1f %6.1f %5.1f%% | %5.2f %5.2f | %4d "
              "kc=%ld %s %.0e\n",
              r.shape.m, r.shape.k, r.shape.n, onnxcBest, median(r.onnxcGflops),
              100 * onnxcBest / peak, blasBest, median(r.blasGflops), 100 * blasBest / peak,
              onnxcBest / blasBest, median(r.onnxcGflops) / median(r.blasGflops), r.runs, r.kc,
              r.packA ? "A packed" : "A direct", r.worstError);
}

} // namespace

int main(int argc, char **argv) {
  Options options = parseOptions(argc, argv);
  openblas_set_num_threads(1);
  if (!options.asmPath.empty())
    writeAssembly(options.shapes.front(), options);
  KernelJit jit = KernelJit::forHost();
  // Peak samples are taken between shapes too: on a shared machine the
  // contention changes during the run, and the best sample is the peak.
  std::vector<double> peakRuns = peakSamples(5, options.lanes);
  std::vector<Result> results;
  for (const Shape &shape : options.shapes) {
    results.push_back(benchmarkShape(jit, shape, options));
    for (double sample : peakSamples(2, options.lanes))
      peakRuns.push_back(sample);
  }
  double peak = *std::max_element(peakRuns.begin(), peakRuns.end());
  std::printf("%s clock; ", useCpuClock ? "thread CPU" : "wall");
  std::printf("one thread; onnxc JIT for cpu '%s', %d-lane kernel; OpenBLAS core %s (%s)\n",
              jit.cpuName().c_str(), options.lanes, openblas_get_corename(), openblas_get_config());
  std::printf(
      "measured fp32 FMA peak at %d lanes %.1f GFLOP/s (best of %zu samples, median %.1f)\n",
      options.lanes, peak, peakRuns.size(), median(peakRuns));
  std::printf("GFLOP/s: best = fastest run, med = median run; %%pk = best / peak\n");
  std::printf("    M     K     N |  onnxc    med   %%pk | OpenBLAS  med   %%pk | ratio  med | "
              "runs\n");
  for (const Result &result : results)
    printResult(result, peak);
  return 0;
}
