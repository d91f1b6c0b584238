//===- tools/onnxc/CompiledLibrary.h - Load a model.so written by compile --===//
//
// `onnxc run model.so` and `onnxc bench model.so` dlopen the library, look
// up the generic descriptor accessor, and rebuild the model's signature
// (input and output names, dtypes, symbolic shapes) from the descriptor, so
// the same input preparation as for an .onnx model applies.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "onnxc/model_abi.h"

#include <memory>
#include <string>

namespace onnxc {

class CompiledLibrary {
public:
  /// dlopens `path` and fetches its descriptor; throws onnxc::Error naming
  /// the file when it is not an onnxc model library.
  explicit CompiledLibrary(const std::string &path);
  ~CompiledLibrary();
  CompiledLibrary(const CompiledLibrary &) = delete;
  CompiledLibrary &operator=(const CompiledLibrary &) = delete;

  const onnxc_model_descriptor *descriptor() const { return descriptor_; }

private:
  void *handle_ = nullptr;
  const onnxc_model_descriptor *descriptor_ = nullptr;
};

/// Whether `path` names a compiled model library (by its extension).
bool isCompiledLibraryPath(const std::string &path);

/// A graph with the descriptor's inputs (and no nodes): what input
/// preparation needs to know about a compiled model.
std::unique_ptr<Graph> signatureGraph(const onnxc_model_descriptor &model);

} // namespace onnxc
