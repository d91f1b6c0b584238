//===- passes/fusion/FuseLayerNorm.cpp - Decomposed LayerNorm -> LayerNormalization ---===//
//
// torch.onnx below opset 17 (and hand-written models) spell LayerNorm as
//
//   [%x   = Cast(%x0) {to = f32}]
//   %m   = ReduceMean(%x, axes = [-1]) {keepdims = 1}
//   %d   = Sub(%x, %m)
//   %sq  = Pow(%d, 2)                   or Mul(%d, %d)
//   %v   = ReduceMean(%sq, axes = [-1])
//   %ve  = Add(%v, ε)
//   %n   = Div(%d, Sqrt(%ve))           or Mul(%d, Reciprocal(Sqrt(%ve))),
//                                          Mul(%d, Div(1, Sqrt(%ve))),
//                                          Mul(%d, Pow(%ve, -0.5))
//   [%c  = Cast(%n) {to = type of %x0}]
//   [%s  = Mul(%c, γ)]                  γ of shape [C] (leading 1s allowed)
//   [%y  = Add(%s, β)]                  β likewise
//
// (commutative operands in either order) and the chain becomes
//   %y = LayerNormalization(%x0 or %x, γ or ones[C], [β]) {axis = -1, epsilon = ε}
// Every intermediate must have no other reader. A ReduceMean whose result a
// Sub subtracts is a candidate; candidates that do not match (a mean over
// another or several axes, a Sub of another tensor, Pow 3, a non-constant ε,
// a γ over two axes, ...) are counted as rejected and --explain says why.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/fusion/NormalizationMatch.h"

namespace onnxc {

using namespace normmatch;

namespace {

/// Whether a Sub subtracts `mean` from something: the LayerNorm signature.
bool isSubtracted(const Value *mean) {
  for (const Use &use : mean->uses())
    if (use.user->kind() == OpKind::Sub && use.operandIndex == 1)
      return true;
  return false;
}

struct LayerNormMatch {
  Value *x = nullptr;        // the tensor the statistics are computed on
  std::vector<Node *> nodes; // the whole chain, in program order
  NormalizationTail tail;
};

/// The node squaring `centered`: Pow(centered, e) or Mul(centered, centered).
Node *squaringUser(const Value *centered) {
  for (const Use &use : centered->uses()) {
    Node *user = use.user;
    if (user->kind() == OpKind::Pow && use.operandIndex == 0)
      return user;
    if (user->kind() == OpKind::Mul && user->operand(0) == centered && user->operand(1) == centered)
      return user;
  }
  return nullptr;
}

/// The LayerNorm `mean` starts, or why it starts none.
MatchResult<LayerNormMatch> matchLayerNorm(const Graph &graph, Node &mean) {
  Value *x = mean.operand(0);
  if (!isFloat(x->dtype()) || !x->shape().isRanked() || x->shape().rank() == 0)
    return Rejection{"the input is not a floating-point tensor of known rank"};
  if (!reducesLastAxisOnly(mean))
    return Rejection{"the mean is not over the last axis alone with keepdims"};
  Node *sub = soleUser(graph, mean.result(0));
  if (!sub)
    return Rejection{"the mean is also used elsewhere"};
  if (sub->operand(0) != x)
    return Rejection{"the mean is subtracted from another tensor than its input"};
  Value *centered = sub->result(0);
  if (graph.isOutput(centered))
    return Rejection{"the centered input is a graph output"};
  Node *square = squaringUser(centered);
  if (!square)
    return Rejection{"the centered input is not squared (Pow 2 or Mul by itself)"};
  if (square->kind() == OpKind::Pow) {
    std::optional<double> exponent = scalarConstant(square->operand(1));
    if (!exponent || *exponent != 2.0)
      return Rejection{"the centered input is raised to a power other than 2"};
  }
  Node *variance = soleUser(graph, square->result(0));
  if (!variance || variance->kind() != OpKind::ReduceMean ||
      variance->operand(0) != square->result(0))
    return Rejection{"the square is not averaged alone"};
  if (!reducesLastAxisOnly(*variance))
    return Rejection{"the variance is not a mean over the last axis alone with keepdims"};
  LayerNormMatch match;
  if (MatchStatus tail =
          matchNormalizationTail(graph, *variance, centered, x->shape(), true, match.tail);
      !tail)
    return tail.rejection();
  size_t squareUses = square->kind() == OpKind::Mul ? 2 : 1;
  if (centered->numUses() != squareUses + 1)
    return Rejection{"the centered input is also used elsewhere"};
  match.x = x;
  match.nodes = {&mean, sub, square, variance};
  match.nodes.insert(match.nodes.end(), match.tail.nodes.begin(), match.tail.nodes.end());
  return match;
}

/// Replaces the LayerNorm `mean` starts by one LayerNormalization.
MatchStatus fuseLayerNorm(Graph &graph, Node &mean, std::unordered_set<const Node *> &erased) {
  MatchResult<LayerNormMatch> match = matchLayerNorm(graph, mean);
  if (!match)
    return match.rejection();
  return fuseNormalization(graph, OpKind::LayerNormalization, match->x, match->tail, match->nodes,
                           erased);
}

class FuseLayerNorm : public Pass {
public:
  std::string_view name() const override { return "fuse-layernorm"; }
  std::string_view description() const override {
    return "replace the decomposed LayerNorm (ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, "
           "Mul, Add) by one LayerNormalization op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    std::unordered_set<const Node *> erased;
    bool changed = false;
    for (Node *mean : graph.nodeList()) {
      if (erased.count(mean) || mean->kind() != OpKind::ReduceMean ||
          !isSubtracted(mean->result(0)))
        continue;
      if (MatchStatus fused = fuseLayerNorm(graph, *mean, erased); !fused) {
        context.reject(*mean, fused.rejection().reason);
        continue;
      }
      context.count("fused");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseLayerNormPass() { return std::make_unique<FuseLayerNorm>(); }

} // namespace onnxc
