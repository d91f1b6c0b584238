//===- driver/Compilation.cpp - Options and steps of compiling a model ---===//
#include "driver/Compilation.h"

#include "driver/LoadModel.h"
#include "ir/Error.h"
#include "passes/Pipelines.h"

#include <iostream>
#include <mutex>

namespace onnxc {

namespace {
std::mutex &compileMutex() {
  static std::mutex mutex;
  return mutex;
}
} // namespace

std::unique_ptr<PassManager> buildPipeline(const CompileOptions &options, std::ostream *irStream) {
  PassManagerOptions passOptions = options.passManager;
  passOptions.progress = options.progress;
  auto pipeline = std::make_unique<PassManager>(passOptions, irStream ? irStream : &std::cerr);
  addOptimizationPipeline(*pipeline, options.optLevel);
  addPassesByName(*pipeline, options.passes);
  return pipeline;
}

std::unique_ptr<Graph> loadOptimizedModel(const std::string &path, PassManager &pipeline,
                                          std::vector<std::string> *externalFiles) {
  std::unique_ptr<Graph> graph = loadModel(path, externalFiles);
  pipeline.run(*graph);
  return graph;
}

std::unique_ptr<JitModel> compileJit(const Graph &graph, const TargetSelection &target,
                                     const ProgressCallback &progress) {
  std::lock_guard<std::mutex> lock(compileMutex());
  return compileModelJit(graph, target, progress);
}

ModelPlan compileArtifact(const Graph &graph, const TargetSelection &target,
                          const ArtifactRequest &request, const ProgressCallback &progress) {
  std::lock_guard<std::mutex> lock(compileMutex());
  return compileModelArtifact(graph, target, request, progress);
}

} // namespace onnxc
