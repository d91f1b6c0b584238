//===- ir/Graph.cpp - Graph, Node and Value mutation primitives ------------===//
#include "ir/Graph.h"

#include "ir/Error.h"

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <cassert>
#include <unordered_map>

namespace onnxc {

// --- Value -------------------------------------------------------------------

void Value::removeUse(Use use, unsigned slot) {
  assert(slot < uses_.size() && uses_[slot] == use && "use list out of sync");
  (void)use;
  if (slot + 1 != uses_.size()) {
    Use moved = uses_.back();
    uses_[slot] = moved;
    moved.user->useSlots_[moved.operandIndex] = slot;
  }
  uses_.pop_back();
}

void Value::replaceUsesWith(Value *replacement) {
  assert(replacement != this);
  // Every use moves, so rewire them all and hand the list over at once
  // (in order) instead of removing them one by one.
  for (const Use &use : uses_) {
    use.user->operands_[use.operandIndex] = replacement;
    if (replacement)
      use.user->useSlots_[use.operandIndex] = replacement->addUse(use);
  }
  uses_.clear();
}

// --- Node --------------------------------------------------------------------

// Out of line: the subgraphs are Graphs, complete only here.
Node::Node(Graph *graph, OpKind kind, std::string name)
    : graph_(graph), kind_(kind), name_(std::move(name)) {}
Node::~Node() = default;

Graph *Node::subgraph(const std::string &name) const {
  for (const auto &[key, body] : subgraphs_)
    if (key == name)
      return body.get();
  return nullptr;
}

void Node::setSubgraph(const std::string &name, std::unique_ptr<Graph> subgraph) {
  assert(subgraph && "attach a subgraph, not null");
  for (auto &[key, body] : subgraphs_)
    if (key == name) {
      body = std::move(subgraph);
      return;
    }
  subgraphs_.emplace_back(name, std::move(subgraph));
}

std::unique_ptr<Graph> Node::takeSubgraph(const std::string &name) {
  for (auto it = subgraphs_.begin(); it != subgraphs_.end(); ++it)
    if (it->first == name) {
      std::unique_ptr<Graph> body = std::move(it->second);
      subgraphs_.erase(it);
      return body;
    }
  return nullptr;
}

std::string Node::describe() const {
  if (!name_.empty())
    return "node '" + name_ + "'";
  std::string out = "node " + std::string(opName());
  if (!results_.empty())
    out += " '%" + results_[0]->name() + "'";
  return out;
}

void Node::setOperand(size_t i, Value *value) {
  if (i >= operands_.size()) {
    operands_.resize(i + 1, nullptr);
    useSlots_.resize(i + 1, 0);
  }
  if (operands_[i])
    operands_[i]->removeUse({this, unsigned(i)}, useSlots_[i]);
  operands_[i] = value;
  if (value)
    useSlots_[i] = value->addUse({this, unsigned(i)});
}

void Node::truncateOperands(size_t count) {
  for (size_t i = count; i < operands_.size(); ++i)
    if (operands_[i])
      operands_[i]->removeUse({this, unsigned(i)}, useSlots_[i]);
  if (count < operands_.size()) {
    operands_.resize(count);
    useSlots_.resize(count);
  }
}

const Attribute *Node::findAttr(const std::string &name) const {
  auto it = attributes_.find(name);
  return it == attributes_.end() ? nullptr : &it->second;
}

void Node::setAttr(const std::string &name, Attribute value) {
  attributes_.insert_or_assign(name, std::move(value));
}

namespace {
[[noreturn]] void wrongAttrKind(const Node &node, const std::string &name, const char *expected) {
  fail(node.describe(), ": attribute '", name, "' must be ", expected);
}
} // namespace

int64_t Node::getInt(const std::string &name, int64_t defaultValue) const {
  const Attribute *a = findAttr(name);
  if (!a)
    return defaultValue;
  if (!a->isInt())
    wrongAttrKind(*this, name, "an int");
  return a->asInt();
}

float Node::getFloat(const std::string &name, float defaultValue) const {
  const Attribute *a = findAttr(name);
  if (!a)
    return defaultValue;
  if (a->isInt()) // ONNX writers sometimes store integral floats as ints
    return float(a->asInt());
  if (!a->isFloat())
    wrongAttrKind(*this, name, "a float");
  return a->asFloat();
}

std::string Node::getString(const std::string &name, const std::string &defaultValue) const {
  const Attribute *a = findAttr(name);
  if (!a)
    return defaultValue;
  if (a->kind() != Attribute::Kind::String)
    wrongAttrKind(*this, name, "a string");
  return a->asString();
}

std::vector<int64_t> Node::getInts(const std::string &name,
                                   std::vector<int64_t> defaultValue) const {
  const Attribute *a = findAttr(name);
  if (!a)
    return defaultValue;
  if (a->kind() != Attribute::Kind::Ints)
    wrongAttrKind(*this, name, "a list of ints");
  return a->asInts();
}

std::vector<float> Node::getFloats(const std::string &name, std::vector<float> defaultValue) const {
  const Attribute *a = findAttr(name);
  if (!a)
    return defaultValue;
  if (a->kind() != Attribute::Kind::Floats)
    wrongAttrKind(*this, name, "a list of floats");
  return a->asFloats();
}

int64_t Node::requireInt(const std::string &name) const {
  if (!findAttr(name))
    fail(describe(), ": missing required attribute '", name, "'");
  return getInt(name, 0);
}

const Tensor &Node::requireTensor(const std::string &name) const {
  const Attribute *a = findAttr(name);
  if (!a)
    fail(describe(), ": missing required attribute '", name, "'");
  if (a->kind() != Attribute::Kind::Tensor)
    wrongAttrKind(*this, name, "a tensor");
  return a->asTensor();
}

// --- Graph: values -------------------------------------------------------------

Value *Graph::createValue(Value::Kind kind, const std::string &name) {
  if (values_.count(name))
    fail("value name '", name, "' is defined twice");
  auto value = std::unique_ptr<Value>(new Value(this, kind, name));
  Value *raw = value.get();
  values_.emplace(name, std::move(value));
  return raw;
}

void Graph::destroyValue(Value *value) {
  assert(!value->hasUses() && !isOutput(value));
  values_.erase(value->name());
}

Value *Graph::addInput(const std::string &name, TensorType type) {
  Value *v = createValue(Value::Kind::GraphInput, name);
  v->setType(std::move(type));
  inputs_.push_back(v);
  return v;
}

Value *Graph::addConstant(const std::string &name, std::shared_ptr<const Tensor> data) {
  Value *v = createValue(Value::Kind::Constant, name);
  v->setType({data->dtype(), Shape::fromConstants(data->dims())});
  v->constant_ = std::move(data);
  constants_.push_back(v);
  return v;
}

void Graph::eraseConstant(Value *constant) {
  assert(constant->isConstant());
  constants_.erase(std::find(constants_.begin(), constants_.end(), constant));
  destroyValue(constant);
}

void Graph::eraseInput(Value *input) {
  assert(input->isGraphInput());
  inputs_.erase(std::find(inputs_.begin(), inputs_.end(), input));
  destroyValue(input);
}

void Graph::reorderInputs(const std::vector<Value *> &order) {
  assert(order.size() == inputs_.size() &&
         std::is_permutation(order.begin(), order.end(), inputs_.begin()) &&
         "reorderInputs takes a permutation of the inputs");
  inputs_ = order;
}

void Graph::addAssumption(ShapeAssumption assumption) {
  if (std::find(assumptions_.begin(), assumptions_.end(), assumption) == assumptions_.end())
    assumptions_.push_back(std::move(assumption));
}

bool Graph::isOutput(const Value *value) const {
  return std::any_of(outputs_.begin(), outputs_.end(),
                     [&](const GraphOutput &o) { return o.value == value; });
}

Value *Graph::findValue(const std::string &name) const {
  auto it = values_.find(name);
  return it == values_.end() ? nullptr : it->second.get();
}

std::string Graph::uniqueName(const std::string &base) const {
  if (!base.empty() && !values_.count(base))
    return base;
  std::string stem = base.empty() ? "v" : base + "_";
  for (unsigned i = 1;; ++i) {
    std::string candidate = stem + std::to_string(i);
    if (!values_.count(candidate))
      return candidate;
  }
}

void Graph::renameValue(Value *value, const std::string &newName) {
  if (value->name() == newName)
    return;
  if (values_.count(newName))
    fail("value name '", newName, "' is already taken");
  auto node = values_.extract(value->name());
  node.key() = newName;
  value->name_ = newName;
  values_.insert(std::move(node));
}

void Graph::replaceAllUsesWith(Value *from, Value *to) {
  from->replaceUsesWith(to);
  for (GraphOutput &out : outputs_)
    if (out.value == from)
      out.value = to;
}

// --- Graph: nodes ----------------------------------------------------------------

std::vector<Node *> Graph::nodeList() const {
  std::vector<Node *> out;
  out.reserve(nodes_.size());
  for (const auto &n : nodes_)
    out.push_back(n.get());
  return out;
}

std::vector<Node *> Graph::nodesOfKind(OpKind kind) const {
  std::vector<Node *> out;
  for (const auto &n : nodes_)
    if (n->kind() == kind)
      out.push_back(n.get());
  return out;
}

Node *Graph::createNode(OpKind kind, const std::vector<Value *> &operands, unsigned numResults,
                        const std::string &nodeName, const std::vector<std::string> &resultNames,
                        Node *insertBefore) {
  auto owned = std::unique_ptr<Node>(new Node(this, kind, nodeName));
  Node *node = owned.get();
  auto position = insertBefore ? insertBefore->position_ : nodes_.end();
  node->position_ = nodes_.insert(position, std::move(owned));
  for (size_t i = 0; i < operands.size(); ++i)
    node->setOperand(i, operands[i]);
  for (unsigned i = 0; i < numResults; ++i) {
    std::string base = i < resultNames.size() ? resultNames[i] : "";
    if (base.empty())
      base = "t" + std::to_string(nextGeneratedName_++);
    Value *result = createValue(Value::Kind::NodeResult, uniqueName(base));
    result->definingNode_ = node;
    result->resultIndex_ = i;
    node->results_.push_back(result);
  }
  return node;
}

void Graph::eraseNode(Node *node) {
  for (Value *result : node->results_)
    if (result->hasUses() || isOutput(result))
      fail("internal: erasing ", node->describe(), " whose result '", result->name(),
           "' is in use");
  node->truncateOperands(0);
  for (Value *result : node->results_)
    destroyValue(result);
  nodes_.erase(node->position_);
}

void Graph::moveNodeBefore(Node *node, Node *position) {
  auto target = position ? position->position_ : nodes_.end();
  nodes_.splice(target, nodes_, node->position_);
}

namespace {
// Edges point from a node to the producers of its operands, so a depth-first
// search finishes every node after all of its producers: the finishing order
// is a topological order, equal to the current order when that is valid.
using DependencyGraph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>;

struct OrderVisitor : boost::default_dfs_visitor {
  std::vector<size_t> *finished;
  std::optional<size_t> *cycleVertex;
  void finish_vertex(size_t v, const DependencyGraph &) const { finished->push_back(v); }
  void back_edge(boost::graph_traits<DependencyGraph>::edge_descriptor e,
                 const DependencyGraph &g) const {
    if (!*cycleVertex)
      *cycleVertex = boost::source(e, g);
  }
};
} // namespace

std::vector<Node *> Graph::topologicalOrder() const {
  std::vector<Node *> order = nodeList();
  std::unordered_map<const Node *, size_t> index;
  for (size_t i = 0; i < order.size(); ++i)
    index[order[i]] = i;
  DependencyGraph deps(order.size());
  for (size_t i = 0; i < order.size(); ++i)
    for (Value *operand : order[i]->operands())
      if (operand && operand->definingNode())
        boost::add_edge(i, index.at(operand->definingNode()), deps);

  std::vector<size_t> finished;
  std::optional<size_t> cycleVertex;
  OrderVisitor visitor;
  visitor.finished = &finished;
  visitor.cycleVertex = &cycleVertex;
  boost::depth_first_search(deps, boost::visitor(visitor));
  if (cycleVertex)
    fail("graph '", name_, "' has a cycle through ", order[*cycleVertex]->describe());
  std::vector<Node *> sorted;
  sorted.reserve(order.size());
  for (size_t v : finished)
    sorted.push_back(order[v]);
  return sorted;
}

void Graph::sortTopologically() {
  for (Node *node : topologicalOrder())
    moveNodeBefore(node, nullptr);
}

} // namespace onnxc
