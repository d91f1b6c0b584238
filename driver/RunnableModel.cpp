//===- driver/RunnableModel.cpp - A model ready for sessions --------------===//
#include "driver/RunnableModel.h"

#include "driver/Compilation.h"

namespace onnxc {

RunnableModel openModelLibrary(const std::string &path) {
  RunnableModel model;
  model.library = std::make_unique<ModelLibrary>(path);
  model.descriptor = model.library->descriptor();
  model.graph = signatureGraph(*model.descriptor);
  return model;
}

RunnableModel compileModelInProcess(std::unique_ptr<Graph> graph, const TargetSelection &target,
                                    const ProgressCallback &progress) {
  RunnableModel model;
  model.jit = compileJit(*graph, target, progress);
  model.descriptor = model.jit->descriptor();
  model.graph = std::move(graph);
  return model;
}

} // namespace onnxc
