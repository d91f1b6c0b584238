//===- tools/onnxc/BenchCommand.cpp - onnxc bench ---------------------------===//
//
// Measures a compiled model the way a user would deploy it: compile (or
// load the model.so), create a session, run once to plan the arena, then
// time `--iters` runs on the same inputs. Prints compile/load time, latency
// min / median / mean, the arena size and the process's peak memory.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "codegen/ModelCompiler.h"
#include "driver/CompiledSession.h"
#include "driver/RunnableModel.h"
#include "ir/Error.h"
#include "tools/onnxc/JsonOutput.h"
#include "tools/onnxc/ModelFiles.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <string>

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

/// Time per run by op (the first word of each step name: the op, or the
/// fused group), most expensive first, and every step, slowest first.
struct Profile {
  struct OpTime {
    std::string op;
    int steps = 0;
    double ms = 0;
  };
  int runs = 0;
  double totalMs = 0;
  std::vector<OpTime> byOp;
  std::vector<std::pair<double, std::string>> bySteps;
};

Profile collectProfile(const onnxc_model_descriptor &model, const CompiledSession &session,
                       int runs) {
  Profile profile;
  profile.runs = runs;
  std::map<std::string, Profile::OpTime> byOp;
  for (int32_t s = 0; s < model.num_steps; ++s) {
    double ms = double(session.stepNanoseconds(s)) / 1e6 / runs;
    std::string name = model.steps[s].name ? model.steps[s].name : "?";
    std::string op = name.substr(0, name.find(' '));
    Profile::OpTime &entry = byOp[op];
    entry.op = op;
    entry.ms += ms;
    entry.steps += 1;
    profile.bySteps.emplace_back(ms, name);
    profile.totalMs += ms;
  }
  for (auto &[op, entry] : byOp)
    profile.byOp.push_back(entry);
  std::stable_sort(profile.byOp.begin(), profile.byOp.end(),
                   [](const auto &a, const auto &b) { return a.ms > b.ms; });
  std::stable_sort(profile.bySteps.begin(), profile.bySteps.end(),
                   [](const auto &a, const auto &b) { return a.first > b.first; });
  return profile;
}

double percentOf(double part, double total) { return total > 0 ? 100 * part / total : 0.0; }

void printProfile(const Profile &profile) {
  char line[256];
  std::snprintf(line, sizeof line, "profile (%d runs, %.3f ms per run in steps):\n", profile.runs,
                profile.totalMs);
  std::cout << line;
  for (const Profile::OpTime &op : profile.byOp) {
    std::snprintf(line, sizeof line, "  %-28s %5d steps %9.3f ms %5.1f%%\n", op.op.c_str(),
                  op.steps, op.ms, percentOf(op.ms, profile.totalMs));
    std::cout << line;
  }
  std::cout << "slowest steps:\n";
  for (size_t i = 0; i < profile.bySteps.size() && i < 10; ++i) {
    std::snprintf(line, sizeof line, "  %9.3f ms  %s\n", profile.bySteps[i].first,
                  profile.bySteps[i].second.c_str());
    std::cout << line;
  }
}

llvm::json::Object profileJson(const Profile &profile) {
  llvm::json::Array ops, steps;
  for (const Profile::OpTime &op : profile.byOp)
    ops.push_back(llvm::json::Object{{"op", jsonText(op.op)},
                                     {"steps", op.steps},
                                     {"ms", op.ms},
                                     {"percent", percentOf(op.ms, profile.totalMs)}});
  for (const auto &[ms, name] : profile.bySteps)
    steps.push_back(llvm::json::Object{{"name", jsonText(name)}, {"ms", ms}});
  return llvm::json::Object{{"runs", profile.runs},
                            {"total_ms", profile.totalMs},
                            {"ops", std::move(ops)},
                            {"steps", std::move(steps)}};
}

/// What one bench run measured.
struct Measurements {
  std::string modelName;
  /// The descriptor's precision ("f32" or "bf16").
  std::string precision = "f32";
  bool library = false;
  int threads = 0;
  double prepareMs = 0, sessionMs = 0, firstRunMs = 0;
  std::vector<double> times; // sorted
  double meanMs = 0;
  int64_t arenaBytes = 0;
  double peakResidentMiB = 0;
};

void printMeasurements(const Measurements &m) {
  char line[256];
  std::snprintf(line, sizeof line, "%s%s: %s %.1f ms, session %.2f ms, first run %.2f ms\n",
                m.modelName.c_str(), m.precision == "f32" ? "" : (" (" + m.precision + ")").c_str(),
                m.library ? "load" : "compile", m.prepareMs, m.sessionMs, m.firstRunMs);
  std::cout << line;
  std::snprintf(line, sizeof line,
                "latency over %d runs: min %.3f ms  median %.3f ms  mean %.3f ms  max %.3f ms\n",
                int(m.times.size()), m.times.front(), m.times[m.times.size() / 2], m.meanMs,
                m.times.back());
  std::cout << line;
  std::snprintf(line, sizeof line, "arena %.1f MiB, peak resident memory %.1f MiB\n",
                double(m.arenaBytes) / (1 << 20), m.peakResidentMiB);
  std::cout << line;
}

