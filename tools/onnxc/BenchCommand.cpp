//===- tools/onnxc/BenchCommand.cpp - onnxc bench ---------------------------===//
//
// Measures a compiled model the way a user would deploy it, as OpenVINO's
// benchmark_app does: compile (or load the model.so), make up inputs the
// model accepts when none are given (tools/onnxc/BenchInputs.h), create
// `--concurrency` sessions on as many threads, warm each up, then run them
// all at once for `--iters` runs in total or `--time` seconds. Prints
// compile/load time, throughput, latency min / mean / p50 / p90 / p99 / max,
// the arena size and the process's peak memory.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "codegen/ModelCompiler.h"
#include "driver/CompiledSession.h"
#include "driver/RunnableModel.h"
#include "ir/Error.h"
#include "tools/onnxc/BenchInputs.h"
#include "tools/onnxc/BenchProfile.h"
#include "tools/onnxc/JsonOutput.h"
#include "tools/onnxc/ModelFiles.h"
#include "tools/onnxc/ProgressLine.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>
#include <thread>

namespace onnxc {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

int positiveOption(const ParsedArgs &args, const std::string &name, int defaultValue) {
  std::string text = args.get(name, std::to_string(defaultValue));
  if (text.empty() || text.size() > 7 ||
      text.find_first_not_of("0123456789") != std::string::npos || std::stoi(text) == 0)
    throw UsageError("--" + name + " needs a positive number, got '" + text + "'");
  return std::stoi(text);
}

/// --time SECONDS: a positive number of seconds (fractions allowed), or 0 when absent.
double secondsOption(const ParsedArgs &args) {
  if (!args.has("time"))
    return 0;
  std::string text = args.get("time", "");
  char *end = nullptr;
  double seconds = text.empty() ? 0 : std::strtod(text.c_str(), &end);
  if (text.empty() || *end || !(seconds > 0) || seconds > 1e6)
    throw UsageError("--time needs a positive number of seconds, got '" + text + "'");
  return seconds;
}

/// The process's peak resident set (VmHWM). Not getrusage's ru_maxrss:
/// Linux carries that over from the parent across fork and exec, so a
/// benchmark started from a big Python process would report the parent's.
double peakResidentMiB() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmHWM:", 0) == 0)
      return std::stod(line.substr(6)) / 1024.0; // the line is "VmHWM:  123456 kB"
  return 0;
}

/// How long and how wide to run.
struct BenchBounds {
  int iterations = 50; // runs in total, over every session (unless `seconds`)
  double seconds = 0;  // > 0: run every session until this much time has passed
  int warmup = 3;      // untimed runs per session, the first of session 0 reported
  int concurrency = 1; // sessions, each on its own thread
  int threads = 0;     // runtime threads per session (0: one per core)
};

/// What one bench run measured.
struct Measurements {
  std::string modelName;
  /// The descriptor's precision ("f32" or "bf16").
  std::string precision = "f32";
  bool library = false;
  BenchBounds bounds;
  double prepareMs = 0, sessionMs = 0, firstRunMs = 0;
  std::vector<double> times; // sorted, every session's runs
  double wallSeconds = 0;    // from the start of the timed runs to the end of the last
  double meanMs = 0;
  int64_t arenaBytes = 0;
  double peakResidentMiB = 0;
  GeneratedInputs generated;
  std::set<std::string> cacheSymbols;

  /// The latency below which `percent` of the runs fall (nearest rank).
  double percentile(double percent) const {
    size_t rank = size_t(std::ceil(percent / 100.0 * double(times.size())));
    return times[std::min(times.size() - 1, rank ? rank - 1 : 0)];
  }
  double throughput() const { return wallSeconds > 0 ? double(times.size()) / wallSeconds : 0; }
};

/// One session on its own thread: create, warm up, wait for the start, run
/// until the shared bound is reached. Errors are kept for the main thread.
struct Worker {
  std::unique_ptr<CompiledSession> session;
  std::vector<double> times;
  double sessionMs = 0, firstRunMs = 0;
  Clock::time_point end;
  std::string error;
};

