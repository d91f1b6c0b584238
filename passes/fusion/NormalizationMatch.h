//===- passes/fusion/NormalizationMatch.h - Matching decomposed LayerNorm/RMSNorm ---===//
//
// What fuse-layernorm and fuse-rmsnorm share. Both patterns end the same way
// once the per-row statistic (the mean of squares) is known:
//
//   %v  = ReduceMean(%square, last axis)        the statistic
//   %ve = Add(%v, ε)
//   %n  = Div(%num, Sqrt(%ve))                  or Mul(%num, Reciprocal(Sqrt(%ve)))
//                                               or Mul(%num, Div(1, Sqrt(%ve)))
//                                               or Mul(%num, Pow(%ve, -0.5))
//   [%c = Cast(%n)]                             back to the input's type
//   [%s = Mul(%c, γ)]                           γ of shape [C]
//   [%y = Add(%s, β)]                           β of shape [C], LayerNorm only
//
// where %num is x - mean(x) (LayerNorm) or x itself (RMSNorm). The matcher
// records every node it walked so that the pass can erase the chain itself
// (a pass rerun before dce must not match a dead chain again).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/MatchSupport.h"

#include <optional>
#include <unordered_set>
#include <vector>

namespace onnxc::normmatch {

using match::matched;
using match::MatchResult;
using match::MatchStatus;
using match::otherOperand;
using match::provablySameShape;
using match::Rejection;
using match::scalarConstant;
using match::soleUser;

/// Whether `reduce` (a ReduceMean) averages its input over the last axis
/// only, with keepdims = 1.
bool reducesLastAxisOnly(const Node &reduce);

/// Whether `operand` is a per-channel vector for rows of `x`: rank at most
/// x's, its last dim x's last dim, every other dim 1 (so it broadcasts over
/// the rows and changes nothing else). A γ/β of rank above 1 must be a
/// constant (see channelVector).
bool isPerChannel(const Value *operand, const Shape &x);

/// The matched end of a decomposed normalization.
struct NormalizationTail {
  double epsilon = 0;
  Node *castBack = nullptr;  // the Cast after the normalization, if any
  Value *gamma = nullptr;    // null: no Mul by γ
  Value *beta = nullptr;     // null: no Add of β
  Node *root = nullptr;      // the last node: its result is the normalized output
  std::vector<Node *> nodes; // every matched node from the Add ε on, in order
};

/// Matches the tail above from `statistic` (the ReduceMean of squares) with
/// numerator `numerator`; `x` is the tensor being normalized (for the γ/β
/// shapes). Rejected with the reason the chain does not match.
MatchStatus matchNormalizationTail(const Graph &graph, const Node &statistic,
                                   const Value *numerator, const Shape &x, bool allowBeta,
                                   NormalizationTail &tail);

/// The operand the fused op reads, given the tensor `x` whose statistics the
/// chain computed (maybe a Cast to f32 of the real input) and the tail: the
/// Cast's input when the tail casts back to that input's type, else `x`.
/// Rejected when the result's type would differ from the fused input's.
MatchResult<Value *> fusedInput(Value *x, const NormalizationTail &tail);

/// `operand` (a per-channel γ or β) as a vector of shape [C]: itself when
/// it is one, else a constant sharing its data with the leading 1s dropped.
Value *channelVector(Graph &graph, Value *operand);

/// The scale of the fused op reading `input`: γ as a vector, or a ones
/// vector of the normalized extent when the chain has no γ. Rejected when
/// that extent is not a constant.
MatchResult<Value *> fusedScale(Graph &graph, const Value *input, const NormalizationTail &tail);

/// Replaces the chain's last node by `fused` (which takes over its result
/// name) and erases `chain` (the matched nodes, in program order) and the
/// input Cast `inputCast` if nothing else reads it. Erased nodes go to
/// `erased`, so that a pass walking a snapshot of the node list skips them.
void replaceChain(Graph &graph, Node *fused, const std::vector<Node *> &chain, Node *inputCast,
                  std::unordered_set<const Node *> &erased);

/// Replaces the chain `nodes`, matched on `x` and ending in `tail`, by one
/// `kind` op (LayerNormalization or RMSNormalization) over the last axis
/// with the tail's ε, γ and (if any) β: fusedInput, fusedScale, then
/// replaceChain. Rejected with why it cannot, the graph unchanged.
MatchStatus fuseNormalization(Graph &graph, OpKind kind, Value *x, const NormalizationTail &tail,
                              const std::vector<Node *> &nodes,
                              std::unordered_set<const Node *> &erased);

} // namespace onnxc::normmatch
