//===- frontend/OnnxImporter.h - ONNX model -> ir::Graph --------------------===//
#pragma once

#include "ir/Graph.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// Reads a .onnx file and imports its main graph: initializers (raw_data and
/// typed fields, external data resolved inside the model's folder), Constant
/// nodes folded into constants, symbolic and unknown dims, and every node
/// through the import function for its (domain, op type, opset). Throws
/// onnxc::Error "FILE: problem" (naming the node where there is one); ops
/// without an importer are all reported in one error. Shapes are inferred
/// before returning.
std::unique_ptr<Graph> importOnnxFile(const std::string &path);

/// What `onnxc inspect` shows about a model, read without importing it.
struct ModelSummary {
  std::string producer;                            // producer_name + version
  int64_t irVersion = 0;
  std::map<std::string, int64_t> opsets;           // domain ("" = ai.onnx) -> version
  std::vector<std::string> inputs, outputs;        // "name: f32[batch, seq]"
  std::map<std::string, int64_t> opHistogram;      // op type -> count
  int64_t numParameters = 0;                       // elements in initializers
  int64_t parameterBytes = 0;
  std::vector<std::string> unsupportedOps;         // "Op (node 'name')"
};
ModelSummary summarizeOnnxFile(const std::string &path);

} // namespace onnxc
