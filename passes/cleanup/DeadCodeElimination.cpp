//===- passes/cleanup/DeadCodeElimination.cpp - Erase unused nodes and constants ---===//
//
//   %a = Shape(%x)            <- erased: %a only feeds dead %b
//   %b = Gather(%a, %i)       <- erased: %b has no users, is no output
//   %y = Relu(%x)             <- kept: %y is returned
//   return %y
//
// Walks the nodes backwards, so a whole dead chain goes in one sweep, then
// drops constants nothing uses. Graph inputs are kept even when unused: they
// are the model's signature.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include <algorithm>

namespace onnxc {

namespace {

bool isDead(const Graph &graph, const Node &node) {
  return std::none_of(node.results().begin(), node.results().end(), [&](const Value *result) {
    return result->hasUses() || graph.isOutput(result);
  });
}

class DeadCodeElimination : public Pass {
public:
  std::string_view name() const override { return "dce"; }
  std::string_view description() const override {
    return "erase nodes whose results are unused, and unused constants";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("removed", 0);
    int64_t removedNodes = 0;
    std::vector<Node *> nodes = graph.nodeList();
    for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) {
      if (!isDead(graph, **it))
        continue;
      graph.eraseNode(*it);
      ++removedNodes;
    }
    int64_t removedConstants = 0;
    // Copy: erasing edits graph.constants().
    std::vector<Value *> constants = graph.constants();
    for (Value *constant : constants) {
      if (constant->hasUses() || graph.isOutput(constant))
        continue;
      graph.eraseConstant(constant);
      ++removedConstants;
    }
    context.count("removed", removedNodes);
    if (removedConstants)
      context.count("constants removed", removedConstants);
    return removedNodes + removedConstants > 0;
  }
};

} // namespace

std::unique_ptr<Pass> createDeadCodeEliminationPass() {
  return std::make_unique<DeadCodeElimination>();
}

} // namespace onnxc
