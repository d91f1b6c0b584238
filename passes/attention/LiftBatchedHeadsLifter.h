//===- passes/attention/LiftBatchedHeadsLifter.h - lift-batched-heads' matcher and rewriter ---===//
//
// What lift-batched-heads shares between the files it is split into, one
// step each: reading the folded operands (LiftBatchedHeadsOperands.cpp),
// matching the folded core (LiftBatchedHeadsMatch.cpp) and rewriting it
// into 4-D (LiftBatchedHeadsRewrite.cpp); the pass itself and the picture of
// what it matches are in LiftBatchedHeads.cpp. Internal to the pass.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/infer/ShapeInference.h"
#include "passes/MatchSupport.h"

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace onnxc::lift {

using match::MatchResult;
using match::MatchStatus;
using match::Rejection;

/// Whether `value` is ranked with rank `rank`.
inline bool hasRank(const Value *value, size_t rank) {
  return value->shape().isRanked() && value->shape().rank() == rank;
}

/// Whether `node` is a Transpose by exactly `perm`.
bool isPerm(const Node *node, const std::vector<int64_t> &perm);

/// A scalar Mul/Div on a folded operand: reapplied to the lifted one.
struct ScalarStep {
  OpKind kind;
  Value *constant;
  bool constantFirst;
};

/// How one folded operand [b*h, S, d] is read in 4-D.
struct FoldedOperand {
  enum Form { Split4d, SeqFirstProjection } form;
  Value *source = nullptr; // the [b, h, S, d] tensor, or the [S, b, h*d] projection
  int64_t heads = 0, size = 0;
  std::vector<ScalarStep> scales; // outermost first
};

/// Peels scalar Mul/Div steps off `value` into `steps` (outermost first).
Value *peelScalarSteps(Value *value, std::vector<ScalarStep> &steps);

/// The projection P [S, b, h*d] of `merged` = Reshape(P) -> [S, b*h, d].
std::optional<FoldedOperand> seqFirstKeys(Value *merged);

/// The 4-D reading of `folded` [b*h, S, d], if the plumbing says it.
std::optional<FoldedOperand> foldedOperand(Value *folded);

/// The number of heads a Reshape between [b*h, A, B] and [b, h, A, B] (either
/// way) splits off, when its shapes say so.
std::optional<int64_t> reshapeFoldsHeads(const Node &reshape);

/// Which operand of `node` carries `probs` when `node` is Where(c, 0, probs)
/// or Where(c, probs, 0): probabilities zeroed where c says (XSoftmax).
std::optional<size_t> zeroedProbabilities(const Node &node, const Value *probs);

/// The one user of `value` other than Shape nodes (DeBERTa measures its
/// probabilities to fold them back), or null.
Node *soleUserButShapes(const Graph &graph, const Value *value);

/// A 4-D Softmax whose probabilities (zeroed or not) are folded back to
/// [b*h, Sq, Sk] for a 3-D value MatMul: the Reshape that folds them.
/// The zeroing Wheres on the way are appended to `zeroing` when given.
Node *foldAfterSoftmax(const Graph &graph, Node &softmax, std::vector<Node *> *zeroing);

/// One link of the chain from the score MatMul to Softmax.
struct ChainLink {
  Node *node;
  size_t scoreOperand; // which operand carries the scores (elementwise links)
};

/// One candidate, anchored at its Softmax: matched, then rewritten into
/// 4-D; either step may refuse it with a Rejection, after which the graph
/// is as before.
class Lifter {
public:
  Lifter(Graph &graph, Node &softmax) : graph_(graph), softmax_(softmax), inference_(graph) {}

  MatchStatus run() {
    if (MatchStatus status = match(); !status)
      return status;
    insertBefore_ = output_;
    return rewrite();
  }

private:
  Graph &graph_;
  Node &softmax_;
  Node *scores_ = nullptr, *output_ = nullptr;
  std::vector<ChainLink> chain_; // from the score MatMul's user up to Softmax's producer
  std::vector<Node *> zeroing_;  // Where(hidden, 0, p) links after a 4-D Softmax (DeBERTa)
  struct Remeasured {
    Node *reader;
    size_t index;
    Value *old;
  };
  std::vector<Remeasured> remeasured_; // Shape readers moved to lifted values
  // Shape readers of the folded result and what replaces each once lifted.
  std::vector<std::pair<Node *, Value *>> remeasuredFolded_;
  std::optional<FoldedOperand> q_, k_, v_;
  int64_t heads_ = 0;
  std::vector<Node *> created_;
  Node *insertBefore_ = nullptr; // where created nodes go: before the value MatMul
  // One context for every created node, so that the contents of the Shape
  // and Concat computing a Reshape target reach the Reshape's rule.
  InferenceContext inference_;

  // Matching (LiftBatchedHeadsMatch.cpp).
  MatchStatus match();
  MatchResult<std::optional<int64_t>> matchValueProduct();
  MatchStatus matchScoreChain(std::optional<int64_t> &foldedHeads);
  MatchStatus matchOperands(std::optional<int64_t> foldedHeads);
  static MatchResult<size_t> scoreOperand(const Node &node, size_t a, size_t b);

  // Rewriting (LiftBatchedHeadsRewrite.cpp).
  Node *create(OpKind kind, const std::vector<Value *> &operands, const std::string &name,
               const std::vector<std::pair<std::string, Attribute>> &attributes = {});
  Value *constantI64(const std::string &base, std::vector<int64_t> values);
  Value *liftGeneric(Value *folded, const std::string &name);
  Value *lift(const FoldedOperand &op, const std::string &name);
  MatchResult<Value *> liftSide(Value *side, const Dim &foldedBatch, const std::string &name);
  MatchStatus rewrite();
  MatchStatus liftCore(const std::string &base);
  MatchResult<Value *> liftChain(Value *scores, const std::string &base);
  MatchResult<Value *> liftProbabilities(Value *scores);
  MatchResult<Value *> foldResult(Value *o4, const std::string &base);
  MatchStatus replaceOutput(Value *o4, Value *o3, const std::string &base);
  MatchStatus remeasureFolded(Value *folded, Value *o4, const std::string &base);
  MatchStatus measureInstead(Value *old, Value *lifted);
  void mergeSequenceFirst(Value *o4, Value *o3, const std::string &base);
  void rollBack(size_t assumptionsBefore);
};

} // namespace onnxc::lift
