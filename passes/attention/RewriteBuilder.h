//===- passes/attention/RewriteBuilder.h - Nodes of an attention rewrite ---===//
//
// The attention rewrites (fuse-attention and the canonicalizations before
// it) create a few nodes per candidate and must leave the graph as it was
// when they refuse halfway (a shape rule that throws, a result type that
// differs): this keeps what they created and takes it back.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/infer/ShapeInference.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onnxc::attention {

class RewriteBuilder {
public:
  /// Creates nodes before `before` (appended at the end when null).
  RewriteBuilder(Graph &graph, Node *before)
      : graph_(graph), before_(before), assumptionsBefore_(graph.assumptions().size()) {}

  Value *constantI64(const std::string &base, std::vector<int64_t> values) {
    int64_t n = int64_t(values.size());
    return graph_.addConstant(graph_.uniqueName(base), Tensor::fromVector<int64_t>({n}, values));
  }

  /// A node with its result types inferred (which may throw onnxc::Error),
  /// seeing the contents inferred for the builder's earlier nodes (a
  /// Reshape's target made of Shape slices).
  Value *create(OpKind kind, const std::vector<Value *> &operands, const std::string &name,
                const std::vector<std::pair<std::string, Attribute>> &attributes = {}) {
    Node *node = graph_.createNode(kind, operands, 1, name, {graph_.uniqueName(name)}, before_);
    created_.push_back(node);
    for (const auto &[key, value] : attributes)
      node->setAttr(key, value);
    if (!inference_)
      inference_.emplace(graph_);
    inferNodeShapes(*node, *inference_);
    return node->result(0);
  }

  /// Takes `node`, made by the caller before `before`, back with the rest.
  void adopt(Node *node) { created_.push_back(node); }

  /// Erases what was created, newest first, with what its shape rules assumed.
  void rollBack() {
    graph_.truncateAssumptions(assumptionsBefore_);
    for (auto it = created_.rbegin(); it != created_.rend(); ++it)
      graph_.eraseNode(*it);
    created_.clear();
    inference_.reset();
  }

private:
  Graph &graph_;
  Node *before_;
  size_t assumptionsBefore_;
  std::vector<Node *> created_;
  std::optional<InferenceContext> inference_;
};

} // namespace onnxc::attention
