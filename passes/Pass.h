//===- passes/Pass.h - The pass interface and its per-run context ---------===//
//
// A pass rewrites a Graph in place and says whether it changed anything.
// What it did is counted in a PassContext ("fold-constants: 12 folded"), and
// why a candidate was left alone goes to the context's explain sink, which
// `onnxc dump --explain` prints: fusions that silently stop matching after an
// exporter changes are the most common complaint about graph compilers.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <utility>
#include <vector>

namespace onnxc {

/// Statistics and explanations of one pass, accumulated over all the times it
/// runs in a pipeline (a fixed-point group runs a pass several times).
class PassContext {
public:
  explicit PassContext(std::string passName = "", bool explaining = false)
      : passName_(std::move(passName)), explaining_(explaining) {}

  const std::string &passName() const { return passName_; }

  /// Adds `amount` to the named counter, creating it (so `count(name, 0)`
  /// declares a counter that is printed even when it stays zero). Counters
  /// print in the order they were first touched.
  void count(std::string_view counter, int64_t amount = 1);
  /// The value of a counter (0 if never touched).
  int64_t counter(std::string_view counter) const;
  const std::vector<std::pair<std::string, int64_t>> &counters() const { return counters_; }

  /// Whether explanations are being collected; lets passes skip building
  /// messages nobody reads.
  bool explaining() const { return explaining_; }
  /// Records why `node` was not rewritten (only when explaining; repeats of
  /// the same message are dropped).
  void explain(const Node &node, std::string_view reason);
  /// Records a free-form explanation (only when explaining).
  void explain(std::string message);
  /// Counts a rejected candidate under "rejected", tallies `reason` for the
  /// statistics line and records an explanation naming the node. Keep
  /// `reason` free of node names so that equal reasons tally together.
  void reject(const Node &node, std::string_view reason);

  const std::vector<std::string> &explanations() const { return explanations_; }
  /// Rejection reasons with how often each occurred, in first-seen order.
  const std::vector<std::pair<std::string, int64_t>> &rejectReasons() const {
    return rejectReasons_;
  }

  /// "fold-constants: 12 folded, 1 skipped (too large)"; rejections append
  /// their reasons: "fuse-x: 2 matched, 1 rejected (1 mask is not constant)".
  std::string statisticsLine() const;

private:
  std::string passName_;
  bool explaining_;
  std::vector<std::pair<std::string, int64_t>> counters_;
  std::vector<std::pair<std::string, int64_t>> rejectReasons_;
  std::vector<std::string> explanations_;
  // Passes that run repeatedly meet the same rejected candidate each round.
  std::unordered_set<std::string> explained_;
};

/// A graph-to-graph transformation with a registered name.
class Pass {
public:
  virtual ~Pass() = default;
  /// The name used by --passes= and --print-ir-after= ("fold-constants").
  virtual std::string_view name() const = 0;
  /// One line for `onnxc --help`.
  virtual std::string_view description() const = 0;
  /// Rewrites `graph`; returns true if it changed anything.
  virtual bool run(Graph &graph, PassContext &context) = 0;
};

using PassFactory = std::unique_ptr<Pass> (*)();

// Factories of the built-in passes (one file each). PassRegistry.cpp lists them.
std::unique_ptr<Pass> createDeadCodeEliminationPass();
std::unique_ptr<Pass> createFoldConstantsPass();
std::unique_ptr<Pass> createInlineConstantIfPass();
std::unique_ptr<Pass> createFoldChannelAffinePass();
std::unique_ptr<Pass> createCommonSubexpressionEliminationPass();
std::unique_ptr<Pass> createRemoveIdentityPass();
std::unique_ptr<Pass> createSimplifyCastsPass();
std::unique_ptr<Pass> createWidenHalfPrecisionPass();
std::unique_ptr<Pass> createSimplifyShapesPass();
std::unique_ptr<Pass> createSimplifyTransposesPass();
std::unique_ptr<Pass> createFuseGeluPass();
std::unique_ptr<Pass> createFuseLayerNormPass();
std::unique_ptr<Pass> createFuseRmsNormPass();
std::unique_ptr<Pass> createFuseSkipLayerNormPass();
std::unique_ptr<Pass> createFuseDynamicQuantizedMatMulPass();
std::unique_ptr<Pass> createFuseStaticQuantizedMatMulPass();
std::unique_ptr<Pass> createFuseBlockQuantizedMatMulPass();
std::unique_ptr<Pass> createFuseStaticQuantizedConvPass();
std::unique_ptr<Pass> createSinkDequantizePass();
std::unique_ptr<Pass> createExpandFakeQuantizePass();
std::unique_ptr<Pass> createLiftBatchedHeadsPass();
std::unique_ptr<Pass> createSplitPackedQkvPass();
std::unique_ptr<Pass> createBatchFirstHeadsPass();
std::unique_ptr<Pass> createGroupRepeatedKvPass();
std::unique_ptr<Pass> createGroupAttentionKvPass();
std::unique_ptr<Pass> createExpandXSoftmaxPass();
std::unique_ptr<Pass> createFuseAttentionPass();
std::unique_ptr<Pass> createFoldSeqFirstAttentionPass();
std::unique_ptr<Pass> createFuseAdditiveAttentionPass();

} // namespace onnxc
