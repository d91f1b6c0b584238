//===- ir/Subgraph.cpp - The interface of nodes that own subgraphs ----------===//
#include "ir/Subgraph.h"

#include "ir/Error.h"
#include "ir/Verifier.h"

#include <algorithm>
#include <cassert>
#include <unordered_map>

namespace onnxc {

bool isControlFlow(OpKind kind) {
  return kind == OpKind::If || kind == OpKind::Loop || kind == OpKind::Scan;
}

std::vector<std::string> subgraphNames(OpKind kind) {
  switch (kind) {
  case OpKind::If:
    return {"then_branch", "else_branch"};
  case OpKind::Loop:
  case OpKind::Scan:
    return {"body"};
  default:
    return {};
  }
}

namespace {

/// The `captures` attribute, checked to be a count the operands can hold
/// (`fixed` operands come before the captures).
size_t capturesAttribute(const Node &node, size_t fixed) {
  int64_t captures = node.getInt("captures", 0);
  size_t operands = std::max(node.numOperands(), fixed);
  if (captures < 0 || size_t(captures) > operands - fixed)
    fail(node.describe(), ": captures = ", captures, " is out of range for ", node.numOperands(),
         " operands");
  return size_t(captures);
}

} // namespace

size_t numCaptures(const Node &node) {
  switch (node.kind()) {
  case OpKind::If:
    return node.numOperands() - 1;
  case OpKind::Loop:
    return capturesAttribute(node, 2);
  case OpKind::Scan:
    return capturesAttribute(node, scanInputCount(node));
  default:
    return 0;
  }
}

size_t loopCarriedCount(const Node &node) {
  assert(node.kind() == OpKind::Loop);
  return std::max(node.numOperands(), size_t(2)) - 2 - numCaptures(node);
}

size_t scanInputCount(const Node &node) {
  assert(node.kind() == OpKind::Scan);
  int64_t count = node.requireInt("num_scan_inputs");
  if (count < 1 || size_t(count) > node.numOperands())
    fail(node.describe(), ": num_scan_inputs = ", count, " is out of range for ",
         node.numOperands(), " operands");
  return size_t(count);
}

size_t scanStateCount(const Node &node) {
  return node.numOperands() - scanInputCount(node) - numCaptures(node);
}

namespace {

/// Body input `first + i` corresponds to operand `first + i`: their dtypes
/// must agree where both are known.
void checkInputDTypes(const Node &node, const std::string &region, const Graph &body,
                      size_t first) {
  for (size_t i = first; i < body.inputs().size() && i < node.numOperands(); ++i) {
    const Value *operand = node.operand(i);
    const Value *input = body.inputs()[i];
    if (operand && operand->dtype() != DType::Unknown && input->dtype() != DType::Unknown &&
        operand->dtype() != input->dtype())
      fail(node.describe(), ": ", region, " input ", i, " '%", input->name(), "' is ",
           dtypeName(input->dtype()), " but operand ", i, " '%", operand->name(), "' is ",
           dtypeName(operand->dtype()));
  }
}

void expectCount(const Node &node, const std::string &region, const char *what, size_t actual,
                 size_t expected) {
  if (actual != expected)
    fail(node.describe(), ": ", region, " has ", actual, " ", what, ", expected ", expected);
}

void checkInterface(const Node &node, const std::string &region, const Graph &body) {
  size_t inputs = body.inputs().size(), outputs = body.outputs().size();
  switch (node.kind()) {
  case OpKind::If:
    expectCount(node, region, "inputs", inputs, node.numOperands() - 1);
    expectCount(node, region, "outputs", outputs, node.numResults());
    for (size_t i = 0; i < inputs; ++i) {
      const Value *operand = node.operand(i + 1), *input = body.inputs()[i];
      if (operand->dtype() != DType::Unknown && input->dtype() != DType::Unknown &&
          operand->dtype() != input->dtype())
        fail(node.describe(), ": ", region, " input ", i, " '%", input->name(), "' is ",
             dtypeName(input->dtype()), " but the capture '%", operand->name(), "' is ",
             dtypeName(operand->dtype()));
    }
    return;
  case OpKind::Loop: {
    size_t carried = loopCarriedCount(node);
    expectCount(node, region, "inputs", inputs, std::max(node.numOperands(), size_t(2)));
    expectCount(node, region, "outputs", outputs, node.numResults() + 1);
    if (carried > node.numResults())
      fail(node.describe(), ": Loop carries ", carried, " values but has ", node.numResults(),
           " results");
    checkInputDTypes(node, region, body, 2);
    return;
  }
  case OpKind::Scan: {
    size_t states = scanStateCount(node);
    expectCount(node, region, "inputs", inputs, node.numOperands());
    expectCount(node, region, "outputs", outputs, node.numResults());
    if (states > node.numResults())
      fail(node.describe(), ": Scan has ", states, " states but ", node.numResults(), " results");
    checkInputDTypes(node, region, body, 0);
    return;
  }
  default:
    return;
  }
}

} // namespace

void verifySubgraphs(const Node &node) {
  std::vector<std::string> expected = subgraphNames(node.kind());
  if (expected.empty()) {
    if (node.hasSubgraphs())
      fail(node.describe(), ": ", node.opName(), " owns no region, found '",
           node.subgraphs().front().first, "'");
    return;
  }
  for (const auto &[name, body] : node.subgraphs())
    if (std::find(expected.begin(), expected.end(), name) == expected.end())
      fail(node.describe(), ": ", node.opName(), " has no region '", name, "'");
  for (const std::string &name : expected) {
    const Graph *body = node.subgraph(name);
    if (!body)
      fail(node.describe(), ": missing region '", name, "'");
    checkInterface(node, name, *body);
    try {
      verifyGraph(*body);
    } catch (const SizeError &) {
      throw;
    } catch (const Error &e) {
      fail(node.describe(), ": region ", name, ": ", e.what());
    }
  }
}

std::vector<Value *> inlineSubgraph(Graph &outer, Node *position, Graph &body,
                                    const std::vector<Value *> &inputs) {
  assert(inputs.size() == body.inputs().size());
  std::unordered_map<const Value *, Value *> mapped;
  for (size_t i = 0; i < inputs.size(); ++i)
    mapped[body.inputs()[i]] = inputs[i];
  for (Value *constant : body.constants())
    mapped[constant] =
        outer.addConstant(outer.uniqueName(constant->name()), constant->constantPtr());
  for (const ShapeAssumption &assumption : body.assumptions())
    outer.addAssumption(assumption);
  for (Node *node : body.nodeList()) {
    std::vector<Value *> operands;
    for (Value *operand : node->operands())
      operands.push_back(operand ? mapped.at(operand) : nullptr);
    std::vector<std::string> names;
    for (Value *result : node->results())
      names.push_back(result->name());
    Node *copy = outer.createNode(node->kind(), operands, unsigned(node->numResults()),
                                  node->name(), names, position);
    for (const auto &[name, attr] : node->attributes())
      copy->setAttr(name, attr);
    for (const std::string &name : subgraphNames(node->kind()))
      if (std::unique_ptr<Graph> nested = node->takeSubgraph(name))
        copy->setSubgraph(name, std::move(nested));
    for (size_t i = 0; i < node->numResults(); ++i) {
      copy->result(i)->setType(node->result(i)->type());
      mapped[node->result(i)] = copy->result(i);
    }
  }
  std::vector<Value *> outputs;
  for (const GraphOutput &output : body.outputs())
    outputs.push_back(mapped.at(output.value));
  return outputs;
}

} // namespace onnxc
