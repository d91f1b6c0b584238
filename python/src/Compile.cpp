//===- python/src/Compile.cpp - onnxc.compile, dump and explain -----------===//
#include "python/src/Compile.h"

#include "codegen/ModelCompiler.h"
#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"

#include <filesystem>
#include <mutex>
#include <sstream>

namespace onnxc::python {

namespace {

// LLVM's target registry and option state are process-wide; compiles take
// turns (a model's runs do not: they use only the runtime).
std::mutex compileMutex;

/// The model as the tool loads it: `.onnx` imported (shapes inferred), `.ir`
/// parsed and shape-inferred; verified either way.
std::unique_ptr<Graph> loadGraph(const std::string &path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(path, ": no such file");
  std::string ext = std::filesystem::path(path).extension().string();
  std::unique_ptr<Graph> graph;
  if (ext == ".onnx") {
    graph = importOnnxFile(path);
  } else if (ext == ".ir") {
    graph = parseGraphFile(path);
    verifyGraph(*graph);
    inferShapes(*graph);
    return graph;
  } else if (ext == ".so") {
    fail(path, ": a compiled library holds no graph to dump or compile (onnxc.load runs it); "
               "pass the .onnx or .ir it was built from");
  } else {
    fail(path, ": unknown model file type '", ext, "' (expected .onnx or .ir)");
  }
  verifyGraph(*graph);
  return graph;
}

/// Loads the model and runs the requested pipeline on it.
std::unique_ptr<Graph> optimizedGraph(const PipelineRequest &request, PassManager &pm) {
  if (request.optLevel < 0 || request.optLevel > 3)
    fail("unknown optimization level ", request.optLevel, " (use 0 to 3)");
  addOptimizationPipeline(pm, request.optLevel);
  addPassesByName(pm, request.passes);
  std::unique_ptr<Graph> graph = loadGraph(request.modelPath);
  pm.run(*graph);
  return graph;
}

TargetSelection selectTarget(const TargetOptions &options) {
  TargetRequest request;
  request.cpu = options.cpu;
  request.attributes = options.attributes;
  return TargetSelection::select(request);
}

} // namespace

std::string dumpModel(const PipelineRequest &request) {
  PassManager pm;
  std::unique_ptr<Graph> graph = optimizedGraph(request, pm);
  return printGraphToString(*graph);
}

std::string explainModel(const PipelineRequest &request) {
  PassManagerOptions options;
  options.explain = true;
  PassManager pm(options);
  optimizedGraph(request, pm);
  std::ostringstream report;
  pm.printStatistics(report);
  pm.printExplanations(report);
  return report.str();
}

std::unique_ptr<JitModel> compileJit(const PipelineRequest &request, const TargetOptions &target) {
  std::lock_guard<std::mutex> lock(compileMutex);
  TargetSelection selection = selectTarget(target);
  PassManager pm;
  std::unique_ptr<Graph> graph = optimizedGraph(request, pm);
  return compileModelJit(*graph, selection);
}

void compileLibrary(const PipelineRequest &request, const TargetOptions &target,
                    const std::string &libraryPath, const std::string &headerPath) {
  std::lock_guard<std::mutex> lock(compileMutex);
  TargetSelection selection = selectTarget(target);
  PassManager pm;
  std::unique_ptr<Graph> graph = optimizedGraph(request, pm);
  ArtifactRequest artifact;
  artifact.outputPath = libraryPath;
  artifact.kind = ArtifactRequest::Kind::SharedLibrary;
  artifact.headerPath = headerPath.empty()
                            ? std::filesystem::path(libraryPath).replace_extension(".h").string()
                            : headerPath;
  compileModelArtifact(*graph, selection, artifact);
}

} // namespace onnxc::python