void runWorker(Worker &worker, const onnxc_model_descriptor *model,
               const std::vector<const Tensor *> &inputs, const BenchBounds &bounds,
               std::atomic<int> &ready, std::atomic<bool> &go, std::atomic<int> &remaining,
               const Clock::time_point &start) {
  try {
    Clock::time_point begin = Clock::now();
    worker.session = std::make_unique<CompiledSession>(model, bounds.threads);
    worker.sessionMs = millisecondsSince(begin);
    begin = Clock::now();
    worker.session->run(inputs);
    worker.firstRunMs = millisecondsSince(begin);
    for (int i = 1; i < bounds.warmup; ++i)
      worker.session->run(inputs);
  } catch (const std::exception &error) {
    worker.error = error.what();
  }
  // Blocking waits, not spins: a warm-up can take seconds, and a spinning
  // waiter takes a core the sessions may need.
  ready.fetch_add(1);
  ready.notify_all();
  go.wait(false);
  if (!worker.error.empty())
    return;
  auto deadline = start + std::chrono::duration<double>(bounds.seconds);
  try {
    while (bounds.seconds > 0 ? Clock::now() < deadline : remaining.fetch_sub(1) > 0) {
      Clock::time_point begin = Clock::now();
      worker.session->run(inputs);
      worker.times.push_back(millisecondsSince(begin));
    }
  } catch (const std::exception &error) {
    worker.error = error.what();
  }
  worker.end = Clock::now();
}

/// Runs the sessions of `bounds` together; the first error of any is thrown.
Measurements measureRuns(const onnxc_model_descriptor *model,
                         const std::vector<const Tensor *> &inputs, const BenchBounds &bounds,
                         std::unique_ptr<CompiledSession> &firstSession) {
  std::vector<Worker> workers(size_t(bounds.concurrency));
  std::atomic<int> ready{0}, remaining{bounds.iterations};
  std::atomic<bool> go{false};
  Clock::time_point start;
  std::vector<std::thread> threads;
  for (Worker &worker : workers)
    threads.emplace_back(runWorker, std::ref(worker), model, std::cref(inputs), std::cref(bounds),
                         std::ref(ready), std::ref(go), std::ref(remaining), std::cref(start));
  for (int count = ready.load(); count < bounds.concurrency; count = ready.load())
    ready.wait(count);
  start = Clock::now();
  go.store(true);
  go.notify_all();
  for (std::thread &thread : threads)
    thread.join();

  Measurements m;
  m.bounds = bounds;
  m.sessionMs = workers[0].sessionMs;
  m.firstRunMs = workers[0].firstRunMs;
  Clock::time_point end = start;
  for (Worker &worker : workers) {
    if (!worker.error.empty())
      fail(worker.error);
    m.times.insert(m.times.end(), worker.times.begin(), worker.times.end());
    end = std::max(end, worker.end);
  }
  if (m.times.empty())
    fail("no run finished within --time ", bounds.seconds, " s; give a longer --time");
  std::sort(m.times.begin(), m.times.end());
  for (double t : m.times)
    m.meanMs += t / double(m.times.size());
  m.wallSeconds = std::chrono::duration<double>(end - start).count();
  m.arenaBytes = int64_t(workers[0].session->arenaBytes());
  m.peakResidentMiB = peakResidentMiB();
  firstSession = std::move(workers[0].session);
  return m;
}

std::string describeDefaults(const Measurements &m) {
  std::string text;
  for (const auto &[symbol, value] : m.generated.defaultedSymbols)
    text += (text.empty() ? "" : ", ") + symbol + " = " + std::to_string(value) +
            (m.cacheSymbols.count(symbol) ? " (empty KV cache)" : "");
  return text;
}

