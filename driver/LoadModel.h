//===- driver/LoadModel.h - One way to read a model file ------------------===//
//
// Every front end (the onnxc tool, the Python package) reads a model file
// through this: `.onnx` imported, `.ir` parsed, both verified and
// shape-inferred; a compiled library is recognized by its extension and
// opened by driver/ModelLibrary.h instead.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// Loads a model by extension: `.onnx` is imported, `.ir` is parsed, then
/// verified and shape-inferred. Throws onnxc::Error naming the file (missing,
/// a folder, a compiled library, an unknown extension). `externalFiles`,
/// when given, receives every external data file read, so that a caller
/// writing files can refuse to overwrite the model's own.
std::unique_ptr<Graph> loadModel(const std::string &path,
                                 std::vector<std::string> *externalFiles = nullptr);

/// Whether `path` names a compiled model library (by its extension).
bool isModelLibraryPath(const std::string &path);

} // namespace onnxc
