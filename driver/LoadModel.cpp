//===- driver/LoadModel.cpp - One way to read a model file ----------------===//
#include "driver/LoadModel.h"

#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
#include "ir/Verifier.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"

#include <filesystem>

namespace onnxc {

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
    inferShapes(*graph);
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
