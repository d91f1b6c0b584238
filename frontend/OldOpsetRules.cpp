//===- frontend/OldOpsetRules.cpp - onnxc's own rules around the converter -===//
#include "frontend/OldOpsetRules.h"

#include "frontend/ImportContext.h"
#include "frontend/ModelLoader.h"
#include "ir/Error.h"

#include <unordered_map>

namespace onnxc {

namespace {

bool isDefaultDomain(const onnx::NodeProto &node) { return canonicalDomain(node.domain()).empty(); }

bool isLegacySoftmax(const onnx::NodeProto &node) {
  const std::string &op = node.op_type();
  return isDefaultDomain(node) && (op == "Softmax" || op == "LogSoftmax" || op == "Hardmax");
}

/// Value name -> rank, from the shapes the file states.
std::unordered_map<std::string, int64_t> knownRanks(const onnx::GraphProto &graph) {
  std::unordered_map<std::string, int64_t> ranks;
  auto note = [&](const onnx::ValueInfoProto &value) {
    if (value.type().has_tensor_type() && value.type().tensor_type().has_shape())
      ranks[value.name()] = value.type().tensor_type().shape().dim_size();
  };
  for (const onnx::ValueInfoProto &value : graph.input())
    note(value);
  for (const onnx::ValueInfoProto &value : graph.value_info())
    note(value);
  for (const onnx::ValueInfoProto &value : graph.output())
    note(value);
  for (const onnx::TensorProto &init : graph.initializer())
    ranks[init.name()] = init.dims_size();
  return ranks;
}

onnx::NodeProto makeNode(const std::string &op, const std::string &name,
                         std::vector<std::string> inputs, const std::string &output) {
  onnx::NodeProto node;
  node.set_op_type(op);
  node.set_name(name);
  for (const std::string &input : inputs)
    node.add_input(input);
  node.add_output(output);
  return node;
}

onnx::AttributeProto *intAttribute(onnx::NodeProto &node, const std::string &name, int64_t value) {
  for (onnx::AttributeProto &attribute : *node.mutable_attribute())
    if (attribute.name() == name) {
      attribute.set_i(value);
      return &attribute;
    }
  onnx::AttributeProto *attribute = node.add_attribute();
  attribute->set_name(name);
  attribute->set_type(onnx::AttributeProto::INT);
  attribute->set_i(value);
  return attribute;
}

/// Before opset 13, Softmax, LogSoftmax and Hardmax flatten their input to 2-D
/// at `axis` (default 1) and normalize each row; from 13 they normalize along
/// `axis` alone. Where `axis` is the last axis both agree and the node gets
/// axis -1 (which the converter's adapter takes without a shape); elsewhere
/// the node becomes Flatten(axis) -> op(axis -1) -> Reshape to the input's
/// shape, which holds for any shape known only at run time.
void rewriteLegacySoftmaxIn(onnx::GraphProto &graph,
                            const std::unordered_map<std::string, int64_t> &ranks, NameSet &names) {
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  nodes.Swap(graph.mutable_node());
  for (onnx::NodeProto &node : nodes) {
    if (!isLegacySoftmax(node) || node.input_size() != 1 || node.output_size() != 1) {
      graph.add_node()->Swap(&node);
      continue;
    }
    int64_t axis = 1;
    for (const onnx::AttributeProto &attribute : node.attribute())
      if (attribute.name() == "axis") {
        if (attribute.type() != onnx::AttributeProto::INT)
          fail(describeNodeProto(node), ": attribute 'axis' must be an int");
        axis = attribute.i();
      }
    auto rank = ranks.find(node.input(0));
    bool lastAxis = axis == -1 || (rank != ranks.end() && rank->second > 0 &&
                                   (axis < 0 ? axis + rank->second : axis) == rank->second - 1);
    intAttribute(node, "axis", -1);
    if (lastAxis) {
      graph.add_node()->Swap(&node);
      continue;
    }
    std::string input = node.input(0), output = node.output(0);
    std::string base = node.name().empty() ? output : node.name();
    std::string flat = freshName(names, output + "/flattened");
    std::string shape = freshName(names, output + "/input_shape");
    std::string rows = freshName(names, output + "/rows");
    onnx::NodeProto flatten = makeNode("Flatten", base + "/flatten", {input}, flat);
    intAttribute(flatten, "axis", axis);
    graph.add_node()->Swap(&flatten);
    *graph.add_node() = makeNode("Shape", base + "/shape", {input}, shape);
    node.set_input(0, flat);
    node.set_output(0, rows);
    graph.add_node()->Swap(&node);
    *graph.add_node() = makeNode("Reshape", base + "/reshape", {rows, shape}, output);
  }
}

bool isSoftmaxKind(OpKind kind) { return kind == OpKind::Softmax || kind == OpKind::LogSoftmax; }

/// The legacy Softmax rule's Flatten -> op -> Reshape(Shape(x)) where x's rank
/// turned out to make Flatten's axis the last one: the op alone on x, which the
/// attention fusion recognizes. Null when `reshape` is not such a chain.
Node *softmaxOfChain(Node *reshape, Value *&input) {
  Node *op = reshape->operand(0) ? reshape->operand(0)->definingNode() : nullptr;
  if (!op || !isSoftmaxKind(op->kind()) || op->getInt("axis", -1) != -1 ||
      op->result()->numUses() != 1)
    return nullptr;
  Node *flatten = op->operand(0) ? op->operand(0)->definingNode() : nullptr;
  Node *shape = reshape->operand(1) ? reshape->operand(1)->definingNode() : nullptr;
  if (!flatten || flatten->kind() != OpKind::Flatten || flatten->result()->numUses() != 1 ||
      !shape || shape->kind() != OpKind::Shape || shape->hasAttr("start") ||
      shape->hasAttr("end") || shape->operand(0) != flatten->operand(0))
    return nullptr;
  input = flatten->operand(0);
  if (!input->shape().isRanked() || input->shape().rank() == 0)
    return nullptr;
  int64_t rank = int64_t(input->shape().rank());
  int64_t axis = flatten->getInt("axis", 1);
  return (axis < 0 ? axis + rank : axis) == rank - 1 ? op : nullptr;
}

} // namespace

/// Calls `visit` on the graph and on every subgraph (If, Loop, Scan bodies).
void forEachGraph(onnx::GraphProto &graph, const std::function<void(onnx::GraphProto &)> &visit) {
  visit(graph);
  for (onnx::NodeProto &node : *graph.mutable_node())
    for (onnx::AttributeProto &attribute : *node.mutable_attribute()) {
      if (attribute.has_g())
        forEachGraph(*attribute.mutable_g(), visit);
      for (onnx::GraphProto &subgraph : *attribute.mutable_graphs())
        forEachGraph(subgraph, visit);
    }
}

std::string freshName(NameSet &names, const std::string &base) {
  std::string name = base;
  for (unsigned i = 1; names.count(name); ++i)
    name = base + "_" + std::to_string(i);
  names.insert(name);
  return name;
}

bool hasLegacySoftmax(const onnx::GraphProto &graph) {
  for (const onnx::NodeProto &node : graph.node()) {
    if (isLegacySoftmax(node))
      return true;
    for (const onnx::AttributeProto &attribute : node.attribute()) {
      if (attribute.has_g() && hasLegacySoftmax(attribute.g()))
        return true;
      for (const onnx::GraphProto &subgraph : attribute.graphs())
        if (hasLegacySoftmax(subgraph))
          return true;
    }
  }
  return false;
}

void rewriteLegacySoftmax(onnx::GraphProto &graph, NameSet &names) {
  forEachGraph(graph,
               [&](onnx::GraphProto &g) { rewriteLegacySoftmaxIn(g, knownRanks(g), names); });
}

/// Resize-10 (and Upsample before it) computed input coordinates as
/// output / scale and took the nearest pixel below; Resize-11 defaults to
/// half-pixel coordinates and rounding.
void setResize10Semantics(onnx::GraphProto &graph) {
  forEachGraph(graph, [](onnx::GraphProto &g) {
    for (onnx::NodeProto &node : *g.mutable_node()) {
      if (!isDefaultDomain(node) || node.op_type() != "Resize")
        continue;
      std::string mode = "nearest";
      bool hasCoordinates = false, hasNearestMode = false;
      for (const onnx::AttributeProto &attribute : node.attribute()) {
        if (attribute.name() == "mode")
          mode = attribute.s();
        hasCoordinates |= attribute.name() == "coordinate_transformation_mode";
        hasNearestMode |= attribute.name() == "nearest_mode";
      }
      auto setString = [&](const std::string &name, const std::string &value) {
        onnx::AttributeProto *attribute = node.add_attribute();
        attribute->set_name(name);
        attribute->set_type(onnx::AttributeProto::STRING);
        attribute->set_s(value);
      };
      if (!hasCoordinates)
        setString("coordinate_transformation_mode", "asymmetric");
      if (mode == "nearest" && !hasNearestMode)
        setString("nearest_mode", "floor");
    }
  });
}

void simplifyConvertedSoftmax(Graph &graph) {
  // Candidates first: the rewrite erases nodes.
  for (Node *reshape : graph.nodesOfKind(OpKind::Reshape)) {
    Value *input = nullptr;
    Node *op = softmaxOfChain(reshape, input);
    if (!op)
      continue;
    Node *flatten = op->operand(0)->definingNode();
    Node *shape = reshape->operand(1)->definingNode();
    std::string name = reshape->result()->name();
    op->setOperand(0, input);
    op->result()->setType(input->type());
    graph.replaceAllUsesWith(reshape->result(), op->result());
    graph.eraseNode(reshape);
    if (!shape->result()->hasUses() && !graph.isOutput(shape->result()))
      graph.eraseNode(shape);
    graph.eraseNode(flatten);
    graph.renameValue(op->result(), name);
  }
}

} // namespace onnxc
