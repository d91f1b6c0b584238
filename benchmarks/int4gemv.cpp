//===- benchmarks/int4gemv.cpp - a decoder step's int4 GEMV vs a plain read ----===//
//
// A decoder step at batch 1 reads every weight once: its time is the bytes
// of the weights over the bandwidth they stream in at. For the weight shapes
// of a TinyLlama-sized LLaMA (hidden 2048, 4 KV heads of 64, FFN 5632, vocab
// 32000) this times codegen/kernels/Int4Gemv.h's kernel (one row, int4 in
// blocks of 32 with zero points) and, on a buffer of the same bytes, a plain
// read (eight independent vector sums). Each shape's weights are copied
// until the copies pass --mib (default 512 MiB, past any L3), and the calls
// walk the copies in turn, so every byte comes from DRAM as in a real step;
// --mib 0 keeps one copy (cache-resident rates). It prints GB/s of packed
// int4 bytes, the kernel's fraction of the read, the int8-activation kernel
// (Int4Int8Gemv.h: MatMulNBits at accuracy_level 4) likewise, and the f32
// GEMV (GemvEmitter.h) on f32 weights of the shape, whose bytes are 6x more.
// The plain read walks four streams (a quarter of the buffer each), as the
// kernels' panel groups do; one stream reads less on some cores.
// Thread CPU time, best and median of the runs (the machine is shared).
//
//   onnxc_bench_int4gemv [--runs N] [--shape KxN]... [--mib M] [--lanes 8|16] [--chunks C]
//                        [--shared-zero]
//
// --shared-zero packs the weights without zero points (MatMulNBits as onnxruntime-genai's
// builder writes it: every zero point 8), so at 16 lanes the f32-activation kernel takes the
// shared zero point's table (Int4Gemv.h).
//
// --chunks C calls both int4 kernels once per chunk of columns, C chunks of whole groups of
// four panels (the lowering's tasks: 16), instead of once over all of N.
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include "codegen/KernelJit.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/GemvEmitter.h"
#include "codegen/kernels/Int4Gemv.h"
#include "codegen/kernels/Int4Int8Gemv.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <functional>
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

