//===- exporter/OnnxExporter.cpp - ir::Graph -> ONNX model ------------------===//
//
// Graph inputs become inputs with dim_param for symbolic dims (an expression
// such as `past+seq` is written as its text), constants become initializers
// with their data, nodes are written in program order (which is topological)
// and graph outputs keep their model names: an output bound to a value of
// another name, to a constant, or a second time to the same value, is
// written through an Identity.
//
//===----------------------------------------------------------------------===//
#include "exporter/OnnxExporter.h"

#include "exporter/NodeExport.h"
#include "ir/Error.h"

#include <algorithm>
#include <climits>
#include <fstream>
#include <unordered_set>

namespace onnxc {

namespace {

void typeToProto(const TensorType &type, onnx::ValueInfoProto &info, const std::string &context) {
  if (type.dtype == DType::Unknown)
    fail(context, ": its dtype is unknown, so it cannot be written as ONNX");
  onnx::TypeProto_Tensor &tensor = *info.mutable_type()->mutable_tensor_type();
  tensor.set_elem_type(onnxDataType(type.dtype));
  if (!type.shape.isRanked())
    return;
  onnx::TensorShapeProto &shape = *tensor.mutable_shape();
  for (const Dim &dim : type.shape.dims()) {
    onnx::TensorShapeProto_Dimension &out = *shape.add_dim();
    if (std::optional<int64_t> value = dim.constant())
      out.set_dim_value(*value);
    else if (!dim.isUnknown())
      out.set_dim_param(dim.str());
  }
}

/// Which outputs a node result (or a graph input of that name) carries
/// directly; the others get an Identity. Values whose name an output takes
/// over are renamed.
std::vector<bool> bindOutputs(const Graph &graph, OnnxGraphWriter &writer) {
  std::vector<bool> direct(graph.outputs().size(), false);
  std::unordered_set<std::string> claimed;
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const GraphOutput &output = graph.outputs()[i];
    if (!output.value)
      fail("graph output '", output.name, "' is bound to no value");
    bool sameName = output.value->name() == output.name;
    direct[i] = (output.value->isNodeResult() || output.value->isGraphInput()) && sameName &&
                !claimed.count(output.name);
    claimed.insert(output.name);
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const std::string &outputName = graph.outputs()[i].name;
    Value *holder = direct[i] ? nullptr : graph.findValue(outputName);
    if (!holder)
      continue;
    if (holder->isGraphInput())
      fail("graph output '", outputName, "' has the name of a graph input but another value");
    writer.rename(holder, writer.freshName(outputName + ".value"));
  }
  return direct;
}

/// The default domain's opset a graph needs, with its ONNX IR version:
/// kExportOpset, or the first opset that defines an op onnxc imports from a
/// newer one (TensorScatter 24, CumProd and BitCast 26, LinearAttention 27),
/// which onnxruntimes of opset 23 then refuse by name rather than a checker by op.
std::pair<int64_t, int64_t> exportOpsetOf(const Graph &graph) {
  int64_t opset = kExportOpset;
  for (const Node *node : graph.nodeList()) {
    if (node->kind() == OpKind::TensorScatter)
      opset = std::max<int64_t>(opset, 24);
    if (node->kind() == OpKind::CumProd || node->kind() == OpKind::BitCast)
      opset = std::max<int64_t>(opset, 26);
    if (node->kind() == OpKind::LinearAttention)
      opset = std::max<int64_t>(opset, 27);
  }
  // onnx's VERSION_TABLE: IR 12 came with opset 24, 13 with 25 to 27.
  int64_t irVersion = opset == kExportOpset ? kExportIrVersion : opset == 24 ? 12 : 13;
  return {opset, irVersion};
}

} // namespace

onnx::ModelProto exportOnnxModel(const Graph &graph, const OnnxExportOptions &options,
                                 OnnxExportReport *report) {
  OnnxExportReport localReport;
  OnnxExportReport &out = report ? *report : localReport;
  onnx::ModelProto model;
  auto [opset, irVersion] = exportOpsetOf(graph);
  model.set_ir_version(irVersion);
  model.set_producer_name("onnxc");
  if (!options.producerVersion.empty())
    model.set_producer_version(options.producerVersion);
  onnx::GraphProto &proto = *model.mutable_graph();
  proto.set_name(graph.name());
  OnnxGraphWriter writer(graph, proto, out);
  std::vector<bool> direct = bindOutputs(graph, writer);

  for (const Value *input : graph.inputs()) {
    onnx::ValueInfoProto &info = *proto.add_input();
    info.set_name(writer.name(input));
    typeToProto(input->type(), info, "graph input '" + input->name() + "'");
  }
  for (const Value *constant : graph.constants()) {
    onnx::TensorProto &tensor = *proto.add_initializer();
    tensor.set_name(writer.name(constant));
    tensorToProto(constant->constantValue(), tensor, "constant '" + constant->name() + "'");
  }
  for (const auto &node : graph.nodes()) {
    // Writing subgraphs back as GRAPH attributes (captures as outer names)
    // is not done yet; dropping them would write a broken model.
    if (node->hasSubgraphs())
      fail(node->describe(), ": exporting ", node->opName(),
           " (a node with subgraphs) to ONNX is not supported yet");
    exportNode(writer, *node);
  }
  for (size_t i = 0; i < graph.outputs().size(); ++i) {
    const GraphOutput &output = graph.outputs()[i];
    if (!direct[i])
      writer.addNode("Identity", {writer.name(output.value)}, {output.name},
                     output.name + "/Identity");
    onnx::ValueInfoProto &info = *proto.add_output();
    info.set_name(output.name);
    typeToProto(output.value->type(), info, "graph output '" + output.name + "'");
  }

  onnx::OperatorSetIdProto &standard = *model.add_opset_import();
  standard.set_domain("");
  standard.set_version(opset);
  if (!out.customOps.empty()) {
    onnx::OperatorSetIdProto &custom = *model.add_opset_import();
    custom.set_domain(kOnnxcDomain);
    custom.set_version(1);
  }
  return model;
}

void writeOnnxFile(const Graph &graph, const std::string &path, const OnnxExportOptions &options,
                   OnnxExportReport *report) {
  onnx::ModelProto model = exportOnnxModel(graph, options, report);
  if (model.ByteSizeLong() > size_t(INT_MAX))
    fail(path, ": the model is over 2 GiB, protobuf's limit (external data is not written yet)");
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  if (!file)
    fail(path, ": cannot open file for writing");
  if (!model.SerializeToOstream(&file) || !file.flush())
    fail(path, ": write error");
}

} // namespace onnxc
