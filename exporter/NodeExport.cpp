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

/// A LayerNorm / RMSNorm scale or bias as onnxruntime takes it: of shape
/// X.shape[axis:] exactly (it refuses the broadcasting ONNX allows, a [1]
/// scale over [s, 8]), so anything else is expanded to that shape.
std::string normalizedShapeParam(OnnxGraphWriter &writer, const Node &node, const Value *x,
                                 const std::string &xName, const Value *param) {
  if (!param)
    return "";
  const Shape &xShape = x->shape(), &paramShape = param->shape();
  int64_t axis = node.getInt("axis", -1);
  if (!xShape.isRanked() || !paramShape.isRanked())
    return writer.name(param);
  if (axis < 0)
    axis += int64_t(xShape.rank());
  if (axis < 0 || axis > int64_t(xShape.rank()))
    return writer.name(param); // the verifier's to report, not the exporter's
  std::vector<Dim> normalized(xShape.dims().begin() + axis, xShape.dims().end());
  if (paramShape.dims() == normalized)
    return writer.name(param);
  std::string shape = writer.freshName(writer.name(param) + ".normalized_shape");
  onnx::NodeProto &shapeNode = writer.addNode("Shape", {xName}, {shape}, node.name() + "/Shape");
  addIntAttribute(shapeNode, "start", axis);
  return writer.addTemp("Expand", {writer.name(param), shape}, writer.name(param) + ".expanded",
                        node.name());
}

/// LayerNormalization / RMSNormalization of `xName` (the value `x` has).
void exportNormalization(OnnxGraphWriter &writer, const Node &node, const Value *x,
                         const std::string &xName, std::vector<std::string> outputs) {
  std::vector<std::string> inputs = {xName};
  for (size_t i = node.kind() == OpKind::SkipLayerNormalization ? 2 : 1; i < node.numOperands();
       ++i)
    inputs.push_back(normalizedShapeParam(writer, node, x, xName, node.operand(i)));
  std::string_view op =
      node.kind() == OpKind::RMSNormalization ? "RMSNormalization" : "LayerNormalization";
  onnx::NodeProto &norm = writer.addNode(op, std::move(inputs), std::move(outputs), node.name());
  writer.copyAttributes(node, norm);
}

std::vector<std::string> resultNames(const OnnxGraphWriter &writer, const Node &node) {
  std::vector<std::string> names;
  for (const Value *result : node.results())
    names.push_back(writer.name(result));
  return names;
}

/// SkipLayerNormalization(x, skip, scale[, bias]) -> Y[, x + skip] is the Add
/// it was fused from followed by a LayerNormalization over the sum.
void exportSkipLayerNorm(OnnxGraphWriter &writer, const Node &node) {
  std::string sum = node.numResults() > 1 ? writer.name(node.result(1))
                                          : writer.freshName(writer.name(node.result(0)) + ".sum");
  writer.addNode("Add", {writer.name(node.operand(0)), writer.name(node.operand(1))}, {sum},
                 node.name().empty() ? "" : node.name() + "/Add");
  exportNormalization(writer, node, node.operand(0), sum, {writer.name(node.result(0))});
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
  case OpKind::DynamicQuantizedMatMul:
  case OpKind::QuantizedMatMul:
  case OpKind::BlockQuantizedMatMul:
  case OpKind::QuantizedConv:
    // No standard ONNX op computes it in one node: an onnxc-domain node.
    writer.exportCustom(node);
    return;
  case OpKind::LayerNormalization:
  case OpKind::RMSNormalization:
    exportNormalization(writer, node, node.operand(0), writer.name(node.operand(0)),
                        resultNames(writer, node));
    return;
  default:
    writer.exportAsIs(node);
    return;
  }
}

} // namespace onnxc
