//===- tools/onnxc/RunCommand.cpp - onnxc run -------------------------------===//
#include "tools/onnxc/Commands.h"

#include "codegen/CompilableShapes.h"
#include "codegen/ModelCompiler.h"
#include "driver/ArtifactOutputs.h"
#include "driver/CompiledSession.h"
#include "driver/FileIdentity.h"
#include "driver/InputSpecialization.h"
#include "driver/RunnableModel.h"
#include "ir/Error.h"
#include "ir/eval/Evaluator.h"
#include "tools/onnxc/JsonOutput.h"
#include "tools/onnxc/ModelFiles.h"
#include "tools/onnxc/Npy.h"
#include "tools/onnxc/ProgressLine.h"
#include "tools/onnxc/RunInputs.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <tuple>

namespace onnxc {

namespace {

constexpr int64_t kShownValues = 8;

/// Min, max and mean of the first `n` elements of `t` (n > 0).
std::tuple<double, double, double> statistics(const Tensor &t, int64_t n) {
  double lo = INFINITY, hi = -INFINITY, sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.elementAsDouble(i);
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  return {lo, hi, sum / double(n)};
}

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
  auto [lo, hi, mean] = statistics(t, n);
  char buffer[128];
  std::snprintf(buffer, sizeof buffer, "  min %.6g  max %.6g  mean %.6g\n", lo, hi, mean);
  std::cout << buffer;
}

/// An output's type, statistics and file for --json.
llvm::json::Object outputJson(const std::string &name, const Tensor &t, const std::string &file) {
  llvm::json::Object entry{
      {"name", jsonText(name)}, {"type", t.typeString()}, {"elements", t.numElements()}};
  if (!file.empty())
    entry["file"] = jsonText(file);
  int64_t n = t.hasData() ? t.numElements() : 0;
  if (n == 0)
    return entry;
  auto [lo, hi, mean] = statistics(t, n);
  // JSON has no NaN or infinity: such statistics are null.
  auto number = [](double v) {
    return std::isfinite(v) ? llvm::json::Value(v) : llvm::json::Value(nullptr);
  };
  entry["min"] = number(lo);
  entry["max"] = number(hi);
  entry["mean"] = number(mean);
  return entry;
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

/// The path of each output in --output-dir. Two outputs whose names
/// sanitize to one file would silently overwrite each other, and an output
/// written over an input's .npy or the model would destroy it, so both are
/// errors naming the files (checked before anything runs or is written).
std::vector<std::string> outputPaths(const std::string &outputDir,
                                     const std::vector<std::string> &outputNames,
                                     const InputRequest &request, const std::string &model,
                                     const std::vector<std::string> &externalFiles = {}) {
  std::vector<std::string> paths;
  std::map<std::string, size_t> owner;
  std::vector<std::pair<std::string, FileIdentity>> inputFiles;
  for (const auto &[input, npy] : request.files)
    inputFiles.emplace_back(input, fileIdentity(npy));
  for (size_t i = 0; i < outputNames.size(); ++i) {
    std::string file = fileNameFor(outputNames[i]);
    auto [it, fresh] = owner.emplace(file, i);
    if (!fresh)
      fail("outputs '", outputNames[it->second], "' and '", outputNames[i],
           "' would both be written to '", file,
           "' in --output-dir; rename one of them in the model");
    paths.push_back((std::filesystem::path(outputDir) / file).string());
    checkWriteSparesModel(paths.back(),
                          "output '" + outputNames[i] + "', written to '" + paths.back() + "',",
                          model, externalFiles, "choose another --output-dir");
    FileIdentity written = fileIdentity(paths.back());
    for (const auto &[input, identity] : inputFiles)
      if (written == identity)
        fail("output '", outputNames[i], "' would be written to '", paths.back(),
             "', which is the file of input '", input, "'; choose another --output-dir");
  }
  return paths;
}

std::pair<std::string, std::string> splitAssignment(const std::string &text, const char *option) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw UsageError(std::string("expected NAME=VALUE after ") + option + ", got '" + text + "'");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

/// Outputs of a compiled model: from a model.so, or the graph JIT-compiled.
std::vector<Tensor> runCompiledModel(const onnxc_model_descriptor &model, const Graph &signature,
                                     const std::map<std::string, Tensor> &inputs, int threads) {
  std::vector<const Tensor *> ordered;
  for (const Value *input : signature.inputs())
    ordered.push_back(&inputs.at(input->name()));
  CompiledSession session(&model, threads);
  return session.run(ordered);
}

/// What a run produced, and the pipeline that prepared it (null for a library).
struct RunResult {
  std::vector<Tensor> outputs;
  std::vector<std::string> outputNames, outputFiles;
  std::unique_ptr<PassManager> pm;
};

/// A compiled library on the inputs the request gives.
RunResult runLibrary(const std::string &path, const InputRequest &request,
                     const std::string &outputDir, int threads) {
  RunResult result;
  RunnableModel compiled = openModelLibrary(path);
  const onnxc_model_descriptor &model = *compiled.descriptor;
  for (int32_t i = 0; i < model.num_outputs; ++i)
    result.outputNames.push_back(model.outputs[i].name);
  if (!outputDir.empty())
    result.outputFiles = outputPaths(outputDir, result.outputNames, request, path);
  std::map<std::string, Tensor> inputs =
      prepareInputs(*compiled.graph, request, MissingInputs::Refuse);
  result.outputs = runCompiledModel(model, *compiled.graph, inputs, threads);
  return result;
}

/// The outputs of a graph the JIT compiled for the inputs at hand.
std::vector<Tensor> runJit(Graph &graph, const std::map<std::string, Tensor> &inputs,
                           const TargetSelection &target, int threads) {
  // Shapes that follow input contents compile for the values at hand.
  InputSpecificJit jit =
      compileForInputs(graph, inputs, target, ProgressLine::instance().callback());
  if (!jit.specialized.empty()) {
    std::string list;
    for (const std::string &name : jit.specialized)
      list += (list.empty() ? "'" : ", '") + name + "'";
    std::cerr << "note: compiled for the given values of input"
              << (jit.specialized.size() > 1 ? "s " : " ") << list << "\n";
  }
  return runCompiledModel(*jit.model->descriptor(), graph, inputs, threads);
}

/// An .onnx or .ir model through the pipeline, then the JIT or the reference evaluator.
RunResult runGraph(const ParsedArgs &args, const std::string &path, const std::string &backend,
                   const InputRequest &request, const std::string &outputDir, int threads,
                   const std::optional<TargetSelection> &target) {
  RunResult result;
  result.pm = buildPipeline(args, "run", PrintOptions(), backend == "jit" ? 3 : 0);
  std::vector<std::string> externalFiles;
  std::unique_ptr<Graph> graph = loadModel(path, &externalFiles);
  runPipeline(*result.pm, *graph, args);
  // The evaluator reports no progress: the passes' line goes before it runs.
  if (backend == "ref")
    ProgressLine::instance().clear();
  for (const GraphOutput &output : graph->outputs())
    result.outputNames.push_back(output.name);
  if (!outputDir.empty())
    result.outputFiles = outputPaths(outputDir, result.outputNames, request, path, externalFiles);
  // A model the JIT can never run is reported as such, before its inputs.
  if (backend == "jit")
    checkCompilableShapes(*graph);
  std::map<std::string, Tensor> inputs = prepareInputs(*graph, request, MissingInputs::Refuse);
  result.outputs =
      backend == "ref" ? evaluateGraph(*graph, inputs) : runJit(*graph, inputs, *target, threads);
  return result;
}

/// Prints the outputs (or their JSON document) and writes the .npy files.
void reportOutputs(const ParsedArgs &args, const std::string &path, const std::string &backend,
                   const RunResult &result, const std::string &outputDir) {
  assert(result.outputs.size() == result.outputNames.size());
  if (!outputDir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(outputDir, ec);
    if (ec)
      fail(outputDir, ": cannot create directory (", ec.message(), ")");
  }
  llvm::json::Array outputList;
  for (size_t i = 0; i < result.outputs.size(); ++i) {
    const std::string file = outputDir.empty() ? "" : result.outputFiles[i];
    if (args.has("json"))
      outputList.push_back(outputJson(result.outputNames[i], result.outputs[i], file));
    else
      printOutput(result.outputNames[i], result.outputs[i]);
    if (!outputDir.empty())
      writeNpy(file, result.outputs[i]);
  }
  if (args.has("json")) {
    llvm::json::Object document{
        {"model", jsonText(path)}, {"backend", backend}, {"outputs", std::move(outputList)}};
    if (result.pm)
      addPipelineReport(document, *result.pm, args);
    printJson(std::move(document));
  }
}

int runRun(const ParsedArgs &args) {
  if (printTargetHelp(args))
    return 0;
  std::string path = modelArgument(args, "run");
  bool library = isModelLibraryPath(path);
  if (library)
    refuseCompileOptions(args, path, "run");
  std::string backend = args.get("backend", library ? "so" : "jit");
  if (backend != "ref" && backend != "jit" && backend != "so")
    throw UsageError("unknown --backend '" + backend +
                     "' (use jit or ref; see 'onnxc run --help')");
  if (library && backend != "so")
    throw UsageError("'" + path + "' is already compiled: --backend=" + backend +
                     " applies to .onnx and .ir models only");
  if (!library && backend == "so")
    throw UsageError("--backend=so needs a model library (MODEL.so)");
  InputRequest request = inputRequest(args);
  int threads = threadCount(args);
  std::optional<TargetSelection> target;
  if (backend == "jit")
    target = selectTarget(args);

  std::string outputDir = args.get("output-dir");
  checkModelFile(path, "run", ModelKinds::GraphsAndLibraries);
  RunResult result = library ? runLibrary(path, request, outputDir, threads)
                             : runGraph(args, path, backend, request, outputDir, threads, target);
  reportOutputs(args, path, backend, result, outputDir);
  return 0;
}

std::vector<OptionSpec> runOptions() {
  return joinOptions(
      {inputOptions(),
       {
           {"output-dir", "DIR", "write each output to DIR/<output name>.npy"},
           {"backend", "jit|ref",
            "compile with the JIT (default for .onnx/.ir) or run the reference evaluator"},
           {"threads", "N", "runtime threads for compiled models (default: one per core)"},
       },
       targetOptions(),
       pipelineOptions(),
       {jsonOption()}});
}

} // namespace

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

std::vector<OptionSpec> inputOptions() {
  return {
      {"input", "NAME=FILE.npy", "read input NAME from a .npy file", true},
      {"shape", "NAME=1x128",
       "generate input NAME with these dims (binds its symbolic dims); token ids are drawn below "
       "the vocabulary size from a .onnx, in [0, 10) from a .so. run needs every input from "
       "--input or --shape; bench generates the ones not given",
       true},
      {"seed", "N", "seed of generated inputs (default 0)"},
  };
}

Command runCommand() {
  return {"run", "run a model on .npy inputs (--shape: random ones) and print its outputs",
          "run MODEL.onnx|MODEL.ir|MODEL.so [--input NAME=FILE.npy]... [--shape NAME=1x128]... "
          "[options]",
          runOptions(), runRun};
}

} // namespace onnxc
