//===- python/src/Compile.cpp - onnxc.compile, dump and explain -----------===//
#include "python/src/Compile.h"
#include "driver/HalfInterface.h"
#include "driver/LastPositionLogits.h"
#include "driver/MergedDecoder.h"

#include "driver/ArtifactOutputs.h"
#include "driver/Compilation.h"
#include "driver/LoadModel.h"
#include "ir/Error.h"
#include "ir/text/Printer.h"
#include "passes/Pipelines.h"

#include <filesystem>
#include <sstream>

namespace onnxc::python {

namespace {

/// The driver's options from the module's arguments; the level is checked
/// where the CLI's -O is (passes/Pipelines.h), with the same message.
CompileOptions compileOptions(const PipelineRequest &request, const TargetOptions *target) {
  CompileOptions options;
  options.optLevel = parseOptimizationLevel(std::to_string(request.optLevel));
  options.passes = request.passes;
  if (target) {
    options.target.cpu = target->cpu;
    options.target.attributes = target->attributes;
    options.target.precision = target->precision;
  }
  return options;
}

/// The requested pipeline on a loaded graph, and the forms for the generator
/// it asks for (driver/MergedDecoder.h, driver/LastPositionLogits.h).
void optimize(Graph &graph, const PipelineRequest &request, PassManager &pm) {
  if (request.generation)
    fixCacheBranchForGeneration(graph);
  pm.run(graph);
  if (request.lastLogits && keepLastPositionLogits(graph).empty())
    throw Error(request.modelPath +
                ": logits='last' needs a logits output of [batch, seq, vocab]; the model has none");
  if (request.lastLogits)
    widenHalfInterface(graph); // the generator reads f32 (driver/HalfInterface.h)
}

/// Loads the model and runs the requested pipeline on it.
std::unique_ptr<Graph> optimizedGraph(const PipelineRequest &request, PassManager &pm) {
  if (!request.generation && !request.lastLogits)
    return loadOptimizedModel(request.modelPath, pm);
  std::unique_ptr<Graph> graph = loadModel(request.modelPath);
  optimize(*graph, request, pm);
  return graph;
}

} // namespace

std::string dumpModel(const PipelineRequest &request) {
  std::unique_ptr<PassManager> pm = buildPipeline(compileOptions(request, nullptr));
  std::unique_ptr<Graph> graph = optimizedGraph(request, *pm);
  return printGraphToString(*graph);
}

std::string explainModel(const PipelineRequest &request) {
  CompileOptions options = compileOptions(request, nullptr);
  options.passManager.explain = true;
  std::unique_ptr<PassManager> pm = buildPipeline(options);
  optimizedGraph(request, *pm);
  std::ostringstream report;
  pm->printStatistics(report);
  pm->printExplanations(report);
  return report.str();
}

std::unique_ptr<JitModel> compileJit(const PipelineRequest &request, const TargetOptions &target,
                                     const ProgressCallback &progress) {
  CompileOptions options = compileOptions(request, &target);
  options.progress = progress;
  TargetSelection selection = TargetSelection::select(options.target);
  std::unique_ptr<PassManager> pm = buildPipeline(options);
  reportProgress(progress, {CompileStage::Load, request.modelPath, 0, 0});
  std::unique_ptr<Graph> graph = optimizedGraph(request, *pm);
  return onnxc::compileJit(*graph, selection, progress);
}

void compileLibrary(const PipelineRequest &request, const TargetOptions &target,
                    const std::string &libraryPath, const std::string &headerPath,
                    const ProgressCallback &progress) {
  CompileOptions options = compileOptions(request, &target);
  options.progress = progress;
  TargetSelection selection = TargetSelection::select(options.target);
  std::unique_ptr<PassManager> pm = buildPipeline(options);
  ArtifactRequest artifact;
  artifact.outputPath = libraryPath;
  artifact.kind = ArtifactRequest::Kind::SharedLibrary;
  artifact.headerPath = headerPath.empty()
                            ? std::filesystem::path(libraryPath).replace_extension(".h").string()
                            : headerPath;
  // The same refusals as `onnxc compile`, before anything is written.
  const ArtifactOptionNames names{"output=", "header="};
  checkArtifactSparesInputs(request.modelPath, artifact, headerPath.empty(), names);
  reportProgress(progress, {CompileStage::Load, request.modelPath, 0, 0});
  std::vector<std::string> externalFiles;
  std::unique_ptr<Graph> graph = loadModel(request.modelPath, &externalFiles);
  checkArtifactSparesExternalData(externalFiles, artifact, names);
  optimize(*graph, request, *pm);
  compileArtifact(*graph, selection, artifact, progress);
}

} // namespace onnxc::python
