//===- frontend/OpImporterRegistry.h - (domain, op, opset) -> importer ------===//
//
// Every ONNX op onnxc understands has one or more entries here, one per
// version whose form the importer handles differently. An ONNX node is
// imported by the entry with the highest since_version not above the
// model's opset for the node's domain; a node with no such entry is an
// unsupported op.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/ImportContext.h"
#include "ir/OpKind.h"

#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace onnxc {

/// Imports one ONNX node into the graph (see OnnxNode).
using OpImportFn = void (*)(OnnxNode &node);

struct OpImporter {
  std::string domain; // canonical: "" for ai.onnx
  std::string opType;
  int64_t sinceVersion;
  OpKind kind; // the IR op it produces (handed to the function)
  OpImportFn import;
};

class OpImporterRegistry {
public:
  /// The registry holding every importer of frontend/ops/.
  static const OpImporterRegistry &instance();

  void add(OpImporter importer);
  /// Registers `opType` -> IR op of the same name, attributes copied.
  void addOneToOne(OpKind kind, int64_t sinceVersion);
  /// The importer for a node, or null when the op is unsupported at `opset`.
  const OpImporter *lookup(const std::string &domain, const std::string &opType,
                           int64_t opset) const;
  /// Every entry: (domain, op type) -> its versions, oldest first (the
  /// supported-ops table, tools/ops_table).
  const std::map<std::pair<std::string, std::string>, std::vector<OpImporter>> &entries() const {
    return entries_;
  }

private:
  // (domain, op type) -> entries sorted by since_version.
  std::map<std::pair<std::string, std::string>, std::vector<OpImporter>> entries_;
};

/// Creates the IR op named by node.kind() from the node's inputs and
/// attributes unchanged: the importer of ops whose ONNX form is the IR form.
void importOneToOne(OnnxNode &node);

// One registration function per op family, in frontend/ops/.
void registerElementwiseImporters(OpImporterRegistry &registry);
void registerReductionImporters(OpImporterRegistry &registry);
void registerMovementImporters(OpImporterRegistry &registry);
void registerNeuralNetImporters(OpImporterRegistry &registry);
void registerFunctionImporters(OpImporterRegistry &registry);
void registerQuantizationImporters(OpImporterRegistry &registry);
void registerVisionImporters(OpImporterRegistry &registry);
void registerNormalizationFunctionImporters(OpImporterRegistry &registry);
void registerControlFlowImporters(OpImporterRegistry &registry);
void registerAttentionImporters(OpImporterRegistry &registry);
/// CausalConvWithState (opset 27) as Concat, Conv and Slice.
void registerCausalConvImporters(OpImporterRegistry &registry);
/// ai.onnx.preview FlexAttention as the attention it computes, its modifiers inlined.
void registerFlexAttentionImporters(OpImporterRegistry &registry);
/// LinearAttention (opset 27).
void registerLinearAttentionImporters(OpImporterRegistry &registry);
/// com.microsoft MatMulNBits, GatherBlockQuantized, MatMulBnb4.
void registerMicrosoftQuantizationImporters(OpImporterRegistry &registry);
// com.microsoft contrib ops (and onnxruntime's ai.onnx SimplifiedLayerNormalization).
void registerMicrosoftNormalizationImporters(OpImporterRegistry &registry);
// com.microsoft attention ops (frontend/ops/Contrib*AttentionOps.cpp, MicrosoftRotaryGqaOps.cpp).
void registerMicrosoftRotaryGqaImporters(OpImporterRegistry &registry);
void registerMicrosoftBertAttentionImporters(OpImporterRegistry &registry);

} // namespace onnxc
