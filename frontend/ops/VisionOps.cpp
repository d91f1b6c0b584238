//===- frontend/ops/VisionOps.cpp - Pad, pooling, Resize, ConvTranspose ----===//
//
// These map onto IR ops of the same name and attributes (ir/Ops.def). The
// importer refuses what the IR op does not compute, with one line each:
// MaxPool's Indices output, and the Pad modes, Pad operands and Resize
// attributes newer than the model's opset (axes at 18, wrap at 19, Resize's
// antialias, axes and keep_aspect_ratio_policy at 18). Every
// other check is shared by the shape rule and the kernels
// (ir/PoolingAttributes.h).
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"

#include <initializer_list>

namespace onnxc {

namespace {

/// The node's inputs without trailing empty ones.
std::vector<Value *> trimmedOperands(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  while (!operands.empty() && !operands.back())
    operands.pop_back();
  return operands;
}

std::string stringAttribute(OnnxNode &node, const AttributeMap &attributes, const char *name,
                            const char *fallback) {
  auto it = attributes.find(name);
  if (it == attributes.end())
    return fallback;
  if (it->second.kind() != Attribute::Kind::String)
    fail(node.describe(), ": attribute '", name, "' must be a string");
  return it->second.asString();
}

void importPad(OnnxNode &node) {
  node.requireAttributesAmong({"mode"});
  AttributeMap attributes = node.attributes();
  std::string mode = stringAttribute(node, attributes, "mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    fail(node.describe(), ": Pad mode '", mode,
         "' is not supported (constant, reflect, edge, wrap)");
  if (mode == "wrap" && node.opset() < 19)
    fail(node.describe(), ": Pad mode 'wrap' is not defined at opset ", node.opset(),
         " (it is from opset 19)");
  std::vector<Value *> operands = trimmedOperands(node);
  if (operands.size() > 3 && node.opset() < 18)
    fail(node.describe(), ": Pad's axes input is not defined at opset ", node.opset(),
         " (it is from opset 18)");
  node.emit(OpKind::Pad, operands, attributes);
}

void importPool(OnnxNode &node) {
  if (node.kind() == OpKind::MaxPool) {
    node.requireAttributesAmong(
        {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"});
    if (node.proto().output_size() > 1 && !node.proto().output(1).empty())
      fail(node.describe(), ": MaxPool's Indices output is not supported");
  } else {
    node.requireAttributesAmong({"auto_pad", "ceil_mode", "count_include_pad", "dilations",
                                 "kernel_shape", "pads", "strides"});
  }
  AttributeMap attributes = node.attributes();
  // storage_order only orders the Indices output, which is refused above.
  attributes.erase("storage_order");
  node.emit(node.kind(), trimmedOperands(node), attributes);
}

void importConvTranspose(OnnxNode &node) {
  node.requireAttributesAmong({"auto_pad", "dilations", "group", "kernel_shape", "output_padding",
                               "output_shape", "pads", "strides"});
  node.emit(OpKind::ConvTranspose, trimmedOperands(node), node.attributes());
}

void importResize(OnnxNode &node) {
  node.requireAttributesAmong({"antialias", "axes", "coordinate_transformation_mode",
                               "cubic_coeff_a", "exclude_outside", "extrapolation_value",
                               "keep_aspect_ratio_policy", "mode", "nearest_mode"});
  AttributeMap attributes = node.attributes();
  for (const char *since18 : {"antialias", "axes", "keep_aspect_ratio_policy"})
    if (attributes.count(since18) && node.opset() < 18)
      fail(node.describe(), ": Resize's ", since18, " is not defined at opset ", node.opset(),
           " (it is from opset 18)");
  node.emit(OpKind::Resize, trimmedOperands(node), attributes);
}

} // namespace

void registerVisionImporters(OpImporterRegistry &registry) {
  registry.add({"", "Pad", 13, OpKind::Pad, importPad});
  registry.add({"", "MaxPool", 12, OpKind::MaxPool, importPool});
  registry.add({"", "AveragePool", 11, OpKind::AveragePool, importPool});
  registry.add({"", "ConvTranspose", 11, OpKind::ConvTranspose, importConvTranspose});
  registry.add({"", "Resize", 13, OpKind::Resize, importResize});
}

} // namespace onnxc
