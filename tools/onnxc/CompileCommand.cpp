//===- tools/onnxc/CompileCommand.cpp - onnxc compile -----------------------===//
//
//   onnxc compile model.onnx -o model.so            shared library + model.h
//   onnxc compile model.onnx -o m.s --emit=asm      inspection forms: obj, asm, llvm
//   onnxc compile model.onnx -o m.so --mcpu=x86-64  any x86-64 (portable vector code)
//   onnxc compile gpt.onnx -o lib/gpt.so --name gpt  onnxc_model_gpt() in gpt.so and gpt.h
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "codegen/ModelCompiler.h"
#include "driver/ArtifactOutputs.h"
#include "driver/GenaiFolder.h"
#include "driver/HalfInterface.h"
#include "driver/InputSpecialization.h"
#include "driver/LastPositionLogits.h"
#include "ir/Error.h"
#include "ir/MemoryBudget.h"
#include "tools/onnxc/JsonOutput.h"
#include "tools/onnxc/ModelFiles.h"
#include "tools/onnxc/ProgressLine.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace onnxc {

std::vector<OptionSpec> targetOptions() {
  return {
      {"mcpu", "CPU", "generate code for CPU (default native; 'help' lists them)"},
      {"mattr", "+f,-g", "add or remove CPU features (e.g. -avx2; 'help' lists them)"},
      {"precision", "P",
       "matrix products in f32 (default), bf16 (bf16 operands, f32 sums), or auto (bf16 where "
       "the CPU has AMX-BF16)"},
  };
}

TargetRequest targetRequest(const ParsedArgs &args) {
  TargetRequest request;
  request.cpu = args.get("mcpu", "native");
  request.attributes = args.get("mattr", "");
  request.precision = args.get("precision", "f32");
  return request;
}

TargetSelection selectTarget(const ParsedArgs &args) {
  try {
    return TargetSelection::select(targetRequest(args));
  } catch (const Error &error) {
    throw UsageError(error.what());
  }
}

bool printTargetHelp(const ParsedArgs &args) {
  bool printed = false;
  if (args.get("mcpu", "") == "help") {
    std::cout << "CPUs (--mcpu):\n";
    for (const std::string &cpu : TargetSelection::availableCpus())
      std::cout << "  " << cpu << "\n";
    printed = true;
  }
  if (args.get("mattr", "") == "help") {
    std::cout << "features (--mattr=+name,-name):\n";
    for (const std::string &feature : TargetSelection::availableFeatures())
      std::cout << "  " << feature << "\n";
    printed = true;
  }
  return printed;
}

int threadCount(const ParsedArgs &args) {
  // More threads than this is a typo, not a machine: the pool would try to
  // start them all.
  constexpr int kMaxThreads = 1024;
  std::string text = args.get("threads", "0");
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw UsageError("--threads needs a number of threads (0 = one per core), got '" + text + "'");
  if (text.size() > 4 || std::stoi(text) > kMaxThreads)
    throw UsageError("--threads " + text + " is above the limit of " + std::to_string(kMaxThreads));
  return std::stoi(text);
}

