//===- exporter/NodeExport.cpp - Writing one IR node as ONNX nodes ----------===//
//
// ONNX-level ops are written as they are: the IR keeps the opset-23 form of
// every op (operands where opset 23 has inputs, attributes where it has
// attributes). onnxc's fused ops without a standard counterpart are
// decomposed into the standard ops they stand for, so onnxruntime can run
// every exported model; see docs/EXPORT.md for what stays custom.
//
//===----------------------------------------------------------------------===//
#include "exporter/NodeExport.h"

namespace onnxc {

namespace {

/// SkipLayerNormalization(x, skip, scale[, bias]) -> Y[, x + skip] is the Add
/// it was fused from followed by a LayerNormalization over the sum.
void exportSkipLayerNorm(OnnxGraphWriter &writer, const Node &node) {
  std::string sum = node.numResults() > 1 ? writer.name(node.result(1))
                                          : writer.freshName(writer.name(node.result(0)) + ".sum");
  writer.addNode("Add", {writer.name(node.operand(0)), writer.name(node.operand(1))}, {sum},
                 node.name().empty() ? "" : node.name() + "/Add");
  onnx::NodeProto &norm =
      writer.addNode("LayerNormalization",
                     {sum, writer.name(node.operand(2)), writer.name(node.operand(3))},
                     {writer.name(node.result(0))}, node.name());
  writer.copyAttributes(node, norm);
}

} // namespace

void exportNode(OnnxGraphWriter &writer, const Node &node) {
  switch (node.kind()) {
  case OpKind::SkipLayerNormalization:
    exportSkipLayerNorm(writer, node);
    return;
  case OpKind::Attention:
    exportAttention(writer, node);
    return;
  case OpKind::AdditiveAttention:
    exportAdditiveAttention(writer, node);
    return;
  default:
    writer.exportAsIs(node);
    return;
  }
}

} // namespace onnxc
