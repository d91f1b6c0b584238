//===- passes/fusion/FuseRmsNorm.cpp - Decomposed RMSNorm -> RMSNormalization ---===//
//
// LLaMA-style RMSNorm as exporters write it:
//
//   [%x  = Cast(%x0) {to = f32}]
//   %sq  = Pow(%x, 2)                   or Mul(%x, %x)
//   %v   = ReduceMean(%sq, axes = [-1]) {keepdims = 1}
//   %ve  = Add(%v, ε)
//   %n   = Div(%x, Sqrt(%ve))           or Mul(%x, Reciprocal(Sqrt(%ve))),
//                                          Mul(%x, Div(1, Sqrt(%ve)))  (torch rsqrt),
//                                          Mul(%x, Pow(%ve, -0.5))
//   [%c  = Cast(%n) {to = type of %x0}]
//   [%y  = Mul(%c, γ)]                  γ of shape [C] (leading 1s allowed)
//
// (commutative operands in either order) becomes
//   %y = RMSNormalization(%x0 or %x, γ or ones[C]) {axis = -1, epsilon = ε}
// %x may have other readers (it is the residual stream of a pre-norm
// block); the intermediates may not. A ReduceMean of a square is a
// candidate; one that does not match is counted as rejected and --explain
// says why. The variance of a decomposed LayerNorm also has this shape (of
// x - mean(x)); it is rejected here and left to fuse-layernorm.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/fusion/NormalizationMatch.h"

namespace onnxc {

using namespace normmatch;

namespace {

/// The node squaring the input of `mean`, if it is Pow(x, e) or Mul(x, x).
Node *squareFeeding(const Node &mean) {
  Node *square = mean.operand(0)->definingNode();
  if (!square)
    return nullptr;
  if (square->kind() == OpKind::Pow)
    return square;
  if (square->kind() == OpKind::Mul && square->operand(0) == square->operand(1))
    return square;
  return nullptr;
}

/// Whether `x` is `a - ReduceMean(a)`: the centered input of a LayerNorm.
bool isCentered(const Value *x) {
  const Node *sub = x->definingNode();
  if (!sub || sub->kind() != OpKind::Sub)
    return false;
  const Node *mean = sub->operand(1)->definingNode();
  return mean && mean->kind() == OpKind::ReduceMean && mean->operand(0) == sub->operand(0);
}

struct RmsNormMatch {
  Value *x = nullptr;
  std::vector<Node *> nodes;
  NormalizationTail tail;
};

/// The RMSNorm `square` and `mean` start, or why they start none.
MatchResult<RmsNormMatch> matchRmsNorm(const Graph &graph, Node &mean, Node &square) {
  Value *x = square.operand(0);
  if (!isFloat(x->dtype()) || !x->shape().isRanked() || x->shape().rank() == 0)
    return Rejection{"the input is not a floating-point tensor of known rank"};
  if (square.kind() == OpKind::Pow) {
    std::optional<double> exponent = scalarConstant(square.operand(1));
    if (!exponent || *exponent != 2.0)
      return Rejection{"the input is raised to a power other than 2"};
  }
  if (soleUser(graph, square.result(0)) != &mean)
    return Rejection{"the square is also used elsewhere"};
  if (!reducesLastAxisOnly(mean))
    return Rejection{"the mean of squares is not over the last axis alone with keepdims"};
  if (isCentered(x))
    return Rejection{"the squared input is centered (a LayerNorm: fuse-layernorm's pattern)"};
  RmsNormMatch match;
  if (MatchStatus tail = matchNormalizationTail(graph, mean, x, x->shape(), false, match.tail);
      !tail)
    return tail.rejection();
  match.x = x;
  match.nodes = {&square, &mean};
  match.nodes.insert(match.nodes.end(), match.tail.nodes.begin(), match.tail.nodes.end());
  return match;
}

/// Replaces the RMSNorm `square` and `mean` start by one RMSNormalization.
MatchStatus fuseRmsNorm(Graph &graph, Node &mean, Node &square,
                        std::unordered_set<const Node *> &erased) {
  MatchResult<RmsNormMatch> match = matchRmsNorm(graph, mean, square);
  if (!match)
    return match.rejection();
  return fuseNormalization(graph, OpKind::RMSNormalization, match->x, match->tail, match->nodes,
                           erased);
}

class FuseRmsNorm : public Pass {
public:
  std::string_view name() const override { return "fuse-rmsnorm"; }
  std::string_view description() const override {
    return "replace the decomposed RMSNorm (Pow, ReduceMean, Add, Sqrt, Div, Mul) by one "
           "RMSNormalization op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    std::unordered_set<const Node *> erased;
    bool changed = false;
    for (Node *mean : graph.nodeList()) {
      if (erased.count(mean) || mean->kind() != OpKind::ReduceMean)
        continue;
      Node *square = squareFeeding(*mean);
      if (!square)
        continue;
      if (MatchStatus fused = fuseRmsNorm(graph, *mean, *square, erased); !fused) {
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

std::unique_ptr<Pass> createFuseRmsNormPass() { return std::make_unique<FuseRmsNorm>(); }

} // namespace onnxc
