//===- passes/cleanup/RemoveIdentity.cpp - Bypass Identity and inference Dropout ---===//
//
//   %y = Identity(%x)                      uses of %y  ->  uses of %x
//   %y = Dropout(%x, %ratio)               uses of %y  ->  uses of %x
//   %y, %mask = Dropout(%x, %r, %false)    (only when %mask is unused)
//
// Dropout is an identity at inference time: when training_mode is absent or
// a constant false. It is left alone when training_mode may be true or its
// mask is used (the mask would need a tensor of ones). Graph outputs keep
// their names: a GraphOutput holds the name and is rebound to %x.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

#include <cassert>

namespace onnxc {

using match::matched;
using match::MatchStatus;
using match::Rejection;

namespace {

/// Whether `node` can be bypassed, or why not.
MatchStatus bypassable(const Graph &graph, const Node &node) {
  if (node.kind() == OpKind::Identity)
    return matched();
  assert(node.kind() == OpKind::Dropout);
  if (const Value *training = node.operand(2)) {
    if (!training->isConstant() || !training->constantValue().hasData())
      return Rejection{"dropout training_mode is not a known constant"};
    const Tensor &t = training->constantValue();
    if (t.numElements() != 1 || t.elementAsInt64(0) != 0)
      return Rejection{"dropout runs in training mode"};
  }
  if (node.numResults() > 1 && (node.result(1)->hasUses() || graph.isOutput(node.result(1))))
    return Rejection{"dropout mask is used"};
  return matched();
}

class RemoveIdentity : public Pass {
public:
  std::string_view name() const override { return "remove-identity"; }
  std::string_view description() const override {
    return "bypass Identity and inference-mode Dropout nodes";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("removed", 0);
    bool changed = false;
    for (Node *node : graph.nodeList()) {
      if (node->kind() != OpKind::Identity && node->kind() != OpKind::Dropout)
        continue;
      if (MatchStatus status = bypassable(graph, *node); !status) {
        context.explain(*node, status.rejection().reason);
        continue;
      }
      Value *input = node->operand(0);
      graph.replaceAllUsesWith(node->result(0), input);
      graph.eraseNode(node);
      context.count("removed");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createRemoveIdentityPass() { return std::make_unique<RemoveIdentity>(); }

} // namespace onnxc
