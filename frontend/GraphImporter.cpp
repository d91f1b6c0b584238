//===- frontend/GraphImporter.cpp - onnx::GraphProto -> Graph ---------------===//
//
// Import runs in three checked phases so that a bad model fails before any
// IR is built and with the most useful message first: (1) names: every
// input defined, no name defined twice, no cycle; (2) ops: every node has an
// importer, else one error listing all that do not; (3) build the graph.
//
//===----------------------------------------------------------------------===//
#include "frontend/GraphImporter.h"

#include "frontend/ImportContext.h"
#include "frontend/OpImporterRegistry.h"
#include "frontend/TensorProto.h"
#include "frontend/ValueInfo.h"
#include "ir/Error.h"

#include <unordered_map>
#include <unordered_set>
#include <utility>

namespace onnxc {

namespace {

/// Name -> index of the node that produces it.
using ProducerMap = std::unordered_map<std::string, int>;

/// Names a graph reads without defining them: the outer-scope values its
/// nodes and nested subgraphs use (ONNX lexical scoping), added to `out`.
void collectFreeNames(const onnx::GraphProto &proto, std::unordered_set<std::string> &out);

/// The names a node depends on: its inputs, then the free names of its
/// subgraphs (an If reads what its branches read).
std::vector<std::string> nodeDependencies(const onnx::NodeProto &node) {
  std::vector<std::string> deps(node.input().begin(), node.input().end());
  std::unordered_set<std::string> implicit;
  for (const onnx::AttributeProto &attr : node.attribute()) {
    if (attr.has_g())
      collectFreeNames(attr.g(), implicit);
    for (const onnx::GraphProto &graph : attr.graphs())
      collectFreeNames(graph, implicit);
  }
  deps.insert(deps.end(), implicit.begin(), implicit.end());
  return deps;
}

void collectFreeNames(const onnx::GraphProto &proto, std::unordered_set<std::string> &out) {
  std::unordered_set<std::string> defined;
  for (const onnx::TensorProto &init : proto.initializer())
    defined.insert(init.name());
  for (const onnx::SparseTensorProto &init : proto.sparse_initializer())
    defined.insert(init.values().name());
  for (const onnx::ValueInfoProto &input : proto.input())
    defined.insert(input.name());
  for (const onnx::NodeProto &node : proto.node())
    for (const std::string &output : node.output())
      defined.insert(output);
  for (const onnx::NodeProto &node : proto.node())
    for (const std::string &name : nodeDependencies(node))
      if (!name.empty() && !defined.count(name))
        out.insert(name);
  for (const onnx::ValueInfoProto &output : proto.output())
    if (!defined.count(output.name()))
      out.insert(output.name());
}

/// `outer` (null for the main graph) resolves the names a subgraph reads
/// from enclosing graphs.
ProducerMap checkDefinitions(const onnx::GraphProto &proto, const ImportContext *outer) {
  std::unordered_set<std::string> external; // graph inputs and initializers
  for (const onnx::TensorProto &init : proto.initializer()) {
    if (init.name().empty())
      fail("an initializer has no name");
    if (!external.insert(init.name()).second)
      fail("initializer '", init.name(), "' is defined twice");
  }
  for (const onnx::SparseTensorProto &init : proto.sparse_initializer()) {
    if (init.values().name().empty())
      fail("a sparse initializer has no name");
    if (!external.insert(init.values().name()).second)
      fail("initializer '", init.values().name(), "' is defined twice");
  }
  std::unordered_set<std::string> inputNames;
  for (const onnx::ValueInfoProto &input : proto.input()) {
    if (input.name().empty())
      fail("a graph input has no name");
    if (!inputNames.insert(input.name()).second)
      fail("graph input '", input.name(), "' is listed twice");
    external.insert(input.name());
  }
  ProducerMap producers;
  for (int i = 0; i < proto.node_size(); ++i)
    for (const std::string &output : proto.node(i).output()) {
      if (output.empty())
        continue;
      if (external.count(output) || !producers.emplace(output, i).second)
        fail(describeNodeProto(proto.node(i)), ": output '", output, "' is already defined");
      // ONNX names are unique across nested graphs (onnxruntime refuses
      // the model otherwise): a body value named like an outer one would
      // hide it from the rest of the body.
      if (outer && outer->canResolve(output))
        fail(describeNodeProto(proto.node(i)), ": output '", output,
             "' is already defined in an enclosing graph");
    }
  auto defined = [&](const std::string &name) {
    return external.count(name) || producers.count(name) || (outer && outer->canResolve(name));
  };
  for (const onnx::NodeProto &node : proto.node())
    for (const std::string &input : node.input())
      if (!input.empty() && !defined(input))
        fail(describeNodeProto(node), ": input '", input, "' is not defined");
  for (const onnx::ValueInfoProto &output : proto.output())
    if (!defined(output.name()))
      fail("graph output '", output.name(), "' is not defined");
  return producers;
}

/// A topological order of the nodes (file order where that is valid), by
/// an iterative depth-first search over producers; a producer still on the
/// stack closes a cycle.
std::vector<int> topologicalNodeOrder(const onnx::GraphProto &proto, const ProducerMap &producers) {
  enum class State : uint8_t { Unvisited, OnStack, Done };
  std::vector<State> state(proto.node_size(), State::Unvisited);
  std::vector<int> order;
  order.reserve(proto.node_size());
  std::vector<std::pair<int, int>> stack; // (node, next input to look at)
  std::vector<std::vector<std::string>> deps;
  deps.reserve(proto.node_size());
  for (const onnx::NodeProto &node : proto.node())
    deps.push_back(nodeDependencies(node));
  for (int root = 0; root < proto.node_size(); ++root) {
    if (state[root] != State::Unvisited)
      continue;
    stack.push_back({root, 0});
    state[root] = State::OnStack;
    while (!stack.empty()) {
      auto &[node, next] = stack.back();
      const std::vector<std::string> &inputs = deps[size_t(node)];
      if (next == int(inputs.size())) {
        state[node] = State::Done;
        order.push_back(node);
        stack.pop_back();
        continue;
      }
      auto it = producers.find(inputs[size_t(next++)]);
      if (it == producers.end() || state[it->second] == State::Done)
        continue;
      if (state[it->second] == State::OnStack)
        fail(describeNodeProto(proto.node(it->second)),
             " is on a cycle: its inputs depend on its own outputs");
      state[it->second] = State::OnStack;
      stack.push_back({it->second, 0}); // invalidates node/next; the loop re-reads them
    }
  }
  return order;
}

std::unordered_set<std::string> collectNames(const onnx::GraphProto &proto) {
  std::unordered_set<std::string> names;
  for (const onnx::TensorProto &init : proto.initializer())
    names.insert(init.name());
  for (const onnx::SparseTensorProto &init : proto.sparse_initializer())
    names.insert(init.values().name());
  for (const onnx::ValueInfoProto &input : proto.input())
    names.insert(input.name());
  for (const onnx::NodeProto &node : proto.node())
    for (const std::string &output : node.output())
      names.insert(output);
  return names;
}

void importInitializersAndInputs(const onnx::GraphProto &proto, ImportContext &context) {
  std::unordered_set<std::string> initializerNames;
  for (const onnx::TensorProto &init : proto.initializer()) {
    Tensor value = tensorFromProto(init, context.modelDir(), "initializer '" + init.name() + "'");
    context.bind(init.name(), context.graph().addConstant(init.name(), std::move(value)));
    initializerNames.insert(init.name());
  }
  for (const onnx::SparseTensorProto &init : proto.sparse_initializer()) {
    const std::string &name = init.values().name();
    Tensor value = tensorFromSparseProto(init, context.modelDir(), "initializer '" + name + "'");
    context.bind(name, context.graph().addConstant(name, std::move(value)));
    initializerNames.insert(name);
  }
  DimSymbols symbols;
  reserveInputSymbols(proto, symbols);
  for (const onnx::ValueInfoProto &input : proto.input()) {
    // Before IR version 4 every initializer had to be listed as an input too,
    // and exporters still do so for weights. ONNX lets such an input be
    // overridden at run time, but exporters mean them as fixed weights, and
    // treating them as constants is what lets them be folded and pre-packed.
    if (initializerNames.count(input.name()))
      continue;
    context.bind(input.name(), context.graph().addInput(input.name(), inputType(input, symbols)));
  }
}

void importNode(const onnx::NodeProto &proto, ImportContext &context) {
  std::string domain = canonicalDomain(proto.domain());
  int64_t opset = context.opset(domain);
  const OpImporter *importer =
      OpImporterRegistry::instance().lookup(domain, proto.op_type(), opset);
  // findUnsupportedOps ran with the same registry before any node was imported.
  if (!importer)
    fail(describeNodeProto(proto), ": internal: no importer for ", proto.op_type());
  OnnxNode node(proto, context, importer->kind, opset);
  importer->import(node);
}

std::string opDisplayName(const onnx::NodeProto &node) {
  std::string domain = canonicalDomain(node.domain());
  return domain.empty() ? node.op_type() : domain + "." + node.op_type();
}

} // namespace

namespace {

struct UnsupportedOps {
  std::vector<std::string> opOrder;
  std::unordered_map<std::string, std::vector<std::string>> nodesByOp;
};

/// Adds the unsupported ops of `proto` and of its nodes' subgraphs (an
/// unnamed node of a subgraph is '#index' with the index path, '#3.0').
void findUnsupportedIn(const onnx::GraphProto &proto, const OpsetMap &opsets,
                       const std::string &prefix, UnsupportedOps &found) {
  const OpImporterRegistry &registry = OpImporterRegistry::instance();
  for (int i = 0; i < proto.node_size(); ++i) {
    const onnx::NodeProto &node = proto.node(i);
    std::string index = prefix + std::to_string(i);
    for (const onnx::AttributeProto &attr : node.attribute()) {
      if (attr.has_g())
        findUnsupportedIn(attr.g(), opsets, index + "." + attr.name() + ".", found);
      for (const onnx::GraphProto &graph : attr.graphs())
        findUnsupportedIn(graph, opsets, index + "." + attr.name() + ".", found);
    }
    std::string domain = canonicalDomain(node.domain());
    auto opset = opsets.find(domain);
    if (opset != opsets.end() && registry.lookup(domain, node.op_type(), opset->second))
      continue;
    std::string op = opDisplayName(node);
    auto [it, inserted] = found.nodesByOp.try_emplace(op);
    if (inserted)
      found.opOrder.push_back(op);
    it->second.push_back(node.name().empty() ? "#" + index : "'" + node.name() + "'");
  }
}

} // namespace

std::vector<std::string> findUnsupportedOps(const onnx::GraphProto &proto, const OpsetMap &opsets) {
  UnsupportedOps found;
  findUnsupportedIn(proto, opsets, "", found);
  const std::vector<std::string> &opOrder = found.opOrder;
  auto &nodesByOp = found.nodesByOp;
  // A model with hundreds of copies of one op would otherwise give a
  // message nobody reads; the op list itself is always complete.
  constexpr size_t kMaxNamesPerOp = 8;
  std::vector<std::string> out;
  for (const std::string &op : opOrder) {
    const std::vector<std::string> &names = nodesByOp[op];
    std::string entry = op + (names.size() == 1 ? " (node " : " (nodes ");
    for (size_t i = 0; i < names.size() && i < kMaxNamesPerOp; ++i)
      entry += (i ? ", " : "") + names[i];
    if (names.size() > kMaxNamesPerOp)
      entry += ", and " + std::to_string(names.size() - kMaxNamesPerOp) + " more";
    out.push_back(entry + ")");
  }
  return out;
}

std::vector<int> checkGraphStructure(const onnx::GraphProto &proto) {
  return topologicalNodeOrder(proto, checkDefinitions(proto, nullptr));
}

void failOnUnsupportedOps(const std::vector<std::string> &unsupported) {
  if (unsupported.empty())
    return;
  std::string list;
  for (const std::string &entry : unsupported)
    list += (list.empty() ? "" : ", ") + entry;
  fail("unsupported ops: ", list);
}

std::unique_ptr<Graph> importGraph(const onnx::GraphProto &proto, const OpsetMap &opsets,
                                   const ModelFolder &modelDir) {
  std::vector<int> order = checkGraphStructure(proto);
  failOnUnsupportedOps(findUnsupportedOps(proto, opsets));

  auto graph = std::make_unique<Graph>(proto.name().empty() ? "main" : proto.name());
  ImportContext context(*graph, modelDir, opsets, collectNames(proto));
  importInitializersAndInputs(proto, context);
  for (const onnx::ValueInfoProto &value : proto.value_info()) {
    if (!value.type().has_tensor_type() || !value.type().tensor_type().has_shape())
      continue;
    std::vector<int64_t> dims;
    for (const auto &dim : value.type().tensor_type().shape().dim())
      dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
    context.declareDims(value.name(), std::move(dims));
  }
  for (int index : order)
    importNode(proto.node(index), context);
  for (const onnx::ValueInfoProto &output : proto.output())
    graph->addOutput(output.name(), context.lookup(output.name()));
  return graph;
}

std::unique_ptr<Graph> importSubgraph(const onnx::GraphProto &proto, ImportContext &outer,
                                      std::vector<Value *> &captures) {
  ProducerMap producers = checkDefinitions(proto, &outer);
  std::vector<int> order = topologicalNodeOrder(proto, producers);
  auto graph = std::make_unique<Graph>(proto.name().empty() ? "body" : proto.name());
  ImportContext context(*graph, outer.modelDir(), outer.opsets(), collectNames(proto), &outer);
  for (const onnx::TensorProto &init : proto.initializer()) {
    Tensor value = tensorFromProto(init, context.modelDir(), "initializer '" + init.name() + "'");
    context.bind(init.name(), graph->addConstant(init.name(), std::move(value)));
  }
  for (const onnx::SparseTensorProto &init : proto.sparse_initializer()) {
    const std::string &name = init.values().name();
    Tensor value = tensorFromSparseProto(init, context.modelDir(), "initializer '" + name + "'");
    context.bind(name, graph->addConstant(name, std::move(value)));
  }
  // The formal inputs come first, in order; shape inference types them from
  // the node's operands, so a declared type is only a first guess.
  DimSymbols symbols;
  reserveInputSymbols(proto, symbols);
  for (const onnx::ValueInfoProto &input : proto.input()) {
    TensorType type = input.has_type() && input.type().has_tensor_type()
                          ? inputType(input, symbols)
                          : TensorType{DType::Unknown, Shape::unranked()};
    context.bind(input.name(), graph->addInput(input.name(), type));
  }
  for (int index : order)
    importNode(proto.node(index), context);
  for (const onnx::ValueInfoProto &output : proto.output())
    graph->addOutput(output.name(), context.lookup(output.name()));
  captures = context.captures();
  return graph;
}

namespace {

using RenameMap = std::unordered_map<std::string, std::string>;

void renameName(std::string &name, const RenameMap &renamed) {
  if (auto it = renamed.find(name); it != renamed.end())
    name = it->second;
}

/// Renames what the nodes of `proto` (and of their subgraphs, which may
/// read the inlined graph's values) read and what its outputs name.
void renameReads(onnx::GraphProto &proto, const RenameMap &renamed) {
  for (onnx::NodeProto &node : *proto.mutable_node()) {
    for (std::string &input : *node.mutable_input())
      renameName(input, renamed);
    for (onnx::AttributeProto &attr : *node.mutable_attribute()) {
      if (attr.has_g())
        renameReads(*attr.mutable_g(), renamed);
      for (onnx::GraphProto &graph : *attr.mutable_graphs())
        renameReads(graph, renamed);
    }
  }
  for (onnx::ValueInfoProto &output : *proto.mutable_output())
    renameName(*output.mutable_name(), renamed);
}

} // namespace

std::vector<Value *> inlineSubgraph(const onnx::GraphProto &proto, ImportContext &context,
                                    const std::vector<Value *> &inputs, const std::string &prefix) {
  if (size_t(proto.input_size()) != inputs.size())
    fail("graph '", proto.name(), "' has ", proto.input_size(), " inputs, expected ",
         inputs.size());
  RenameMap renamed;
  auto rename = [&](const std::string &name) {
    if (name.empty())
      return name;
    auto [it, inserted] = renamed.try_emplace(name);
    if (!inserted)
      fail("graph '", proto.name(), "' defines '", name, "' twice");
    it->second = context.freshName(prefix + "_" + name);
    return it->second;
  };
  // Initializers and formal inputs are bound before the nodes are checked,
  // so that the check finds them as it finds the enclosing graph's values.
  for (const onnx::TensorProto &init : proto.initializer()) {
    Tensor value = tensorFromProto(init, context.modelDir(), "initializer '" + init.name() + "'");
    std::string name = rename(init.name());
    context.bind(name, context.graph().addConstant(name, std::move(value)));
  }
  for (const onnx::SparseTensorProto &init : proto.sparse_initializer()) {
    Tensor value = tensorFromSparseProto(init, context.modelDir(),
                                         "initializer '" + init.values().name() + "'");
    std::string name = rename(init.values().name());
    context.bind(name, context.graph().addConstant(name, std::move(value)));
  }
  for (int i = 0; i < proto.input_size(); ++i)
    context.bind(rename(proto.input(i).name()), inputs[size_t(i)]);
  onnx::GraphProto nodes;
  *nodes.mutable_node() = proto.node();
  *nodes.mutable_output() = proto.output();
  for (onnx::NodeProto &node : *nodes.mutable_node()) {
    for (std::string &output : *node.mutable_output())
      output = rename(output);
    if (!node.name().empty())
      node.set_name(prefix + "/" + node.name());
  }
  renameReads(nodes, renamed);
  ProducerMap producers = checkDefinitions(nodes, &context);
  for (int index : topologicalNodeOrder(nodes, producers))
    importNode(nodes.node(index), context);
  std::vector<Value *> outputs;
  for (const onnx::ValueInfoProto &output : nodes.output())
    outputs.push_back(context.lookup(output.name()));
  return outputs;
}

} // namespace onnxc
