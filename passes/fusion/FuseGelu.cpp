//===- passes/fusion/FuseGelu.cpp - Decomposed GELU (erf or tanh form) -> Gelu ---===//
//
// torch.onnx writes F.gelu below opset 20 as the erf form, and GPT-2-style
// code (or F.gelu(approximate="tanh")) as the tanh form:
//
//   %d = Div(%x, 1.4142135)              %c = Pow(%x, 3)    or Mul(Mul(%x, %x), %x),
//     or Mul(%x, 0.70710677)                                   any association
//   %e = Erf(%d)                         %k = Mul(%c, 0.044715)
//                                        %i = Add(%x, %k)
//                                        %u = Mul(%i, 0.7978846)        sqrt(2/pi)
//                                        %e = Tanh(%u)
//   %a = Add(%e, 1.0)
//   %y = 0.5 * x * %a  as  Mul(Mul(%x, %a), 0.5), Mul(Mul(%x, 0.5), %a)
//                       or Mul(Mul(%a, 0.5), %x)
//
// (commutative operands in either order). The chain becomes %y = Gelu(%x),
// {approximate = "tanh"} for the tanh form. Every intermediate must have no
// other reader. Each Erf, and each Tanh of a Mul by a constant, is a
// candidate; one that does not match is counted as rejected and --explain
// says which check failed.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

#include <cmath>