namespace {

std::string cpuFeatureList(const ModelPlan &plan) {
  std::string list;
  for (const std::string &feature : plan.cpuFeatures)
    list += (list.empty() ? "" : ",") + feature;
  return list;
}

/// How the messages of driver/ArtifactOutputs.h name this command's options.
const ArtifactOptionNames kToolOptionNames{"-o", "--header"};

ArtifactRequest::Kind emitKind(const std::string &text) {
  if (text == "so")
    return ArtifactRequest::Kind::SharedLibrary;
  if (text == "obj")
    return ArtifactRequest::Kind::Object;
  if (text == "asm")
    return ArtifactRequest::Kind::Assembly;
  if (text == "llvm")
    return ArtifactRequest::Kind::LlvmIr;
  if (text == "llvm-unoptimized")
    return ArtifactRequest::Kind::LlvmIrUnoptimized;
  throw UsageError("unknown --emit '" + text + "' (use so, obj, asm, llvm or llvm-unoptimized)");
}

/// The header beside a library: model.so -> model.h.
std::string defaultHeaderPath(const std::string &libraryPath) {
  return std::filesystem::path(libraryPath).replace_extension(".h").string();
}

/// --name, checked; else the name the output file gives (model.so -> model).
std::string modelName(const ParsedArgs &args, const std::string &output) {
  if (!args.has("name"))
    return modelNameForOutput(output);
  std::string name = args.get("name");
  if (!isValidModelName(name)) {
    std::string suggestion = modelNameForOutput(name + ".so");
    throw UsageError(
        "--name '" + name + "' is not a C identifier (letters, digits and '_', not " +
        "starting with a digit, at most 200 characters)" +
        (isValidModelName(suggestion) && !name.empty() ? "; try --name " + suggestion : ""));
  }
  return name;
}

/// --shape NAME=1x576: fixes input NAME's symbolic dims to these, for models
/// whose sizes no polynomial of the symbols expresses (strided convolutions,
/// ceil-mode pools). Every mistake names the input.
void pinInputDims(Graph &graph, const std::map<std::string, std::vector<int64_t>> &shapes) {
  if (shapes.empty())
    return;
  std::map<std::string, Tensor> pinned;
  std::map<std::string, std::pair<int64_t, std::string>> symbols; // symbol -> value, input
  for (const auto &[name, dims] : shapes) {
    const Value *input = nullptr;
    std::string names;
    for (const Value *candidate : graph.inputs()) {
      if (candidate->name() == name)
        input = candidate;
      names += (names.empty() ? "" : ", ") + candidate->name();
    }
    if (!input)
      throw UsageError("--shape " + name + "=...: the model has no input '" + name +
                       "' (its inputs: " + names + ")");
    const Shape &shape = input->shape();
    if (!shape.isRanked())
      throw UsageError("--shape " + name + "=...: input '" + name + "' has no known rank");
    if (shape.rank() != dims.size())
      throw UsageError("--shape " + name + "=...: input '" + name + "' is " + shape.str() +
                       ", rank " + std::to_string(shape.rank()) + ", not " +
                       std::to_string(dims.size()));
    for (size_t axis = 0; axis < dims.size(); ++axis) {
      std::string where = "input '" + name + "' dim " + std::to_string(axis);
      if (std::optional<int64_t> fixed = shape[axis].constant()) {
        if (*fixed != dims[axis])
          throw UsageError("--shape " + name + "=...: " + where + " is " + std::to_string(*fixed) +
                           ", not " + std::to_string(dims[axis]));
      } else if (shape[axis].isSymbol()) {
        auto [it, fresh] =
            symbols.emplace(shape[axis].symbolName(), std::make_pair(dims[axis], where));
        if (!fresh && it->second.first != dims[axis])
          throw UsageError("--shape: symbol '" + it->first + "' is " +
                           std::to_string(it->second.first) + " at " + it->second.second + " but " +
                           std::to_string(dims[axis]) + " at " + where);
      } else {
        throw UsageError("--shape " + name + "=...: " + where + " (" + shape[axis].str() +
                         ") is neither a number nor a symbol");
      }
    }
    pinned.emplace(name, Tensor::elided(input->dtype(), dims));
  }
  specializeInputDims(graph, pinned);
}

/// The KV caches the runtime may update in place (model_abi.h's
/// onnxc_cache_pair), one by one: a line of 24 pairs is 2,000 characters,
/// so the summary counts them and --verbose or --explain lists them; with
/// --explain also why the other candidates may not.
void printCachePairs(const ModelPlan &plan, bool list, bool explain) {
  if (list && !plan.cachePairs.empty()) {
    std::cout << plan.cachePairs.size() << " KV cache pair"
              << (plan.cachePairs.size() == 1 ? "" : "s") << " updated in place:";
    for (size_t p = 0; p < plan.cachePairs.size(); ++p) {
      const PlanCachePair &pair = plan.cachePairs[p];
      std::cout << (p ? ", " : " ") << plan.inputs[pair.input].name << " -> "
                << plan.outputs[pair.output].name << " (axis " << pair.axis << ", capacity "
                << plan.symbols[pair.capacitySymbol].name << ")";
    }
    std::cout << "\n";
  }
  if (explain)
    for (const std::string &note : plan.cacheNotes)
      std::cerr << "codegen: " << note << "\n";
}

/// --logits=last (the generator's form) or all (what the model computes): the default is
/// last for an onnxruntime-genai folder, which is compiled for generation, else all.
bool logitsAtLastPosition(const ParsedArgs &args, bool generationFolder) {
  std::string logits = args.get("logits", generationFolder ? "last" : "all");
  if (logits != "all" && logits != "last")
    throw UsageError("unknown --logits '" + logits + "' (use all or last)");
  return logits == "last";
}

/// What a compile made, for its report.
struct CompileReport {
  ModelPlan plan;
  std::string output;
  /// The header written beside a library, else empty.
  std::string header;
  double seconds = 0;
  /// The size of the output, -1 when it cannot be read.
  int64_t outputBytes = -1;

