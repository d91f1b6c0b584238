//===- benchmarks/conv.cpp - Conv as onnxc compiles it, one thread ---------===//
//
// Times the Conv layers of the models this project targets as whole
// compiled steps (im2col blocks + packed GEMM + output transposition, as
// codegen/lower/convolution/ConvolutionGemmLowering.cpp emits them), one runtime
// thread, and prints GFLOP/s against the one-core FMA peak measured in the
// same run at the GEMM's width:
//
//   ViT-base/16 patch embedding  1x3x224x224, 768 filters 16x16, stride 16
//   Whisper-tiny conv1           1x80x3000 -> 384, kernel 3, pad 1
//   Whisper-tiny conv2           1x384x3000 -> 384, kernel 3, pad 1, stride 2
//
// "before" is the same Conv with its weights as a graph input, which keeps
// it on the direct loop nest (what every Conv compiled to before the GEMM
// form); it runs a couple of times only, it is slow.
//
//   onnxc_bench_conv [--runs N] [--before-runs N] [--cpu-clock]
//
// By default a run's time is the runtime's per-step profile (wall clock)
// and the peak is the best of many FMA-chain samples about as short as a
// run (~1 ms): on a shared machine short samples are the ones that run
// undisturbed. --cpu-clock times session.run() (the step plus binding the
// input and allocating the output, so slightly pessimistic) and 0.1 s peak
// samples in this thread's CPU time, as onnxc_bench_gemm --cpu-clock does.
// The best run is reported.
//
//===----------------------------------------------------------------------===//
#include "PeakFlops.h"

#include "codegen/ModelCompiler.h"
#include "codegen/TargetSelection.h"
#include "codegen/kernels/GemmPacking.h"
#include "driver/CompiledSession.h"
#include "ir/Graph.h"
#include "ir/Node.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"

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

struct ConvLayer {
  const char *name;
  std::vector<int64_t> input, weights;
  std::vector<int64_t> strides, pads;
};

Tensor randomTensor(std::vector<int64_t> dims, unsigned seed) {
  Tensor t(DType::F32, std::move(dims));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  float *data = t.data<float>();
  for (int64_t i = 0; i < t.numElements(); ++i)
    data[i] = dist(rng);
  return t;
}

/// One Conv with bias; the weights are a constant, or the second input when
/// `runtimeWeights`.
std::unique_ptr<Graph> convGraph(const ConvLayer &layer, bool runtimeWeights) {
  auto graph = std::make_unique<Graph>();
  Value *x = graph->addInput("x", {DType::F32, Shape::fromConstants(layer.input)});
  Value *w;
  if (runtimeWeights) {
    w = graph->addInput("w", {DType::F32, Shape::fromConstants(layer.weights)});
  } else {
    w = graph->addConstant("w", randomTensor(layer.weights, 2));
  }
  Value *b = graph->addConstant("b", randomTensor({layer.weights[0]}, 3));
  Node *conv = graph->createNode(OpKind::Conv, {x, w, b}, 1, layer.name);
  conv->setAttr("strides", layer.strides);
  conv->setAttr("pads", layer.pads);
  graph->addOutput("y", conv->result(0));
  verifyGraph(*graph);
  inferShapes(*graph);
  return graph;
}

double convFlop(const Graph &graph, const ConvLayer &layer) {
  const Shape &y = graph.outputs()[0].value->shape();
  double outputs = 1;
  for (const Dim &d : y.dims())
    outputs *= double(*d.constant());
  double depth = 1;
  for (size_t i = 1; i < layer.weights.size(); ++i)
    depth *= double(layer.weights[i]);
  return 2 * outputs * depth;
}

bool useCpuClock = false;

double threadCpuSeconds() {
  timespec now;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return double(now.tv_sec) + 1e-9 * double(now.tv_nsec);
}

