//===- passes/cleanup/InlineConstantIf.cpp - Replace an If by its taken branch ---===//
//
//   const %c: bool[] = dense<true>
//   %r = If(%c, %x) : f32[n]                           %r = Relu(%x) : f32[n]
//     then_branch = graph @then(%x: f32[n]) -> ... { ==>
//       %r = Relu(%x) ...  return %r }
//     else_branch = graph @else(...) { ... }
//
// An If whose condition is a constant (after fold-constants, which also
// folds conditions computed from static shapes) runs one branch only: that
// branch's nodes move into the graph in the If's place, its inputs bound to
// the captured values, and the If goes. Nested Ifs come out as ordinary
// nodes and are inlined in a later round when their conditions are known.
// Refused (--explain): a condition without contents or with more than one
// element.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include "ir/Subgraph.h"

namespace onnxc {

namespace {

class InlineConstantIf : public Pass {
public:
  std::string_view name() const override { return "inline-constant-if"; }
  std::string_view description() const override {
    return "replace an If whose condition is constant by the branch it takes";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("inlined", 0);
    int64_t inlined = 0;
    // A snapshot of the Ifs: inlining erases only the If it visits and adds
    // nodes before it, never erases one still ahead.
    for (Node *node : graph.nodesOfKind(OpKind::If)) {
      const Value *cond = node->operand(0);
      if (!cond->isConstant())
        continue;
      const Tensor &value = cond->constantValue();
      if (!value.hasData() || value.numElements() != 1) {
        context.reject(*node, "condition constant without one known element");
        continue;
      }
      bool taken = value.elementAsDouble(0) != 0;
      std::unique_ptr<Graph> branch = node->takeSubgraph(taken ? "then_branch" : "else_branch");
      std::vector<Value *> captured(node->operands().begin() + 1, node->operands().end());
      std::vector<Value *> outputs = inlineSubgraph(graph, node, *branch, captured);
      for (size_t i = 0; i < node->numResults(); ++i)
        graph.replaceAllUsesWith(node->result(i), outputs[i]);
      graph.eraseNode(node);
      ++inlined;
    }
    context.count("inlined", inlined);
    return inlined > 0;
  }
};

} // namespace

std::unique_ptr<Pass> createInlineConstantIfPass() { return std::make_unique<InlineConstantIf>(); }

} // namespace onnxc
