//===- passes/FuseGelu.cpp - Decomposed erf GELU -> one Gelu op ------------===//
//
// torch.onnx writes F.gelu (below opset 20) as
//
//   %d = Div(%x, 1.4142135)        or  Mul(%x, 0.70710677)
//   %e = Erf(%d)
//   %a = Add(%e, 1.0)
//   %m = Mul(%x, %a)               \   or  %h = Mul(%x, 0.5)
//   %y = Mul(%m, 0.5)              /       %y = Mul(%h, %a)
//
// (commutative operands in either order). The whole chain becomes
// %y = Gelu(%x), computed in one pass with a relative-accuracy negative
// tail. Intermediate values must have no other use. Not in the -O
// pipelines yet: the Gelu kernel measured ~10% slower than the decomposed
// chain (it evaluates erfc for the tail), so it joins -O2 with issue 4's
// GELU work; the tanh form is not matched yet either.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include <cmath>
#include <optional>

namespace onnxc {

namespace {

/// The value of a one-element floating constant, if `value` is one.
std::optional<double> scalarConstant(const Value *value) {
  if (!value || !value->isConstant() || !isFloat(value->dtype()))
    return std::nullopt;
  const Tensor &t = value->constantValue();
  if (!t.hasData() || t.numElements() != 1)
    return std::nullopt;
  return t.elementAsDouble(0);
}

bool near(std::optional<double> value, double expected) {
  return value && std::fabs(*value - expected) <= 1e-4 * std::fabs(expected);
}

/// For a two-operand `kind` node, the operand that is not `known` (null if
/// `known` is not an operand).
Value *otherOperand(const Node &node, OpKind kind, const Value *known) {
  if (node.kind() != kind || node.numOperands() != 2)
    return nullptr;
  if (node.operand(0) == known)
    return node.operand(1);
  if (node.operand(1) == known)
    return node.operand(0);
  return nullptr;
}

/// The only node reading `value`, when the value is not a graph output.
Node *soleUser(const Graph &graph, const Value *value) {
  if (value->numUses() != 1 || graph.isOutput(value))
    return nullptr;
  return value->uses()[0].user;
}

class FuseGelu : public Pass {
public:
  std::string_view name() const override { return "fuse-gelu"; }
  std::string_view description() const override {
    return "replace the decomposed erf GELU (x * 0.5 * (1 + erf(x / sqrt 2))) by one Gelu op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    for (Node *erf : graph.nodeList()) {
      if (erf->kind() != OpKind::Erf)
        continue;
      const char *reason = nullptr;
      Node *root = nullptr;
      Value *x = match(graph, *erf, root, reason);
      if (!x) {
        context.explain(*erf, reason);
        continue;
      }
      Node *gelu = graph.createNode(OpKind::Gelu, {x}, 1, root->name(), {}, root);
      gelu->result(0)->setType(root->result(0)->type());
      // The Gelu takes over the root's result name; the rest of the chain
      // is left for dce.
      std::string resultName = root->result(0)->name();
      graph.replaceAllUsesWith(root->result(0), gelu->result(0));
      graph.eraseNode(root);
      graph.renameValue(gelu->result(0), resultName);
      context.count("fused");
      changed = true;
    }
    return changed;
  }

private:
  /// Returns x and sets `root` (the node whose result is GELU(x)), or
  /// returns null and sets `reason`.
  static Value *match(const Graph &graph, const Node &erf, Node *&root, const char *&reason) {
    const Value *scaled = erf.operand(0);
    Node *scale = scaled ? scaled->definingNode() : nullptr;
    if (!scale || soleUser(graph, scaled) != &erf) {
      reason = "gelu: erf's operand is not a Div/Mul used only by it";
      return nullptr;
    }
    Value *x = nullptr;
    if (scale->kind() == OpKind::Div && near(scalarConstant(scale->operand(1)), std::sqrt(2.0)))
      x = scale->operand(0);
    else if (scale->kind() == OpKind::Mul && near(scalarConstant(scale->operand(1)), std::sqrt(0.5)))
      x = scale->operand(0);
    else if (scale->kind() == OpKind::Mul && near(scalarConstant(scale->operand(0)), std::sqrt(0.5)))
      x = scale->operand(1);
    if (!x || x->dtype() != DType::F32) {
      reason = "gelu: erf's operand is not f32 x / sqrt(2) or x * 0.7071";
      return nullptr;
    }
    Node *add = soleUser(graph, erf.result(0));
    Value *one = add ? otherOperand(*add, OpKind::Add, erf.result(0)) : nullptr;
    if (!near(scalarConstant(one), 1.0)) {
      reason = "gelu: erf is not followed by + 1 alone";
      return nullptr;
    }
    Node *product = soleUser(graph, add->result(0));
    if (!product) {
      reason = "gelu: 1 + erf is also used elsewhere";
      return nullptr;
    }
    Value *factor = product ? otherOperand(*product, OpKind::Mul, add->result(0)) : nullptr;
    if (!factor) {
      reason = "gelu: 1 + erf is not multiplied next";
      return nullptr;
    }
    if (factor == x) { // x * (1 + erf) * 0.5
      Node *half = soleUser(graph, product->result(0));
      Value *constant = half ? otherOperand(*half, OpKind::Mul, product->result(0)) : nullptr;
      if (!near(scalarConstant(constant), 0.5)) {
        reason = "gelu: x * (1 + erf) is not halved";
        return nullptr;
      }
      root = half;
    } else { // (x * 0.5) * (1 + erf)
      Node *halfX = factor->definingNode();
      Value *constant = halfX ? otherOperand(*halfX, OpKind::Mul, x) : nullptr;
      if (!near(scalarConstant(constant), 0.5) || soleUser(graph, factor) != product) {
        reason = "gelu: 1 + erf is multiplied by something other than x or x * 0.5";
        return nullptr;
      }
      root = product;
    }
    if (root->result(0)->shape() != x->shape() || root->result(0)->dtype() != x->dtype()) {
      reason = "gelu: the chain broadcasts x to another shape";
      return nullptr;
    }
    return x;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseGeluPass() { return std::make_unique<FuseGelu>(); }

} // namespace onnxc