/// Peak samples on the clock the runs are timed with (see the banner).
std::vector<double> peakSamples(int lanes) {
  std::vector<double> gflops;
  const int64_t iterations = useCpuClock ? 20'000'000 : 40'000;
  timeFmaChainsOf(lanes, 20'000'000 / 4);
  for (int r = 0; r < (useCpuClock ? 3 : 200); ++r) {
    double start = threadCpuSeconds();
    double wall = timeFmaChainsOf(lanes, iterations);
    double seconds = useCpuClock ? threadCpuSeconds() - start : wall;
    gflops.push_back(double(iterations) * 12 * 2 * lanes / seconds * 1e-9);
  }
  return gflops;
}

/// Best GFLOP/s of `runs` runs of the graph's one step.
double timeConv(const ConvLayer &layer, bool runtimeWeights, int runs) {
  std::unique_ptr<Graph> graph = convGraph(layer, runtimeWeights);
  std::unique_ptr<JitModel> model = compileModelJit(*graph, TargetSelection::select());
  CompiledSession session(model->descriptor(), 1);
  Tensor x = randomTensor(layer.input, 1), w = randomTensor(layer.weights, 2);
  std::vector<const Tensor *> inputs = {&x};
  if (runtimeWeights)
    inputs.push_back(&w);
  session.setProfiling(true);
  session.run(inputs); // warm-up: pages, caches
  double best = 1e30;
  for (int r = 0; r < runs; ++r) {
    session.setProfiling(true);
    double start = threadCpuSeconds();
    session.run(inputs);
    double seconds = threadCpuSeconds() - start;
    if (!useCpuClock) {
      int64_t total = 0;
      for (int32_t step = 0; step < session.model().num_steps; ++step)
        total += session.stepNanoseconds(step);
      seconds = 1e-9 * double(total);
    }
    best = std::min(best, seconds);
  }
  return convFlop(*graph, layer) / best * 1e-9;
}

} // namespace

int main(int argc, char **argv) {
  int runs = 30, beforeRuns = 2;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if ((arg == "--runs" || arg == "--before-runs") && i + 1 < argc) {
      (arg == "--runs" ? runs : beforeRuns) = std::atoi(argv[++i]);
    } else if (arg == "--cpu-clock") {
      useCpuClock = true;
    } else {
      std::fprintf(stderr, "usage: %s [--runs N] [--before-runs N] [--cpu-clock]\n", argv[0]);
      return 2;
    }
  }
  const int lanes = hostHasAvx512() ? 16 : 8;
  const ConvLayer layers[] = {
      {"vit_patch", {1, 3, 224, 224}, {768, 3, 16, 16}, {16, 16}, {0, 0, 0, 0}},
      {"whisper_conv1", {1, 80, 3000}, {384, 80, 3}, {1}, {1, 1}},
      {"whisper_conv2", {1, 384, 3000}, {384, 384, 3}, {2}, {1, 1}},
  };
  std::vector<double> peakRuns = peakSamples(lanes);
  struct Row {
    const ConvLayer *layer;
    double before, after;
  };
  std::vector<Row> rows;
  for (const ConvLayer &layer : layers) {
    Row row{&layer, beforeRuns > 0 ? timeConv(layer, true, beforeRuns) : 0.0,
            timeConv(layer, false, runs)};
    rows.push_back(row);
    for (double sample : peakSamples(lanes))
      peakRuns.push_back(sample);
  }
  double peak = *std::max_element(peakRuns.begin(), peakRuns.end());
  std::printf("%s clock; ", useCpuClock ? "thread CPU" : "wall");
  std::printf("one thread; %d-lane GEMM; measured fp32 FMA peak %.1f GFLOP/s (best of %zu, "
              "median %.1f); best of %d runs (loop nest: %d)\n",
              lanes, peak, peakRuns.size(), median(peakRuns), runs, beforeRuns);
  std::printf("%-14s | loop nest GFLOP/s  %%pk | GEMM GFLOP/s  %%pk\n", "layer");
  for (const Row &row : rows)
    std::printf("%-14s | %17.1f %5.1f%% | %12.1f %5.1f%%\n", row.layer->name, row.before,
                100 * row.before / peak, row.after, 100 * row.after / peak);
  return 0;
}
