//===- driver/RunnableModel.h - A model ready for sessions ----------------===//
//
// What `onnxc run|bench|generate`, onnxc.load and onnxc.compile hold once a
// model can run: a model.so opened and checked, or a graph compiled into
// this process by the JIT; either way a descriptor for runtime sessions and
// the graph its inputs are prepared against.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "driver/ModelLibrary.h"
#include "ir/Graph.h"

#include <memory>
#include <string>

namespace onnxc {

struct RunnableModel {
  /// The opened model.so, or null.
  std::unique_ptr<ModelLibrary> library;
  /// The code compiled into this process, or null.
  std::unique_ptr<JitModel> jit;
  /// The optimized graph (JIT), or the library's signature (inputs only).
  std::unique_ptr<Graph> graph;
  /// Owned by `library` or `jit`.
  const onnxc_model_descriptor *descriptor = nullptr;
};

/// Opens the model library at `path` (driver/ModelLibrary.h).
RunnableModel openModelLibrary(const std::string &path);

/// JIT-compiles an optimized `graph` for `target` (driver/Compilation.h).
RunnableModel compileModelInProcess(std::unique_ptr<Graph> graph, const TargetSelection &target,
                                    const ProgressCallback &progress = {});

} // namespace onnxc
