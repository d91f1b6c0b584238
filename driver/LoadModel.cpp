//===- driver/LoadModel.cpp - One way to read a model file ----------------===//
#include "driver/LoadModel.h"

#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"

#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

namespace onnxc {

namespace {

/// The result types a text IR file states (`%y = Exp(%x) : f32[n]`), by
/// value, before shape inference replaces them.
std::vector<std::pair<const Value *, TensorType>> statedResultTypes(const Graph &graph) {
  std::vector<std::pair<const Value *, TensorType>> stated;
  for (const auto &node : graph.nodes())
    for (const Value *result : node->results())
      if (result->dtype() != DType::Unknown || result->shape().isRanked())
        stated.emplace_back(result, result->type());
  return stated;
}

/// Refuses a stated result type that the op contradicts: another dtype,
/// rank or constant dim than inference finds (symbols may be named apart).
void checkStatedResultTypes(const std::vector<std::pair<const Value *, TensorType>> &stated) {
  for (const auto &[value, type] : stated) {
    const TensorType &inferred = value->type();
    bool contradicts = type.dtype != DType::Unknown && inferred.dtype != DType::Unknown &&
                       type.dtype != inferred.dtype;
    if (type.shape.isRanked() && inferred.shape.isRanked()) {
      contradicts |= type.shape.rank() != inferred.shape.rank();
      for (size_t i = 0; !contradicts && i < type.shape.rank(); ++i) {
        std::optional<int64_t> a = type.shape[i].constant(), b = inferred.shape[i].constant();
        contradicts = a && b && *a != *b;
      }
    }
    if (contradicts)
      fail(value->definingNode()->describe(), ": its result '%", value->name(), "' is written as ",
           type.str(), " but the op makes ", inferred.str());
  }
}

} // namespace

std::unique_ptr<Graph> loadModel(const std::string &path, std::vector<std::string> *externalFiles) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec))
    fail(path, std::filesystem::is_directory(path, ec) ? ": is a directory, not a model file"
                                                       : ": no such file");
  std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".onnx") {
    std::unique_ptr<Graph> graph = importOnnxFile(path, externalFiles);
    verifyGraph(*graph);
    return graph;
  }
  if (ext == ".ir") {
    std::unique_ptr<Graph> graph = parseGraphFile(path);
    verifyGraph(*graph);
    auto stated = statedResultTypes(*graph);
    inferShapes(*graph);
    checkStatedResultTypes(stated);
    return graph;
  }
  if (isModelLibraryPath(path))
    fail(path, ": a compiled library holds no graph to dump or compile (run it as it is: "
               "'onnxc run', 'onnxc bench', onnxc.load); pass the .onnx or .ir it was built from");
  fail(path, ": unknown model file type '", ext, "' (expected .onnx or .ir)");
}

bool isModelLibraryPath(const std::string &path) {
  std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".so" || extension == ".dylib";
}

} // namespace onnxc
