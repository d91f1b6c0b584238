//===- frontend/ops/LinearAttentionOps.cpp - LinearAttention (opset 27) ----===//
//
// ONNX's LinearAttention is onnxc's IR op of the same name, operands,
// results and attributes (ir/Ops.def): the node is copied as it is, after
// a check that it carries no attribute the schema does not define. Its
// update rule, head counts and optional operands are checked where every
// graph's are, by the shape rule (ir/LinearAttentionAttributes.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

namespace onnxc {
namespace {

void importLinearAttention(OnnxNode &node) {
  node.requireAttributesAmong(
      {"chunk_size", "kv_num_heads", "q_num_heads", "scale", "update_rule"});
  node.emit(OpKind::LinearAttention, node.operands(), node.attributes());
}

} // namespace

void registerLinearAttentionImporters(OpImporterRegistry &registry) {
  registry.add({"", "LinearAttention", 27, OpKind::LinearAttention, importLinearAttention});
}

} // namespace onnxc
