//===- driver/ModelLibrary.h - Open and check a model.so ------------------===//
//
// Every front end that runs a compiled model.so (onnxc run, bench, generate;
// onnxc.load in Python) opens it here: the file is checked as ELF before the
// loader maps it (driver/LibraryFileCheck.h), then dlopen'ed, its generic
// descriptor accessor looked up and the descriptor checked by the runtime
// (onnxc_model_check), so a cut or foreign file is one error line, never a
// SIGBUS or a wild read; a path this process loaded before and that now
// holds another file is loaded afresh (driver/LibraryLoad.h). The model's signature (input names,
// dtypes, symbolic shapes) can be rebuilt from the descriptor as a graph, so the same input
// preparation as for an .onnx model applies.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/LibraryLoad.h"
#include "ir/Graph.h"
#include "onnxc/model_abi.h"

#include <memory>
#include <string>

namespace onnxc {

class ModelLibrary {
public:
  /// Checks and dlopens `path` and fetches its descriptor; throws
  /// onnxc::Error naming the file when it is not a whole onnxc model library.
  explicit ModelLibrary(const std::string &path);
  ~ModelLibrary();
  ModelLibrary(const ModelLibrary &) = delete;
  ModelLibrary &operator=(const ModelLibrary &) = delete;

  const onnxc_model_descriptor *descriptor() const { return descriptor_; }

private:
  LoadedLibrary library_;
  const onnxc_model_descriptor *descriptor_ = nullptr;
};

/// A graph with the descriptor's inputs (and no nodes): what input
/// preparation needs to know about a compiled model.
std::unique_ptr<Graph> signatureGraph(const onnxc_model_descriptor &model);

} // namespace onnxc
