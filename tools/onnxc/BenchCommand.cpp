//===- tools/onnxc/BenchCommand.cpp - onnxc bench ---------------------------===//
//
// Measures a compiled model the way a user would deploy it: compile (or
// load the model.so), create a session, run once to plan the arena, then
// time `--iters` runs on the same inputs. Prints compile/load time, latency
// min / median / mean, the arena size and the process's peak memory.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "codegen/CompiledSession.h"
#include "codegen/ModelCompiler.h"
#include "ir/Error.h"
#include "tools/onnxc/CompiledLibrary.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <sys/resource.h>

namespace onnxc {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int positiveOption(const ParsedArgs &args, const std::string &name, int defaultValue) {
  std::string text = args.get(name, std::to_string(defaultValue));
  if (text.empty() || text.size() > 7 || text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(text) == 0)
    throw UsageError("--" + name + " needs a positive number, got '" + text + "'");
  return std::stoi(text);
}

double peakResidentMiB() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return double(usage.ru_maxrss) / 1024.0; // ru_maxrss is in KiB on Linux
}

int runBench(const ParsedArgs &args) {
  if (printTargetHelp(args))
    return 0;
  std::string path = modelArgument(args, "bench");
  InputRequest request = inputRequest(args);
  int threads = threadCount(args);
  int iterations = positiveOption(args, "iters", 50);
  int warmup = positiveOption(args, "warmup", 3);
  bool library = isCompiledLibraryPath(path);

  std::unique_ptr<CompiledLibrary> compiled;
  std::unique_ptr<JitModel> jit;
  std::unique_ptr<Graph> graph;
  const onnxc_model_descriptor *model = nullptr;
  Clock::time_point start = Clock::now();
  if (library) {
    compiled = std::make_unique<CompiledLibrary>(path);
    model = compiled->descriptor();
    graph = signatureGraph(*model);
  } else {
    TargetSelection target = selectTarget(args);
    std::unique_ptr<PassManager> pm = buildPipeline(args, "bench", PrintOptions(), 3);
    graph = loadModel(path);
    runPipeline(*pm, *graph, args);
    jit = compileModelJit(*graph, target);
    model = jit->descriptor();
  }
  double prepareMs = millisecondsSince(start);

  std::map<std::string, Tensor> inputs = prepareInputs(*graph, request);
  std::vector<const Tensor *> ordered;
  for (const Value *input : graph->inputs())
    ordered.push_back(&inputs.at(input->name()));

  start = Clock::now();
  CompiledSession session(model, threads);
  double sessionMs = millisecondsSince(start);
  start = Clock::now();
  session.run(ordered);
  double firstRunMs = millisecondsSince(start);
  for (int i = 1; i < warmup; ++i)
    session.run(ordered);
  std::vector<double> times;
  for (int i = 0; i < iterations; ++i) {
    start = Clock::now();
    session.run(ordered);
    times.push_back(millisecondsSince(start));
  }
  std::sort(times.begin(), times.end());
  double mean = 0;
  for (double t : times)
    mean += t / double(times.size());

  char line[256];
  std::snprintf(line, sizeof line, "%s: %s %.1f ms, session %.2f ms, first run %.2f ms\n",
                model->model_name, library ? "load" : "compile", prepareMs, sessionMs, firstRunMs);
  std::cout << line;
  std::snprintf(line, sizeof line,
                "latency over %d runs: min %.3f ms  median %.3f ms  mean %.3f ms  max %.3f ms\n",
                iterations, times.front(), times[times.size() / 2], mean, times.back());
  std::cout << line;
  std::snprintf(line, sizeof line, "arena %.1f MiB, peak resident memory %.1f MiB\n",
                double(session.arenaBytes()) / (1 << 20), peakResidentMiB());
  std::cout << line;
  return 0;
}

std::vector<OptionSpec> benchOptions() {
  std::vector<OptionSpec> options = inputOptions();
  std::vector<OptionSpec> own = {
      {"threads", "N", "runtime threads (default: one per core)"},
      {"iters", "N", "timed runs (default 50)"},
      {"warmup", "N", "untimed runs first, the first of them reported (default 3)"},
  };
  for (OptionSpec &spec : own)
    options.push_back(std::move(spec));
  for (OptionSpec &spec : targetOptions())
    options.push_back(std::move(spec));
  for (OptionSpec &spec : pipelineOptions())
    options.push_back(std::move(spec));
  return options;
}

} // namespace

Command benchCommand() {
  return {"bench", "measure a compiled model's latency, load time and memory",
          "bench MODEL.onnx|MODEL.ir|MODEL.so [--shape NAME=1x128]... [--threads N] [--iters N]",
          benchOptions(), runBench};
}

} // namespace onnxc