  int64_t constantBytes() const {
    int64_t bytes = 0;
    for (const PlanBuffer &buffer : plan.buffers)
      if (buffer.kind == BufferKind::Constant)
        bytes += int64_t(buffer.constant.size);
    return bytes;
  }
};

llvm::json::Array cachePairsJson(const ModelPlan &plan) {
  llvm::json::Array pairs;
  for (const PlanCachePair &pair : plan.cachePairs)
    pairs.push_back(
        llvm::json::Object{{"input", jsonText(plan.inputs[pair.input].name)},
                           {"output", jsonText(plan.outputs[pair.output].name)},
                           {"axis", int64_t(pair.axis)},
                           {"capacity", jsonText(plan.symbols[pair.capacitySymbol].name)}});
  return pairs;
}

llvm::json::Object compileJson(const CompileReport &report, const std::string &path,
                               const TargetSelection &target) {
  const ModelPlan &plan = report.plan;
  llvm::json::Object document{{"model", jsonText(path)},
                              {"name", jsonText(plan.name)},
                              {"cpu", target.cpu()},
                              {"precision", plan.precision},
                              {"cpu_features", cpuFeatureList(plan)},
                              {"steps", int64_t(plan.steps.size())},
                              {"constant_bytes", report.constantBytes()},
                              {"output", jsonText(report.output)},
                              {"output_bytes", std::max<int64_t>(report.outputBytes, 0)},
                              {"cache_pairs", cachePairsJson(plan)},
                              {"compile_ms", report.seconds * 1000}};
  if (!report.header.empty())
    document["header"] = jsonText(report.header);
  return document;
}

/// One line: what was compiled, for which CPU, into what and how large;
/// --verbose adds the CPU features and lists the cache pairs.
void printCompileSummary(const CompileReport &report, const TargetSelection &target,
                         const ParsedArgs &args) {
  const ModelPlan &plan = report.plan;
  std::cout << "compiled '" << plan.name << "' for " << target.cpu();
  if (plan.precision != "f32" || !target.precisionReason().empty())
    std::cout << " at " << plan.precision
              << (target.precisionReason().empty() ? "" : " (" + target.precisionReason() + ")");
  std::cout << ": " << plan.steps.size() << " steps, " << formatBytes(report.constantBytes())
            << " of constants";
  if (!plan.cachePairs.empty())
    std::cout << ", " << plan.cachePairs.size() << " KV cache pair"
              << (plan.cachePairs.size() == 1 ? "" : "s") << " in place";
  std::cout << " -> " << report.output;
  if (report.outputBytes >= 0)
    std::cout << " (" << formatBytes(report.outputBytes) << ")";
  if (!report.header.empty())
    std::cout << ", " << report.header;
  char timing[32];
  std::snprintf(timing, sizeof timing, " in %.2f s", report.seconds);
  std::cout << timing << (plan.codeFromCache ? " (machine code from the compile cache)" : "")
            << "\n";
  bool verbose = args.has("verbose");
  if (verbose && !plan.cpuFeatures.empty())
    std::cout << "CPU features the code needs: " << cpuFeatureList(plan) << "\n";
  printCachePairs(plan, verbose || args.has("explain"), args.has("explain"));
}

int runCompile(const ParsedArgs &args) {
  if (printTargetHelp(args))
    return 0;
  std::string path = modelArgument(args, "compile");
  std::string output = args.get("o");
  if (output.empty())
    throw UsageError("compile needs an output file: -o model.so (see 'onnxc compile --help')");
  ArtifactRequest request;
  request.outputPath = output;
  request.kind = emitKind(args.get("emit", "so"));
  request.headerPath = args.get("header");
  if (!request.headerPath.empty() && request.kind != ArtifactRequest::Kind::SharedLibrary)
    throw UsageError("--header applies to --emit=so only");
  bool headerIsDefault = request.headerPath.empty();
  if (headerIsDefault && request.kind == ArtifactRequest::Kind::SharedLibrary)
    request.headerPath = defaultHeaderPath(output);
  request.modelName = modelName(args, output);
  TargetSelection target = selectTarget(args);
  std::unique_ptr<PassManager> pm = buildPipeline(args, "compile", PrintOptions(), 3);
  std::map<std::string, std::vector<int64_t>> shapes = inputRequest(args).shapes;
  checkModelFile(path, "compile", ModelKinds::Graphs);
  checkOutputFile("-o", request.outputPath);
  if (request.kind == ArtifactRequest::Kind::SharedLibrary)
    checkOutputFile(headerIsDefault ? "the header" : "--header", request.headerPath);
  checkArtifactSparesInputs(path, request, headerIsDefault, kToolOptionNames);

  auto start = std::chrono::steady_clock::now();
  ProgressCallback progress = ProgressLine::instance().callback();
  reportProgress(progress, {CompileStage::Load, path, 0, 0});
  std::vector<std::string> externalFiles;
  std::unique_ptr<Graph> graph = loadModel(path, &externalFiles);
  checkArtifactSparesExternalData(externalFiles, request, kToolOptionNames);
  pinInputDims(*graph, shapes);
  bool lastLogits = logitsAtLastPosition(args, isGenaiFolder(args.positionals[0]));
  runPipeline(*pm, *graph, args);
  if (lastLogits) {
    std::string rewrite = keepLastPositionLogits(*graph);
    if (rewrite.empty())
      throw UsageError("--logits=last: " + path +
                       " has no logits output of [batch, seq, vocab] to keep the last position of");
    std::string interface = widenHalfInterface(*graph); // driver/HalfInterface.h
    if (args.has("verbose") || args.has("explain"))
      std::cout << rewrite << "\n" << (interface.empty() ? "" : interface + "\n");
  }
  ModelPlan plan = compileArtifact(*graph, target, request, progress);
  CompileReport report{std::move(plan), output,
                       request.kind == ArtifactRequest::Kind::SharedLibrary ? request.headerPath
                                                                            : std::string()};
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::error_code sizeError;
  report.outputBytes = int64_t(std::filesystem::file_size(output, sizeError));
  if (sizeError)
    report.outputBytes = -1;
  if (args.has("json")) {
    llvm::json::Object document = compileJson(report, path, target);
    addPipelineReport(document, *pm, args);
    printJson(std::move(document));
    return 0;
  }
  printCompileSummary(report, target, args);
  return 0;
}

std::vector<OptionSpec> compileOptions() {
  return joinOptions({{
                          {"o", "FILE", "output file (model.so, or the --emit form)"},
                          {"emit", "so|obj|asm|llvm|llvm-unoptimized",
                           "shared library + C header (default), object, assembly, LLVM IR, "
                           "LLVM IR as onnxc lowered it (verified, before LLVM's -O3)"},
                          {"header", "FILE", "where to write the C header (default: FILE with .h)"},
                          {"name", "NAME",
                           "the model's C name: onnxc_model_NAME() in the library and header "
                           "(default: the -o file's name, my-gpt.so -> my_gpt)"},
                          {"shape", "NAME=1x576",
                           "compile for input NAME of these dims: fixes its symbolic dims, for "
                           "models whose sizes do not follow from symbols (strided convolutions, "
                           "ceil-mode pools); the library then takes those dims only",
                           true},
                          {"logits", "all|last",
                           "all: the logits at every position, as the model computes them; "
                           "last: [batch, 1, vocab] at the last position only, all the generator "
                           "reads (onnxc generate and serve compile so): the LM head runs on one "
                           "row per prompt, not one per position (default: last for an "
                           "onnxruntime-genai folder, else all)"},
                      },
                      targetOptions(),
                      pipelineOptions(),
                      {jsonOption()}});
}

} // namespace

Command compileCommand() {
  return {"compile", "compile a model to a shared library (or object, assembly, LLVM IR)",
          "compile MODEL.onnx|MODEL.ir -o model.so [--name NAME] [--shape NAME=1x576] "
          "[--emit=so|obj|asm|llvm] [--mcpu=CPU] [options]",
          compileOptions(), runCompile};
}

} // namespace onnxc
