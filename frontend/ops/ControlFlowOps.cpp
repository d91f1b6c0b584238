//===- frontend/ops/ControlFlowOps.cpp - If, Loop, Scan with their subgraphs ===//
//
// The GRAPH attributes become subgraphs the IR node owns (ir/Subgraph.h).
// Names a subgraph reads from enclosing graphs are resolved at import
// (frontend/ImportContext.h) and become explicit captures: trailing operands
// of the node and trailing inputs of the subgraph, in the same order. An If
// takes the union of both branches' captures, so both branches have the same
// inputs.
//
//===----------------------------------------------------------------------===//
#include "frontend/AttributeProto.h"
#include "frontend/GraphImporter.h"
#include "frontend/OpImporterRegistry.h"
#include "ir/Error.h"
#include "ir/Subgraph.h"

#include <algorithm>
#include <map>
#include <memory>

namespace onnxc {
namespace {

/// The node's subgraph attributes by name, the others converted.
struct SplitAttributes {
  std::map<std::string, const onnx::GraphProto *> graphs;
  AttributeMap others;
};

SplitAttributes splitAttributes(OnnxNode &node) {
  SplitAttributes out;
  for (const onnx::AttributeProto &attr : node.proto().attribute()) {
    bool isGraph = attr.type() == onnx::AttributeProto::GRAPH ||
                   (attr.type() == onnx::AttributeProto::UNDEFINED && attr.has_g());
    if (isGraph) {
      out.graphs[attr.name()] = &attr.g();
      continue;
    }
    out.others.emplace(attr.name(),
                       attributeFromProto(attr, node.context().modelDir(), node.describe()));
  }
  return out;
}

const onnx::GraphProto &requireGraph(OnnxNode &node, const SplitAttributes &attrs,
                                     const std::string &name) {
  auto it = attrs.graphs.find(name);
  if (it == attrs.graphs.end())
    fail(node.describe(), ": missing required graph attribute '", name, "'");
  return *it->second;
}

/// Extends `branch`, which captured `own` after `formal` inputs, to capture
/// every value of `all` in that order (adding inputs for the ones it does
/// not read).
void alignCaptures(Graph &branch, size_t formal, const std::vector<Value *> &own,
                   const std::vector<Value *> &all) {
  std::vector<Value *> order(branch.inputs().begin(), branch.inputs().begin() + formal);
  for (Value *outer : all) {
    auto it = std::find(own.begin(), own.end(), outer);
    order.push_back(it != own.end()
                        ? branch.inputs()[formal + size_t(it - own.begin())]
                        : branch.addInput(branch.uniqueName(outer->name()), outer->type()));
  }
  branch.reorderInputs(order);
}

Value *optionalInput(OnnxNode &node, int index) {
  if (index >= node.proto().input_size() || node.proto().input(index).empty())
    return nullptr;
  return node.operands()[size_t(index)];
}

void importIf(OnnxNode &node) {
  SplitAttributes attrs = splitAttributes(node);
  if (!attrs.others.empty())
    fail(node.describe(), ": If has no attribute '", attrs.others.begin()->first, "'");
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 1 || !operands[0])
    fail(node.describe(), ": If takes one input (the condition), got ", operands.size());
  std::vector<Value *> thenCaptures, elseCaptures;
  std::unique_ptr<Graph> thenBranch =
      importSubgraph(requireGraph(node, attrs, "then_branch"), node.context(), thenCaptures);
  std::unique_ptr<Graph> elseBranch =
      importSubgraph(requireGraph(node, attrs, "else_branch"), node.context(), elseCaptures);
  for (const auto &[name, branch] :
       {std::pair{"then_branch", thenBranch.get()}, std::pair{"else_branch", elseBranch.get()}})
    if (branch->inputs().size() != (name[0] == 't' ? thenCaptures : elseCaptures).size())
      fail(node.describe(), ": ", name, " must have no inputs");
  std::vector<Value *> all = thenCaptures;
  for (Value *value : elseCaptures)
    if (std::find(all.begin(), all.end(), value) == all.end())
      all.push_back(value);
  alignCaptures(*thenBranch, 0, thenCaptures, all);
  alignCaptures(*elseBranch, 0, elseCaptures, all);
  operands.insert(operands.end(), all.begin(), all.end());
  if (thenBranch->outputs().size() != elseBranch->outputs().size())
    fail(node.describe(), ": then_branch has ", thenBranch->outputs().size(),
         " outputs but else_branch ", elseBranch->outputs().size());
  Node *ifNode = node.emit(OpKind::If, operands, {});
  if (ifNode->numResults() != thenBranch->outputs().size())
    fail(node.describe(), ": If has ", ifNode->numResults(), " outputs but its branches ",
         thenBranch->outputs().size());
  ifNode->setSubgraph("then_branch", std::move(thenBranch));
  ifNode->setSubgraph("else_branch", std::move(elseBranch));
}

/// Operands (fixed inputs, then captures) without trailing absent ones.
void appendCaptures(std::vector<Value *> &operands, const std::vector<Value *> &captures) {
  operands.insert(operands.end(), captures.begin(), captures.end());
  while (!operands.empty() && !operands.back())
    operands.pop_back();
}

void importLoop(OnnxNode &node) {
  SplitAttributes attrs = splitAttributes(node);
  if (!attrs.others.empty())
    fail(node.describe(), ": Loop has no attribute '", attrs.others.begin()->first, "'");
  std::vector<Value *> operands{optionalInput(node, 0), optionalInput(node, 1)};
  for (int i = 2; i < node.proto().input_size(); ++i) {
    Value *initial = optionalInput(node, i);
    if (!initial)
      fail(node.describe(), ": loop-carried input ", i, " is empty");
    operands.push_back(initial);
  }
  std::vector<Value *> captures;
  std::unique_ptr<Graph> body =
      importSubgraph(requireGraph(node, attrs, "body"), node.context(), captures);
  size_t carried = operands.size() - 2;
  if (body->inputs().size() != 2 + carried + captures.size())
    fail(node.describe(), ": the body has ", body->inputs().size() - captures.size(),
         " inputs, expected 2 + ", carried, " loop-carried values");
  appendCaptures(operands, captures);
  AttributeMap attributes;
  if (!captures.empty())
    attributes.emplace("captures", int64_t(captures.size()));
  Node *loop = node.emit(OpKind::Loop, operands, attributes);
  if (body->outputs().size() != 1 + loop->numResults())
    fail(node.describe(), ": the body has ", body->outputs().size(), " outputs, expected ",
         1 + loop->numResults(), " (the condition and one per Loop output)");
  loop->setSubgraph("body", std::move(body));
}

void importScan(OnnxNode &node) {
  SplitAttributes attrs = splitAttributes(node);
  std::vector<Value *> operands = node.operands();
  for (size_t i = 0; i < operands.size(); ++i)
    if (!operands[i])
      fail(node.describe(), ": Scan input ", i, " is empty");
  std::vector<Value *> captures;
  std::unique_ptr<Graph> body =
      importSubgraph(requireGraph(node, attrs, "body"), node.context(), captures);
  if (body->inputs().size() != operands.size() + captures.size())
    fail(node.describe(), ": the body has ", body->inputs().size() - captures.size(),
         " inputs, expected ", operands.size());
  appendCaptures(operands, captures);
  if (!captures.empty())
    attrs.others.insert_or_assign("captures", int64_t(captures.size()));
  Node *scan = node.emit(OpKind::Scan, operands, attrs.others);
  if (body->outputs().size() != scan->numResults())
    fail(node.describe(), ": the body has ", body->outputs().size(), " outputs, expected ",
         scan->numResults());
  scan->setSubgraph("body", std::move(body));
  scanInputCount(*scan); // num_scan_inputs present and in range
}

} // namespace

void registerControlFlowImporters(OpImporterRegistry &registry) {
  registry.add({"", "If", 13, OpKind::If, importIf});
  registry.add({"", "Loop", 13, OpKind::Loop, importLoop});
  registry.add({"", "Scan", 13, OpKind::Scan, importScan});
}

} // namespace onnxc
