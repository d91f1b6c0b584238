//===- tests/node/NodeCase.h - One ONNX backend node-test case -------------===//
//
// A node-test case is a folder holding model.onnx and test_data_set_N/
// folders of input_K.pb / output_K.pb TensorProtos. Deciding whether a case
// is in scope reads only the ModelProto (op types, domains, opset); running
// it goes through the real importer and the reference evaluator.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::nodetest {

/// What the runner needs to know about a case before running it.
struct CaseInfo {
  std::string name;      // folder name, e.g. "test_add_bcast"
  std::string directory; // the case folder
  int64_t opset = 0;     // ai.onnx version from opset_import (0 if absent)
  /// The other domains' versions from opset_import (ai.onnx.preview).
  std::map<std::string, int64_t> domainOpsets;
  /// Distinct op types of the main graph, in first-seen order.
  std::vector<std::string> opTypes;
  /// "domain::Op" or "Op" for every node op onnxc does not declare.
  std::vector<std::string> undeclaredOps;
  /// Graph inputs that are not initializers, in order: input_K.pb feeds
  /// the K-th of these (the ONNX node-test convention).
  std::vector<std::string> dataInputs;
  std::vector<std::string> outputs;
  /// Declared ONNX element types (TensorProto::DataType), parallel to
  /// dataInputs and outputs; 0 where the model does not say.
  std::vector<int32_t> dataInputTypes, outputTypes;

  bool inScope() const { return undeclaredOps.empty(); }
};

/// What runs a case's graph: the reference evaluator; lowering + ORC JIT +
/// runtime (compiled for the host CPU, one thread); or the same lowering
/// written as a shared library (`onnxc compile`), dlopened and run.
/// Reference: the evaluator's outputs. Jit, SharedLibrary: compiled code's.
/// Lower: every case lowered to LLVM IR (the compiler's own code, for the
/// sanitizer builds) and the evaluator's outputs compared; no kernel runs.
enum class Backend { Reference, Jit, SharedLibrary, Lower };
void setCaseBackend(Backend backend);

/// Reads the case's model.onnx protobuf (no import). Throws onnxc::Error if
/// the model file cannot be read or parsed.
CaseInfo readCaseInfo(const std::string &directory);

/// Imports the model and runs every test_data_set_N through the reference
/// evaluator. Returns nullopt when all outputs match, else a one-line reason
/// (onnxc::Error messages included verbatim). Never throws.
std::optional<std::string> runCase(const CaseInfo &info);

} // namespace onnxc::nodetest
