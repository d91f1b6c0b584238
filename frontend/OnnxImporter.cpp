// STUB: replaced by the ONNX importer.
#include "frontend/OnnxImporter.h"
#include "ir/Error.h"
namespace onnxc {
std::unique_ptr<Graph> importOnnxFile(const std::string &path) { fail(path, ": importer not implemented"); }
ModelSummary summarizeOnnxFile(const std::string &path) { fail(path, ": importer not implemented"); }
} // namespace onnxc
