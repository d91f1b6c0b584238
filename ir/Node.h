//===- ir/Node.h - Operations of the graph ----------------------------------===//
#pragma once

#include "ir/Attribute.h"
#include "ir/OpKind.h"
#include "ir/Value.h"

#include <list>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// One operation: an op kind, operands (null for an absent optional operand),
/// results (owned by the graph), attributes, and the ONNX node name it came
/// from (used in diagnostics; may be empty).
class Node {
public:
  ~Node();

  OpKind kind() const { return kind_; }
  std::string_view opName() const { return onnxc::opName(kind_); }
  const std::string &name() const { return name_; }
  void setName(std::string name) { name_ = std::move(name); }
  /// "node 'name'" or "node Op#result" for diagnostics.
  std::string describe() const;

  const std::vector<Value *> &operands() const { return operands_; }
  size_t numOperands() const { return operands_.size(); }
  /// Operand i, or null when absent or i is past the end.
  Value *operand(size_t i) const { return i < operands_.size() ? operands_[i] : nullptr; }
  bool hasOperand(size_t i) const { return operand(i) != nullptr; }
  /// Rebinds operand i (growing the list with nulls if needed), updating use lists.
  void setOperand(size_t i, Value *value);
  void addOperand(Value *value) { setOperand(operands_.size(), value); }
  /// Removes operands from index `count` on.
  void truncateOperands(size_t count);

  const std::vector<Value *> &results() const { return results_; }
  size_t numResults() const { return results_.size(); }
  Value *result(size_t i = 0) const { return results_[i]; }

  const AttributeMap &attributes() const { return attributes_; }
  bool hasAttr(const std::string &name) const { return attributes_.count(name) != 0; }
  const Attribute *findAttr(const std::string &name) const;
  void setAttr(const std::string &name, Attribute value);
  void removeAttr(const std::string &name) { attributes_.erase(name); }
  /// Typed getters with a default when absent; throw onnxc::Error (naming the
  /// node) when present with the wrong kind.
  int64_t getInt(const std::string &name, int64_t defaultValue) const;
  float getFloat(const std::string &name, float defaultValue) const;
  std::string getString(const std::string &name, const std::string &defaultValue) const;
  std::vector<int64_t> getInts(const std::string &name,
                               std::vector<int64_t> defaultValue = {}) const;
  std::vector<float> getFloats(const std::string &name, std::vector<float> defaultValue = {}) const;
  /// Required attributes: throw onnxc::Error naming the node when absent.
  int64_t requireInt(const std::string &name) const;
  const Tensor &requireTensor(const std::string &name) const;

  /// Subgraphs (regions) the node owns: If's then_branch/else_branch, Loop's
  /// and Scan's body, by attribute name, in the order they were attached.
  /// Each is isolated from above: the outer values it reads are operands of
  /// this node and inputs of the subgraph (ir/Subgraph.h says which), so
  /// use lists, DCE and CSE of the outer graph see every use.
  const std::vector<std::pair<std::string, std::unique_ptr<Graph>>> &subgraphs() const {
    return subgraphs_;
  }
  bool hasSubgraphs() const { return !subgraphs_.empty(); }
  /// The subgraph attached under `name`, or null.
  Graph *subgraph(const std::string &name) const;
  /// Attaches (or replaces) the subgraph `name`; the node owns it from now on.
  void setSubgraph(const std::string &name, std::unique_ptr<Graph> subgraph);
  /// Detaches the subgraph `name` (null if absent), handing ownership back.
  std::unique_ptr<Graph> takeSubgraph(const std::string &name);

  Graph *graph() const { return graph_; }

private:
  friend class Graph;
  friend class Value; // keeps useSlots_ in step as it reorders its use list
  Node(Graph *graph, OpKind kind, std::string name);

  Graph *graph_;
  OpKind kind_;
  std::string name_;
  std::vector<Value *> operands_;
  // Where operand i's use sits in operands_[i]->uses(), so that dropping a
  // use is O(1) rather than a search of a list that can hold every node.
  std::vector<unsigned> useSlots_;
  std::vector<Value *> results_;
  AttributeMap attributes_;
  std::vector<std::pair<std::string, std::unique_ptr<Graph>>> subgraphs_;
  std::list<std::unique_ptr<Node>>::iterator position_; // in graph_->nodes()
};

} // namespace onnxc
