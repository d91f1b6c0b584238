//===- ir/Value.h - SSA values: graph inputs, constants and node results ----===//
#pragma once

#include "ir/Tensor.h"
#include "ir/shape/Shape.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

class Node;
class Graph;

/// One use of a value: operand `operandIndex` of `user`.
struct Use {
  Node *user;
  unsigned operandIndex;
  bool operator==(const Use &o) const { return user == o.user && operandIndex == o.operandIndex; }
};

/// A tensor-valued SSA value. Every value has a unique name in its graph, a
/// type (dtype + shape), and knows its users. Values are owned by the Graph.
class Value {
public:
  enum class Kind { GraphInput, Constant, NodeResult };

  Kind kind() const { return kind_; }
  bool isGraphInput() const { return kind_ == Kind::GraphInput; }
  bool isConstant() const { return kind_ == Kind::Constant; }
  bool isNodeResult() const { return kind_ == Kind::NodeResult; }

  const std::string &name() const { return name_; }

  const TensorType &type() const { return type_; }
  DType dtype() const { return type_.dtype; }
  const Shape &shape() const { return type_.shape; }
  void setType(TensorType type) { type_ = std::move(type); }
  void setDType(DType dtype) { type_.dtype = dtype; }
  void setShape(Shape shape) { type_.shape = std::move(shape); }

  /// The contents of a constant (shared, never copied by passes). May be
  /// elided (no data) for constants read from text IR.
  const Tensor &constantValue() const { return *constant_; }
  const std::shared_ptr<const Tensor> &constantPtr() const { return constant_; }

  /// The node computing this value (null for inputs and constants).
  Node *definingNode() const { return definingNode_; }
  unsigned resultIndex() const { return resultIndex_; }

  const std::vector<Use> &uses() const { return uses_; }
  bool hasUses() const { return !uses_.empty(); }
  size_t numUses() const { return uses_.size(); }

  /// Makes every user of this value use `replacement` instead. Graph outputs
  /// are rebound too (Graph::replaceAllUsesWith does both; prefer it).
  void replaceUsesWith(Value *replacement);

  Graph *graph() const { return graph_; }

private:
  friend class Graph;
  friend class Node;
  // Test-only (tests/unit/GraphTestAccess.h): lets the verifier tests break
  // the bookkeeping the public API keeps consistent.
  friend struct GraphTestAccess;
  Value(Graph *graph, Kind kind, std::string name)
      : graph_(graph), kind_(kind), name_(std::move(name)) {}
  /// Appends `use`; returns its slot in uses_ for the user to keep.
  unsigned addUse(Use use) {
    uses_.push_back(use);
    return unsigned(uses_.size() - 1);
  }
  /// Drops the use at `slot` by moving the last use into its place (and
  /// telling that use's node its new slot): O(1), so erasing or rewiring
  /// every user of a value is linear in its uses. Use order is not kept.
  void removeUse(Use use, unsigned slot);

  Graph *graph_;
  Kind kind_;
  std::string name_;
  TensorType type_;
  std::shared_ptr<const Tensor> constant_;
  Node *definingNode_ = nullptr;
  unsigned resultIndex_ = 0;
  std::vector<Use> uses_;
};

} // namespace onnxc