void printMeasurements(const Measurements &m, const Graph &graph,
                       const std::map<std::string, Tensor> &inputs) {
  char line[512];
  std::snprintf(line, sizeof line, "%s%s: %s %.1f ms, session %.2f ms, first run %.2f ms\n",
                m.modelName.c_str(), m.precision == "f32" ? "" : (" (" + m.precision + ")").c_str(),
                m.library ? "load" : "compile", m.prepareMs, m.sessionMs, m.firstRunMs);
  std::cout << line;
  if (!m.generated.defaultedSymbols.empty())
    std::cout << "dims no --shape or --input sets: " << describeDefaults(m) << "\n";
  for (const Value *input : graph.inputs()) {
    auto made = m.generated.values.find(input->name());
    const Tensor &tensor = inputs.at(input->name());
    std::cout << "input " << input->name() << ": " << dtypeName(tensor.dtype())
              << Shape(std::vector<Dim>(tensor.dims().begin(), tensor.dims().end())).str()
              << (made == m.generated.values.end() ? ", given" : ", " + made->second) << "\n";
  }
  std::snprintf(line, sizeof line,
                "throughput: %.2f inferences/s (%d runs in %.3f s; concurrency %d, threads %s)\n",
                m.throughput(), int(m.times.size()), m.wallSeconds, m.bounds.concurrency,
                m.bounds.threads ? std::to_string(m.bounds.threads).c_str() : "one per core");
  std::cout << line;
  std::snprintf(line, sizeof line,
                "latency over %d runs: min %.3f ms  median %.3f ms  mean %.3f ms  max %.3f ms\n",
                int(m.times.size()), m.times.front(), m.percentile(50), m.meanMs, m.times.back());
  std::cout << line;
  std::snprintf(line, sizeof line, "percentiles: p50 %.3f ms  p90 %.3f ms  p99 %.3f ms\n",
                m.percentile(50), m.percentile(90), m.percentile(99));
  std::cout << line;
  std::snprintf(line, sizeof line, "arena %.1f MiB, peak resident memory %.1f MiB\n",
                double(m.arenaBytes) / (1 << 20), m.peakResidentMiB);
  std::cout << line;
}

llvm::json::Object measurementsJson(const Measurements &m, const Graph &graph,
                                    const std::map<std::string, Tensor> &inputs) {
  llvm::json::Object defaults;
  for (const auto &[symbol, value] : m.generated.defaultedSymbols)
    defaults[symbol] = value;
  llvm::json::Array inputList;
  for (const Value *input : graph.inputs()) {
    auto made = m.generated.values.find(input->name());
    llvm::json::Array dims;
    for (int64_t dim : inputs.at(input->name()).dims())
      dims.push_back(dim);
    inputList.push_back(
        llvm::json::Object{{"name", jsonText(input->name())},
                           {"dims", std::move(dims)},
                           {"values", made == m.generated.values.end() ? "given" : made->second}});
  }
  return llvm::json::Object{{"model", jsonText(m.modelName)},
                            {"source", m.library ? "library" : "jit"},
                            {"precision", m.precision},
                            {m.library ? "load_ms" : "compile_ms", m.prepareMs},
                            {"session_ms", m.sessionMs},
                            {"first_run_ms", m.firstRunMs},
                            {"threads", m.bounds.threads},
                            {"concurrency", m.bounds.concurrency},
                            {"default_dims", std::move(defaults)},
                            {"inputs", std::move(inputList)},
                            {"throughput_per_s", m.throughput()},
                            {"wall_s", m.wallSeconds},
                            {"latency_ms", llvm::json::Object{{"runs", int64_t(m.times.size())},
                                                              {"min", m.times.front()},
                                                              {"median", m.percentile(50)},
                                                              {"mean", m.meanMs},
                                                              {"p50", m.percentile(50)},
                                                              {"p90", m.percentile(90)},
                                                              {"p99", m.percentile(99)},
                                                              {"max", m.times.back()}}},
                            {"arena_bytes", m.arenaBytes},
                            {"peak_resident_mib", m.peakResidentMiB}};
}

BenchBounds benchBounds(const ParsedArgs &args) {
  BenchBounds bounds;
  bounds.seconds = secondsOption(args);
  if (bounds.seconds > 0 && args.has("iters"))
    throw UsageError("--iters and --time both bound the runs; give one");
  bounds.iterations = positiveOption(args, "iters", 50);
  bounds.warmup = positiveOption(args, "warmup", 3);
  bounds.concurrency = positiveOption(args, "concurrency", 1);
  if (bounds.concurrency > 256)
    throw UsageError("--concurrency " + std::to_string(bounds.concurrency) + " is over 256");
  bounds.threads = threadCount(args);
  // N sessions that each took one thread per core would fight over the cores.
  if (!args.has("threads") && bounds.concurrency > 1)
    bounds.threads = std::max(1, int(std::thread::hardware_concurrency()) / bounds.concurrency);
  return bounds;
}