/// Four streams of `quarter` bytes each (a multiple of 64), summed side by side.
__attribute__((target("avx2"), noinline)) float readAll4(const uint8_t *p, size_t quarter) {
  const float *f0 = reinterpret_cast<const float *>(p), *f1 = f0 + quarter / 4,
              *f2 = f1 + quarter / 4, *f3 = f2 + quarter / 4;
  __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
  for (size_t i = 0; i < quarter / 4; i += 16) {
    a0 = _mm256_add_ps(a0, _mm256_loadu_ps(f0 + i));
    a1 = _mm256_add_ps(a1, _mm256_loadu_ps(f0 + i + 8));
    a2 = _mm256_add_ps(a2, _mm256_loadu_ps(f1 + i));
    a3 = _mm256_add_ps(a3, _mm256_loadu_ps(f1 + i + 8));
    a4 = _mm256_add_ps(a4, _mm256_loadu_ps(f2 + i));
    a5 = _mm256_add_ps(a5, _mm256_loadu_ps(f2 + i + 8));
    a6 = _mm256_add_ps(a6, _mm256_loadu_ps(f3 + i));
    a7 = _mm256_add_ps(a7, _mm256_loadu_ps(f3 + i + 8));
  }
  __m256 sum = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
  float lanes[8];
  _mm256_storeu_ps(lanes, sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + lanes[4] + lanes[5] + lanes[6] + lanes[7];
}

/// The integer kernel the host's best instructions give (as the compiler picks).
IntegerGemmIsa integerIsa() { return chooseIntegerGemmIsa(TargetSelection::select()); }

struct Stats {
  double best, median;
};

/// GB/s of `bytes` per call over `runs` timed batches of calls lasting ~50 ms.
Stats measure(const std::function<void()> &call, double bytes, int runs) {
  call();
  int calls = 1;
  for (double t = 0; t < 0.05; calls *= 2) {
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

constexpr int64_t kBlock = 32;

/// `copies` copies of `one`, one after another, so calls can walk them.
std::vector<uint8_t> replicate(const std::vector<uint8_t> &one, int64_t copies) {
  std::vector<uint8_t> all(one.size() * size_t(copies) + 256);
  for (int64_t c = 0; c < copies; ++c)
    std::memcpy(all.data() + size_t(c) * one.size(), one.data(), one.size());
  return all;
}

/// The f32-activation kernel's spec for a shape.
Int4GemvSpec f32Spec(const Shape &s, int64_t lanes, bool sharedZero) {
  Int4GemvSpec spec{"", s.k, s.n, kBlock, lanes, 1};
  if (sharedZero && lanes == 16)
    spec.uniformZero = int4UniformZeroCode(nullptr, DType::U4, 0);
  spec.name = int4GemvKernelName(spec);
  return spec;
}

/// body(begin, end) over `chunks` ranges of whole groups of 4 of `panels`
/// panels, sizes as even as the groups allow: BlockQuantizedMatMulLowering's
/// column chunks.
template <typename Body> void forEachChunk(int64_t panels, int64_t chunks, const Body &body) {
  const int64_t groups = (panels + 3) / 4, count = std::min(chunks, groups);
  for (int64_t c = 0; c < count; ++c)
    body(c * groups / count * 4, std::min(panels, (c + 1) * groups / count * 4));
}

void runShape(KernelJit &jit, const Shape &s, int64_t lanes, double mib, int runs, int64_t chunks,
              bool sharedZero) {
  std::mt19937 rng(1);
  std::uniform_int_distribution<int> code(0, 15);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const int64_t blocks = (s.k + kBlock - 1) / kBlock;
  std::vector<int8_t> w(size_t(s.k * s.n)), zeros(size_t(blocks * s.n));
  std::vector<float> scales(size_t(blocks * s.n)), x(size_t(s.k)), y(size_t(s.n + 64));
  for (int8_t &v : w)
    v = int8_t(code(rng));
  for (int8_t &v : zeros)
    v = int8_t(code(rng));
  for (float &v : scales)
    v = 0.01f * (1.5f + dist(rng));
  for (float &v : x)
    v = dist(rng);
  const int8_t *zeroPoints = sharedZero ? nullptr : zeros.data();
  const std::vector<uint8_t> one =
      packInt4GemvWeights(w.data(), DType::U4, scales.data(), zeroPoints, s.k, s.n, kBlock, lanes);
  const double bytes = double(one.size());
  const int64_t copies = std::max<int64_t>(1, int64_t(mib * (1 << 20) / bytes));
  const std::vector<uint8_t> all = replicate(one, copies);
  auto *int4 = jit.lookup<Int4GemvFn>(f32Spec(s, lanes, sharedZero).name);
  const int64_t panels = (s.n + lanes - 1) / lanes;
  int64_t next = 0;
  Stats ours = measure(
      [&] {
        const uint8_t *weights = all.data() + size_t(next) * one.size();
        forEachChunk(panels, chunks, [&](int64_t begin, int64_t end) {
          int4(x.data(), s.k, weights, y.data(), s.n, begin, end);
        });
        next = (next + 1) % copies;
      },
      bytes, runs);
  volatile float sink = 0;
  const size_t quarter = one.size() / 4 / 64 * 64;
  next = 0;
  Stats read = measure(
      [&] {
        sink = sink + readAll4(all.data() + size_t(next) * one.size(), quarter);
        next = (next + 1) % copies;
      },
      double(quarter * 4), runs);

  // The int8-activation kernel on its own packing of the same weights.
  const std::vector<uint8_t> oneInt8 =
      packInt4Int8GemvWeights(w.data(), DType::U4, scales.data(), zeroPoints, s.k, s.n, kBlock);
  const double int8Bytes = double(oneInt8.size());
  const int64_t int8Copies = std::max<int64_t>(1, int64_t(mib * (1 << 20) / int8Bytes));
  const std::vector<uint8_t> allInt8 = replicate(oneInt8, int8Copies);
  std::vector<uint8_t> xq(size_t(int4Int8RowBytes(s.k, kBlock)));
  jit.lookup<Int4RowQuantizeFn>("quantize_" + std::to_string(s.k) + "x" +
                                std::to_string(s.n))(x.data(), s.k, xq.data(), 0, 1);
  Int4Int8GemvSpec int8Spec{"", s.k, s.n, kBlock, 1, integerIsa()};
  auto *int8 = jit.lookup<Int4Int8GemvFn>(int4Int8GemvKernelName(int8Spec));
  next = 0;
  const int64_t int8Panels = (s.n + 7) / 8;
  Stats ours8 = measure(
      [&] {
        const uint8_t *weights = allInt8.data() + size_t(next) * oneInt8.size();
        forEachChunk(int8Panels, chunks, [&](int64_t begin, int64_t end) {
          int8(xq.data(), weights, y.data(), s.n, begin, end);
        });
        next = (next + 1) % int8Copies;
      },
      int8Bytes, runs);

  // The f32 GEMV on the same shape: f32 weights, the same number of copies' bytes.
  const int64_t padded = gemmPaddedColumns(s.n, 2 * lanes);
  const size_t floats = size_t(s.k * padded);
  const int64_t floatCopies = std::max<int64_t>(1, int64_t(mib * (1 << 20) / (floats * 4.0)));
  std::vector<float> dense(size_t(s.k * s.n));
  for (float &v : dense)
    v = dist(rng);
  std::vector<float> packedF32(floats * size_t(floatCopies));
  for (int64_t c = 0; c < floatCopies; ++c)
    packGemmWeights(dense.data(), s.k, s.n, false, gemvBlocking(s.k, lanes),
                    packedF32.data() + size_t(c) * floats);
  auto *f32 =
      jit.lookup<PackedGemvFn>("f32_gemv_" + std::to_string(s.k) + "x" + std::to_string(s.n));
  std::vector<float> yPadded(static_cast<size_t>(padded));
  next = 0;
  Stats dense32 = measure(
      [&] {
        f32(x.data(), packedF32.data() + size_t(next) * floats, nullptr, yPadded.data());
        next = (next + 1) % floatCopies;
      },
      double(floats) * 4, runs);
  // Per step: milliseconds for the weights of this shape.
  std::printf("%5ldx%-6ld %8.2f %6ld | %8.1f %7.1f | %8.1f %6.3f %5.2f | %8.1f %6.3f %5.2f | %8.1f "
              "%7.3f\n",
              long(s.k), long(s.n), bytes / (1 << 20), long(copies), read.best, read.median,
              ours.median, bytes / ours.median * 1e-6, ours.median / read.median, ours8.median,
              int8Bytes / ours8.median * 1e-6, ours8.median / read.median, dense32.median,
              double(floats) * 4 / dense32.median * 1e-6);
}

} // namespace

int main(int argc, char **argv) {
  int runs = 9;
  double mib = 512;
  int64_t chunks = 1;
  bool sharedZero = false;
  int64_t lanes = hostHasAvx512() ? 16 : 8;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--runs" && i + 1 < argc) {
      runs = std::atoi(argv[++i]);
    } else if (arg == "--mib" && i + 1 < argc) {
      mib = std::atof(argv[++i]);
    } else if (arg == "--shared-zero") {
      sharedZero = true;
    } else if (arg == "--chunks" && i + 1 < argc) {
      chunks = std::max(1, std::atoi(argv[++i]));
    } else if (arg == "--lanes" && i + 1 < argc) {
      lanes = std::atoi(argv[++i]);
    } else if (arg == "--shape" && i + 1 < argc) {
      Shape s{};
      if (std::sscanf(argv[++i], "%ldx%ld", &s.k, &s.n) != 2) {
        std::fprintf(stderr, "--shape wants KxN\n");
        return 2;
      }
      shapes.push_back(s);
    } else {
      std::fprintf(stderr, "usage: onnxc_bench_int4gemv [--runs N] [--shape KxN]... [--mib M] "
                           "[--lanes 8|16] [--chunks C] [--shared-zero]\n");
      return 2;
    }
  }
  if (shapes.empty()) // TinyLlama-1.1B: q/o, k/v, gate/up, down, the LM head
    shapes = {{2048, 2048}, {2048, 256}, {2048, 5632}, {5632, 2048}, {2048, 32000}};
  KernelJit jit = KernelJit::forHost();
  for (const Shape &s : shapes) {
    llvm::Module &module = jit.newModule("m" + std::to_string(s.k) + "x" + std::to_string(s.n));
    emitInt4Gemv(module, f32Spec(s, lanes, sharedZero));
    Int4Int8GemvSpec int8Spec{"", s.k, s.n, kBlock, 1, integerIsa()};
    int8Spec.name = int4Int8GemvKernelName(int8Spec);
    emitInt4Int8Gemv(module, int8Spec);
    emitInt4RowQuantizer(module, "quantize_" + std::to_string(s.k) + "x" + std::to_string(s.n), s.k,
                         kBlock);
    emitPackedGemv(module,
                   PackedGemvSpec{"f32_gemv_" + std::to_string(s.k) + "x" + std::to_string(s.n),
                                  s.k, s.n, lanes, false});
  }
  jit.compile();
  std::printf("one row x int4 weights (blocks of %ld, zero points; %ld lanes), one thread, %d runs,"
              " weights copied past %.0f MiB; GB/s of packed bytes\n",
              long(kBlock), long(lanes), runs, mib);
  std::printf("%-12s %8s %6s | %8s %7s | %8s %6s %5s | %8s %6s %5s | %8s %7s\n", "K x N",
              "int4 MiB", "copies", "read GB/s", "median", "f32-act", "ms", "/read", "int8-act",
              "ms", "/read", "f32 GB/s", "ms");
  std::printf("(GB/s medians; f32-act: Int4Gemv.h, int8-act: Int4Int8Gemv.h, f32: f32 weights)\n");
  for (const Shape &s : shapes)
    runShape(jit, s, lanes, mib, runs, chunks, sharedZero);
  return 0;
}
