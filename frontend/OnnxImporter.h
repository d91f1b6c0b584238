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
/// before returning. `externalFiles`, when given, receives the path of every
/// external data file read.
std::unique_ptr<Graph> importOnnxFile(const std::string &path,
                                      std::vector<std::string> *externalFiles = nullptr);

/// What `onnxc inspect` shows about a model, read without importing it.
struct ModelSummary {
  std::string producer; // producer_name + version
  int64_t irVersion = 0;
  std::map<std::string, int64_t> opsets;      // domain ("" = ai.onnx) -> version
  std::vector<std::string> inputs, outputs;   // "name: f32[batch, seq]"
  std::map<std::string, int64_t> opHistogram; // op type -> count
  // Elements in initializers and their bytes, exact even for the absurd
  // dims a hostile model may claim ([2^32, 2^32] is 2^64 elements);
  // summarizeOnnxFile fails rather than wrap past 2^128.
  unsigned __int128 numParameters = 0;
  unsigned __int128 parameterBytes = 0;
  std::vector<std::string> unsupportedOps; // "Op (node 'name')"
};
ModelSummary summarizeOnnxFile(const std::string &path);

} // namespace onnxc
