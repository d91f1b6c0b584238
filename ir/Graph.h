//===- ir/Graph.h - The graph: inputs, constants, nodes, outputs ------------===//
//
// A Graph owns its nodes (in a list, in program order) and all values. Graph
// outputs are (name, value) pairs: the name is the model's output name and
// survives passes that rebind the output to another value.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Node.h"
#include "ir/Value.h"
#include "ir/shape/ShapeAssumption.h"

#include <list>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace onnxc {

struct GraphOutput {
  std::string name;
  Value *value;
};

class Graph {
public:
  using NodeList = std::list<std::unique_ptr<Node>>;

  explicit Graph(std::string name = "main") : name_(std::move(name)) {}
  Graph(const Graph &) = delete;
  Graph &operator=(const Graph &) = delete;

  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }

  // --- values ---------------------------------------------------------------
  /// Adds a graph input. Throws onnxc::Error if the name is taken.
  Value *addInput(const std::string &name, TensorType type);
  /// Adds a constant holding `data` (shared, not copied); type from the tensor.
  Value *addConstant(const std::string &name, std::shared_ptr<const Tensor> data);
  Value *addConstant(const std::string &name, Tensor data) {
    return addConstant(name, std::make_shared<const Tensor>(std::move(data)));
  }
  /// Removes a constant that has no uses and is not an output.
  void eraseConstant(Value *constant);
  /// Removes a graph input that has no uses and is not an output.
  void eraseInput(Value *input);

  /// Puts the inputs in `order`, a permutation of inputs() (a subgraph's
  /// captured values follow the order of its node's operands).
  void reorderInputs(const std::vector<Value *> &order);

  const std::vector<Value *> &inputs() const { return inputs_; }
  const std::vector<Value *> &constants() const { return constants_; }
  const std::vector<GraphOutput> &outputs() const { return outputs_; }
  void addOutput(const std::string &name, Value *value) { outputs_.push_back({name, value}); }
  void setOutputValue(size_t index, Value *value) { outputs_[index].value = value; }
  bool isOutput(const Value *value) const;

  /// Looks a value up by name (null if absent).
  Value *findValue(const std::string &name) const;
  /// Returns `base` if unused, otherwise `base_1`, `base_2`, ...
  std::string uniqueName(const std::string &base) const;
  /// Renames a value; throws onnxc::Error if the new name is taken.
  void renameValue(Value *value, const std::string &newName);

  /// Rebinds every use of `from` (node operands and graph outputs) to `to`.
  void replaceAllUsesWith(Value *from, Value *to);

  // --- nodes ----------------------------------------------------------------
  const NodeList &nodes() const { return nodes_; }
  size_t numNodes() const { return nodes_.size(); }
  /// A snapshot of the node pointers in order. A loop over it may erase the
  /// node it visits or one already visited, never one still ahead (that
  /// pointer would dangle): a pass that erases further nodes collects its
  /// candidates first (nodesOfKind).
  std::vector<Node *> nodeList() const;
  /// A snapshot of the nodes of one kind, in order.
  std::vector<Node *> nodesOfKind(OpKind kind) const;

  /// Creates a node with `numResults` fresh results named from `resultNames`
  /// (made unique; generated when empty). Inserted before `insertBefore`, or
  /// appended when it is null.
  Node *createNode(OpKind kind, const std::vector<Value *> &operands, unsigned numResults,
                   const std::string &nodeName = "",
                   const std::vector<std::string> &resultNames = {}, Node *insertBefore = nullptr);
  /// Erases a node whose results have no uses and are not outputs; its
  /// results are destroyed.
  void eraseNode(Node *node);
  /// Moves `node` to just before `position` (or to the end when null).
  void moveNodeBefore(Node *node, Node *position);

  // --- assumptions (ir/shape/ShapeAssumption.h) -----------------------------------
  const std::vector<ShapeAssumption> &assumptions() const { return assumptions_; }
  /// Records one, unless the same condition is already recorded.
  void addAssumption(ShapeAssumption assumption);
  /// Drops every assumption for which `drop` is true (a pass substituting
  /// symbols, or rolling back a node it tried and did not keep).
  template <typename Predicate> void eraseAssumptionsIf(Predicate drop) {
    std::erase_if(assumptions_, drop);
  }
  /// Keeps the first `count` (those recorded before a pass tried something).
  void truncateAssumptions(size_t count) {
    if (count < assumptions_.size())
      assumptions_.resize(count);
  }

  /// Nodes in a topological order (Boost.Graph). Throws onnxc::Error naming a
  /// node on a cycle.
  std::vector<Node *> topologicalOrder() const;
  /// Reorders the node list topologically, keeping the existing order where
  /// it is already valid.
  void sortTopologically();

private:
  Value *createValue(Value::Kind kind, const std::string &name);
  void destroyValue(Value *value);

  std::string name_;
  NodeList nodes_;
  std::vector<Value *> inputs_;
  std::vector<Value *> constants_;
  std::vector<GraphOutput> outputs_;
  std::unordered_map<std::string, std::unique_ptr<Value>> values_;
  std::vector<ShapeAssumption> assumptions_;
  unsigned nextGeneratedName_ = 0;
};

} // namespace onnxc