namespace onnxc {

using namespace match;

namespace {

/// Whether `node` is a two-operand Mul with a one-element constant operand.
bool isScaling(const Node *node) {
  return node && node->kind() == OpKind::Mul && node->numOperands() == 2 &&
         (scalarConstant(node->operand(0)) || scalarConstant(node->operand(1)));
}

/// The operand of the two-operand Mul `node` that the other operand, a
/// constant near `factor`, scales (null if neither operand is such).
Value *scaledBy(const Node &node, double factor) {
  if (node.kind() != OpKind::Mul || node.numOperands() != 2)
    return nullptr;
  for (unsigned i : {0u, 1u})
    if (near(scalarConstant(node.operand(i)), factor))
      return node.operand(1 - i);
  return nullptr;
}

/// Whether `cube` is x^3 as Pow(x, 3), Mul(Mul(x, x), x) or Mul(x, Mul(x, x)),
/// with the inner square read only by the outer Mul.
bool isCubeOf(const Graph &graph, const Value *cube, const Value *x) {
  const Node *node = cube->definingNode();
  if (!node || node->numOperands() != 2)
    return false;
  if (node->kind() == OpKind::Pow)
    return node->operand(0) == x && scalarConstant(node->operand(1)) == 3.0;
  const Value *square = otherOperand(*node, OpKind::Mul, x);
  const Node *squaring = square ? square->definingNode() : nullptr;
  return squaring && squaring->kind() == OpKind::Mul && squaring->operand(0) == x &&
         squaring->operand(1) == x && soleUser(graph, square) == node;
}

/// A candidate's x and the node whose result is GELU(x).
struct GeluMatch {
  Value *x = nullptr;
  Node *root = nullptr;
};

/// Matches x / sqrt 2 (or x * 0.7071) feeding `erf`, or says why not.
MatchStatus matchErfArgument(const Graph &graph, const Node &erf, GeluMatch &match) {
  const Value *scaled = erf.operand(0);
  Node *scale = scaled ? scaled->definingNode() : nullptr;
  if (!scale || soleUser(graph, scaled) != &erf)
    return Rejection{"gelu: erf's operand is not a Div/Mul used only by it"};
  if (scale->kind() == OpKind::Div && near(scalarConstant(scale->operand(1)), std::sqrt(2.0)))
    match.x = scale->operand(0);
  else
    match.x = scaledBy(*scale, std::sqrt(0.5));
  if (!match.x)
    return Rejection{"gelu: erf's operand is not x / sqrt(2) or x * 0.7071"};
  return matched();
}

/// Matches sqrt(2/pi) * (x + 0.044715 * x^3) feeding `tanh`.
MatchStatus matchTanhArgument(const Graph &graph, const Node &tanh, GeluMatch &match) {
  const Value *scaled = tanh.operand(0);
  Node *scale = scaled->definingNode();
  if (soleUser(graph, scaled) != &tanh)
    return Rejection{"gelu: tanh's operand is also used elsewhere"};
  Value *inner = scaledBy(*scale, std::sqrt(2.0 / M_PI));
  if (!inner)
    return Rejection{"gelu: tanh's operand is not scaled by sqrt(2/pi) = 0.7978846"};
  Node *sum = inner->definingNode();
  if (!sum || sum->kind() != OpKind::Add || sum->numOperands() != 2)
    return Rejection{"gelu: sqrt(2/pi) does not scale a sum x + 0.044715 * x^3"};
  // The addend scaled by 0.044715 is the cubic term; the other one is x.
  Value *cube = nullptr;
  Node *cubicTerm = nullptr;
  for (unsigned i : {0u, 1u}) {
    Node *term = sum->operand(i)->definingNode();
    if (term && (cube = scaledBy(*term, 0.044715))) {
      cubicTerm = term;
      match.x = sum->operand(1 - i);
      break;
    }
  }
  if (!cube)
    return Rejection{"gelu: the sum under tanh has no 0.044715 * x^3 term"};
  if (!isCubeOf(graph, cube, match.x))
    return Rejection{"gelu: the cubic term is not x^3 of the x it is added to"};
  if (soleUser(graph, inner) != scale || soleUser(graph, cubicTerm->result(0)) != sum ||
      soleUser(graph, cube) != cubicTerm)
    return Rejection{"gelu: part of tanh's operand is also used elsewhere"};
  return matched();
}

/// Matches 0.5 * x * (1 + f) after `f` (the Erf or Tanh result).
MatchStatus matchHalfXTimesOnePlus(const Graph &graph, const Value *f, GeluMatch &match) {
  Node *add = soleUser(graph, f);
  if (!add || !near(scalarConstant(otherOperand(*add, OpKind::Add, f)), 1.0))
    return Rejection{"gelu: erf/tanh is not followed by + 1 alone"};
  const Value *onePlus = add->result(0);
  Node *product = soleUser(graph, onePlus);
  if (!product)
    return Rejection{"gelu: 1 + erf/tanh is also used elsewhere"};
  Value *factor = otherOperand(*product, OpKind::Mul, onePlus);
  if (!factor)
    return Rejection{"gelu: 1 + erf/tanh is not multiplied next"};
  Value *x = match.x;
  if (factor == x || near(scalarConstant(factor), 0.5)) {
    // x * (1 + f) * 0.5, or (1 + f) * 0.5 * x.
    Node *last = soleUser(graph, product->result(0));
    Value *other = last ? otherOperand(*last, OpKind::Mul, product->result(0)) : nullptr;
    bool ok = factor == x ? near(scalarConstant(other), 0.5) : other == x;
    if (!ok)
      return Rejection{"gelu: (1 + erf/tanh) is not multiplied by both x and 0.5"};
    match.root = last;
  } else { // (x * 0.5) * (1 + f)
    Node *halfX = factor->definingNode();
    if (!halfX || scaledBy(*halfX, 0.5) != x || soleUser(graph, factor) != product)
      return Rejection{
          "gelu: 1 + erf/tanh is multiplied by something other than x, x * 0.5 or 0.5"};
    match.root = product;
  }
  if (x->dtype() != DType::F32)
    return Rejection{"gelu: x is not f32"};
  const Value *y = match.root->result(0);
  if (y->shape() != x->shape() || y->dtype() != x->dtype())
    return Rejection{"gelu: the chain broadcasts x to another shape"};
  return matched();
}

/// Matches the GELU around `node` (an Erf or a Tanh), filling `match`.
MatchStatus matchGelu(const Graph &graph, const Node &node, GeluMatch &match) {
  MatchStatus argument = node.kind() == OpKind::Tanh ? matchTanhArgument(graph, node, match)
                                                     : matchErfArgument(graph, node, match);
  if (!argument)
    return argument;
  return matchHalfXTimesOnePlus(graph, node.result(0), match);
}

class FuseGelu : public Pass {
public:
  std::string_view name() const override { return "fuse-gelu"; }
  std::string_view description() const override {
    return "replace the decomposed GELU, erf form (x * 0.5 * (1 + erf(x / sqrt 2))) or tanh form "
           "(0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))), by one Gelu op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    // Candidates first: a fusion erases its root (a Mul later in the list),
    // which a snapshot of every node would still hold.
    std::vector<Node *> candidates;
    for (Node *node : graph.nodeList())
      if (node->kind() == OpKind::Erf ||
          (node->kind() == OpKind::Tanh && isScaling(node->operand(0)->definingNode())))
        candidates.push_back(node);
    for (Node *node : candidates) {
      bool tanhForm = node->kind() == OpKind::Tanh;
      GeluMatch match;
      if (MatchStatus gelu = matchGelu(graph, *node, match); !gelu) {
        context.reject(*node, gelu.rejection().reason);
        continue;
      }
      Node *root = match.root;
      Node *gelu = graph.createNode(OpKind::Gelu, {match.x}, 1, root->name(), {}, root);
      if (tanhForm)
        gelu->setAttr("approximate", "tanh");
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
};

} // namespace

std::unique_ptr<Pass> createFuseGeluPass() { return std::make_unique<FuseGelu>(); }

} // namespace onnxc