int runBench(const ParsedArgs &args) {
  if (printTargetHelp(args))
    return 0;
  std::string path = modelArgument(args, "bench");
  InputRequest request = inputRequest(args);
  BenchBounds bounds = benchBounds(args);
  bool library = isModelLibraryPath(path);
  if (library)
    refuseCompileOptions(args, path, "bench");
  checkModelFile(path, "bench", ModelKinds::GraphsAndLibraries);

  RunnableModel runnable;
  std::unique_ptr<PassManager> pm; // null for a library (nothing to optimize)
  Clock::time_point start = Clock::now();
  if (library) {
    runnable = openModelLibrary(path);
  } else {
    TargetSelection target = selectTarget(args);
    pm = buildPipeline(args, "bench", PrintOptions(), 3);
    std::unique_ptr<Graph> optimized = loadModel(path);
    runPipeline(*pm, *optimized, args);
    runnable =
        compileModelInProcess(std::move(optimized), target, ProgressLine::instance().callback());
  }
  const onnxc_model_descriptor *model = runnable.descriptor;
  const Graph &graph = *runnable.graph;
  double prepareMs = millisecondsSince(start);

  // A benchmark's outputs are not read: inputs not given are made up, valid
  // for the model, and sized by the ones that are.
  std::set<std::string> cacheSymbols = addBenchDefaults(graph, *model, request);
  GeneratedInputs generated;
  std::map<std::string, Tensor> inputs =
      prepareInputs(graph, request, MissingInputs::Generate, &generated);
  std::vector<const Tensor *> ordered;
  for (const Value *input : graph.inputs())
    ordered.push_back(&inputs.at(input->name()));

  std::unique_ptr<CompiledSession> session;
  Measurements m = measureRuns(model, ordered, bounds, session);
  m.modelName = model->model_name ? model->model_name : "";
  m.precision = model->precision ? model->precision : "f32";
  m.library = library;
  m.prepareMs = prepareMs;
  m.generated = std::move(generated);
  m.cacheSymbols = std::move(cacheSymbols);
  std::optional<Profile> profile;
  if (args.has("profile")) {
    session->setProfiling(true);
    int runs = std::max(1, int(m.times.size()) / bounds.concurrency);
    for (int i = 0; i < runs; ++i)
      session->run(ordered);
    profile = collectProfile(*model, *session, runs);
  }
  if (args.has("json")) {
    llvm::json::Object document = measurementsJson(m, graph, inputs);
    if (profile)
      document["profile"] = profileJson(*profile);
    if (pm)
      addPipelineReport(document, *pm, args);
    printJson(std::move(document));
    return 0;
  }
  printMeasurements(m, graph, inputs);
  if (profile)
    printProfile(*profile);
  return 0;
}

std::vector<OptionSpec> benchOptions() {
  return joinOptions(
      {inputOptions(),
       {
           {"threads", "N",
            "runtime threads per session (default: one per core, shared out "
            "among the sessions of --concurrency)"},
           {"iters", "N", "timed runs in all (default 50)"},
           {"time", "SECONDS", "run for this long instead of --iters runs"},
           {"concurrency", "N", "sessions running at once, each on its own thread (default 1)"},
           {"warmup", "N",
            "untimed runs per session first, the first of them reported (default 3)"},
           {"profile", "", "after timing, run again with per-step timers and print time by op"},
           jsonOption(),
       },
       targetOptions(),
       pipelineOptions()});
}

} // namespace

Command benchCommand() {
  return {"bench", "measure a compiled model's throughput, latency, load time and memory",
          "bench MODEL.onnx|MODEL.ir|MODEL.so [--shape NAME=1x128]... [--threads N]\n"
          "      [--iters N | --time SECONDS] [--concurrency N] [--json]\n"
          "(inputs neither --input nor --shape gives are made up: ids within the table they\n"
          "index, masks of ones, KV caches empty; dims no input sets are batch 1, sequence 128)",
          benchOptions(), runBench};
}

} // namespace onnxc
