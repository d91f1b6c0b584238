//===- codegen/lower/ControlFlowLowering.cpp - If, Loop, Scan in codegen ---===//
//
// Not lowered yet: a runtime If needs both branches planned as sub-plans
// the runtime selects between, and Loop/Scan a step that runs the body's
// plan per iteration; the ModelPlan has neither. Until it does, a model
// that keeps one after -O1 (an If on a condition known only at run time;
// constant ones are inlined by inline-constant-if) is refused with one
// line naming the node, rather than the generic missing-kernel message.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"

namespace onnxc::lower {

void refuseControlFlow(const std::vector<Node *> &order) {
  for (const Node *node : order) {
    if (!isControlFlow(node->kind()))
      continue;
    const char *why = node->kind() == OpKind::If
                          ? "its condition is only known at run time and codegen does not lower "
                            "a run-time If yet"
                          : "codegen does not lower loops yet";
    fail(node->describe(), ": cannot compile ", node->opName(), ": ", why,
         " (use `onnxc run --backend=ref` to evaluate this model)");
  }
}

} // namespace onnxc::lower
