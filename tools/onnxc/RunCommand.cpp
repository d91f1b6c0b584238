//===- tools/onnxc/RunCommand.cpp - onnxc run -------------------------------===//
#include "tools/onnxc/Commands.h"

#include "ir/Error.h"
#include "ir/eval/Evaluator.h"
#include "tools/onnxc/Npy.h"
#include "tools/onnxc/RunInputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace onnxc {

namespace {

constexpr int64_t kShownValues = 8;

std::string formatElement(const Tensor &t, int64_t i) {
  if (t.dtype() == DType::Bool)
    return t.elementAsInt64(i) ? "true" : "false";
  if (!isFloat(t.dtype()))
    return std::to_string(t.elementAsInt64(i));
  char buffer[32];
  std::snprintf(buffer, sizeof buffer, "%.6g", t.elementAsDouble(i));
  return buffer;
}

void printOutput(const std::string &name, const Tensor &t) {
  std::cout << name << ": " << t.typeString() << "\n";
  int64_t n = t.numElements();
  if (!t.hasData() || n == 0) {
    std::cout << "  (no elements)\n";
    return;
  }
  std::cout << "  values: [";
  for (int64_t i = 0; i < std::min(n, kShownValues); ++i)
    std::cout << (i ? ", " : "") << formatElement(t, i);
  std::cout << (n > kShownValues ? ", ...] (first " + std::to_string(kShownValues) + " of " +
                                       std::to_string(n) + ")"
                                 : "]")
            << "\n";
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.elementAsDouble(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "  min %.6g  max %.6g  mean %.6g\n", lo, hi, sum / double(n));
  std::cout << buffer;
}

/// Output names become file names: anything but [A-Za-z0-9_.-] turns into
/// '_' so that "/encoder/out:0" cannot escape the folder.
std::string fileNameFor(const std::string &outputName) {
  std::string out = outputName;
  for (char &c : out)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      c = '_';
  if (out.empty() || out == "." || out == "..")
    out = "_" + out;
  return out + ".npy";
}

std::pair<std::string, std::string> splitAssignment(const std::string &text, const char *option) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(std::string("expected NAME=VALUE after ") + option + ", got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

InputRequest inputRequest(const ParsedArgs &args) {
  InputRequest request;
  for (const std::string &text : args.getAll("input")) {
    auto [name, path] = splitAssignment(text, "--input");
    if (!request.files.emplace(name, path).second)
      throw UsageError("input '" + name + "' is given twice with --input");
  }
  for (const std::string &text : args.getAll("shape")) {
    auto [name, dims] = splitAssignment(text, "--shape");
    if (!request.shapes.emplace(name, parseShapeText(dims, "--shape")).second)
      throw UsageError("input '" + name + "' is given twice with --shape");
  }
  std::string seed = args.get("seed", "0");
  if (seed.empty() || seed.size() > 19 || !std::all_of(seed.begin(), seed.end(), ::isdigit))
    throw UsageError("--seed needs a non-negative integer, got '" + seed + "'");
  request.seed = std::stoull(seed);
  return request;
}

int runRun(const ParsedArgs &args) {
  std::string path = modelArgument(args, "run");
  std::string backend = args.get("backend", "ref");
  if (backend == "jit")
    fail("the jit backend lands with codegen (use --backend=ref)");
  if (backend != "ref")
    throw UsageError("unknown --backend '" + backend + "' (use ref or jit; see 'onnxc run --help')");
  InputRequest request = inputRequest(args);

  std::unique_ptr<PassManager> pm = buildPipeline(args, "run", PrintOptions());
  std::unique_ptr<Graph> graph = loadModel(path);
  runPipeline(*pm, *graph, args);
  std::map<std::string, Tensor> inputs = prepareInputs(*graph, request);
  std::vector<Tensor> outputs = evaluateGraph(*graph, inputs);
  assert(outputs.size() == graph->outputs().size());

  std::string outputDir = args.get("output-dir");
  if (!outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(outputDir, ec);
    if (ec)
      fail(outputDir, ": cannot create directory (", ec.message(), ")");
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const std::string &name = graph->outputs()[i].name;
    printOutput(name, outputs[i]);
    if (!outputDir.empty())
      writeNpy((std::filesystem::path(outputDir) / fileNameFor(name)).string(), outputs[i]);
  }
  return 0;
}

std::vector<OptionSpec> runOptions() {
  std::vector<OptionSpec> options = {
      {"input", "NAME=FILE.npy", "read input NAME from a .npy file", true},
      {"shape", "NAME=1x128", "generate input NAME with these dims (binds its symbolic dims)", true},
      {"seed", "N", "seed of generated inputs (default 0)"},
      {"output-dir", "DIR", "write each output to DIR/<output name>.npy"},
      {"backend", "ref|jit", "execute with the reference evaluator (default) or the JIT"},
  };
  for (OptionSpec &spec : pipelineOptions())
    options.push_back(std::move(spec));
  return options;
}

} // namespace

Command runCommand() {
  return {"run", "run a model on .npy or generated inputs and print its outputs",
          "run MODEL.onnx|MODEL.ir [--input NAME=FILE.npy]... [--shape NAME=1x128]... [options]", runOptions(),
          runRun};
}

namespace {
int notYetCompile(const ParsedArgs &) {
  fail("'compile' is not available yet (codegen lands in a later issue)");
}
int notYetBench(const ParsedArgs &) { fail("'bench' is not available yet (codegen lands in a later issue)"); }
} // namespace

Command compileCommand() {
  return {"compile", "compile a model to a shared library (not available yet)",
          "compile MODEL.onnx -o model.so [-O3] [--mcpu=native] [--emit=so|obj|llvm|asm]", {}, notYetCompile, true};
}

Command benchCommand() {
  return {"bench", "measure a model's run time (not available yet)",
          "bench MODEL.onnx|model.so [--shape ...] [--threads N] [--iters N]", {}, notYetBench, true};
}

} // namespace onnxc