/// The first run, the rest of the warm-up, then `iterations` timed runs (sorted), the arena
/// and the process's peak memory.
Measurements measureRuns(CompiledSession &session, const std::vector<const Tensor *> &inputs,
                         int warmup, int iterations) {
  Measurements m;
  Clock::time_point start = Clock::now();
  session.run(inputs);
  m.firstRunMs = millisecondsSince(start);
  for (int i = 1; i < warmup; ++i)
    session.run(inputs);
  for (int i = 0; i < iterations; ++i) {
    start = Clock::now();
    session.run(inputs);
    m.times.push_back(millisecondsSince(start));
  }
  std::sort(m.times.begin(), m.times.end());
  for (double t : m.times)
    m.meanMs += t / double(m.times.size());
  m.arenaBytes = int64_t(session.arenaBytes());
  m.peakResidentMiB = peakResidentMiB();
  return m;
}

llvm::json::Object measurementsJson(const Measurements &m) {
  return llvm::json::Object{
      {"model", jsonText(m.modelName)},
      {"source", m.library ? "library" : "jit"},
      {"precision", m.precision},
      {m.library ? "load_ms" : "compile_ms", m.prepareMs},
      {"session_ms", m.sessionMs},
      {"first_run_ms", m.firstRunMs},
      {"threads", m.threads},
      {"latency_ms", llvm::json::Object{{"runs", int64_t(m.times.size())},
                                        {"min", m.times.front()},
                                        {"median", m.times[m.times.size() / 2]},
                                        {"mean", m.meanMs},
                                        {"max", m.times.back()}}},
      {"arena_bytes", m.arenaBytes},
      {"peak_resident_mib", m.peakResidentMiB}};
}

int runBench(const ParsedArgs &args) {
  if (printTargetHelp(args))
    return 0;
  std::string path = modelArgument(args, "bench");
  InputRequest request = inputRequest(args);
  int threads = threadCount(args);
  int iterations = positiveOption(args, "iters", 50);
  int warmup = positiveOption(args, "warmup", 3);
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
    runnable = compileModelInProcess(std::move(optimized), target);
  }
  const onnxc_model_descriptor *model = runnable.descriptor;
  const Graph *graph = runnable.graph.get();
  double prepareMs = millisecondsSince(start);

  // A benchmark's outputs are not read: inputs not given are generated (a
  // single --shape input_ids=1x128 sizes the mask too), unlike `onnxc run`.
  std::map<std::string, Tensor> inputs = prepareInputs(*graph, request, MissingInputs::Generate);
  std::vector<const Tensor *> ordered;
  for (const Value *input : graph->inputs())
    ordered.push_back(&inputs.at(input->name()));

  start = Clock::now();
  CompiledSession session(model, threads);
  double sessionMs = millisecondsSince(start);
  Measurements m = measureRuns(session, ordered, warmup, iterations);
  m.sessionMs = sessionMs;
  m.modelName = model->model_name ? model->model_name : "";
  m.precision = model->precision ? model->precision : "f32";
  m.library = library;
  m.threads = threads;
  m.prepareMs = prepareMs;
  std::optional<Profile> profile;
  if (args.has("profile")) {
    session.setProfiling(true);
    for (int i = 0; i < iterations; ++i)
      session.run(ordered);
    profile = collectProfile(*model, session, iterations);
  }
  if (args.has("json")) {
    llvm::json::Object document = measurementsJson(m);
    if (profile)
      document["profile"] = profileJson(*profile);
    if (pm)
      addPipelineReport(document, *pm, args);
    printJson(std::move(document));
    return 0;
  }
  printMeasurements(m);
  if (profile)
    printProfile(*profile);
  return 0;
}

std::vector<OptionSpec> benchOptions() {
  return joinOptions(
      {inputOptions(),
       {
           {"threads", "N", "runtime threads (default: one per core)"},
           {"iters", "N", "timed runs (default 50)"},
           {"warmup", "N", "untimed runs first, the first of them reported (default 3)"},
           {"profile", "", "after timing, run again with per-step timers and print time by op"},
           jsonOption(),
       },
       targetOptions(),
       pipelineOptions()});
}

} // namespace

Command benchCommand() {
  return {"bench", "measure a compiled model's latency, load time and memory",
          "bench MODEL.onnx|MODEL.ir|MODEL.so [--shape NAME=1x128]... [--threads N] [--iters N]\n"
          "(inputs neither --input nor --shape gives are generated, sized by the ones that are)",
          benchOptions(), runBench};
}

} // namespace onnxc
