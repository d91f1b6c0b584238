//===- passes/attention/FuseAdditiveAttentionMatch.h - fuse-additive-attention's pattern ---===//
//
// What fuse-additive-attention's matcher (FuseAdditiveAttentionMatch.cpp)
// finds around a 3-D Softmax, for its rewrite (FuseAdditiveAttention.cpp,
// whose opening comment draws the patterns). Internal to the pass.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "passes/MatchSupport.h"

namespace onnxc::additive {

using match::MatchResult;
using match::MatchStatus;
using match::Rejection;

/// The one mask between the scores and Softmax.
struct MaskTerm {
  Value *mask = nullptr;
  bool additive = false;
  bool hiddenWhereTrue = false; // Where(%m, fill, %s): %m marks hidden keys
  double fill = 0;              // Where forms only
};

/// What sits between the score source and the value MatMul. The scores
/// before the mask are scale * source + shift.
struct ScoreChain {
  Node *softmax = nullptr, *output = nullptr;
  Value *source = nullptr;
  double scale = 1, shift = 0;
  MaskTerm mask;
};

/// The additive core under the scores.
struct AdditiveCore {
  Value *query = nullptr, *key = nullptr; // [b, Sq, 1, d] and [b, 1, Sk, d]
  Value *bias = nullptr;                  // added inside the tanh, or null
  Value *score = nullptr;                 // [d] or [d, 1]
};

/// Walks back from Softmax over the mask, scales and shifts.
MatchResult<ScoreChain> matchScoreChain(const Graph &graph, Node &softmax);

/// Below the (3-D) score source: the tanh of the broadcast sum, reduced by
/// w. Folds Linear(d, 1)'s bias, under a squeeze, into `chain`.
MatchResult<AdditiveCore> matchAdditiveCore(const Graph &graph, ScoreChain &chain);

/// The mask as an operand of the fused op: dims 1 or the scores' own (the
/// fused op broadcasts no other way).
MatchStatus checkMaskShape(const MaskTerm &mask, const Shape &scores);

} // namespace onnxc::additive
