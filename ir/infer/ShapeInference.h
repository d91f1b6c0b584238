//===- ir/infer/ShapeInference.h - Dtype and shape inference ----------------===//
#pragma once

#include "ir/Graph.h"

#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace onnxc {

/// What inference learned besides types: the integer contents of small 0-D
/// and 1-D integer tensors, element by element, as dimensions. This is how
/// `Shape -> Gather -> Unsqueeze -> Concat -> Reshape` chains of exported
/// models resolve to symbolic shapes, and what fold-constants uses to fold
/// shape chains whose contents turn out constant.
class InferenceContext {
public:
  explicit InferenceContext(Graph &graph);

  /// Known contents of an integer tensor (constants included), or null.
  const std::vector<Dim> *knownContents(const Value *value) const;
  void setKnownContents(const Value *value, std::vector<Dim> contents);
  /// A new symbol, unique in the graph, for a dimension nothing else names
  /// (for example the length of a data-dependent Range): "hint", "hint_1", ...
  Dim freshSymbol(const std::string &hint);

  /// A fact the rule of `node` relies on but cannot prove, `expr` == 0 or
  /// >= 0 (see ir/ShapeAssumption.h); `requirement` completes "node 'x': "
  /// ("the matmul contraction dimension k must equal 4"). Throws naming the
  /// node when the fact is false for every input; records it on the graph
  /// (once the rule has succeeded) when it might fail and involves only the
  /// graph inputs' symbols, which the evaluator and runtime can check.
  void assume(const Node &node, Dim expr, ShapeAssumption::Kind kind, std::string requirement);
  /// `a` == `b`, described as "<what> <a> must equal <b>".
  void assumeEqual(const Node &node, const Dim &a, const Dim &b, const std::string &what);
  /// `a` <= `b`, described as "<what> <a> must be at most <b>".
  void assumeAtMost(const Node &node, const Dim &a, const Dim &b, const std::string &what);
  /// `a` is 1 or `c`: how a dim broadcasts against c (unidirectionally).
  void assumeBroadcastsTo(const Node &node, const Dim &a, const Dim &c, const std::string &what);
  /// Moves the assumptions of the last successful rule to the graph.
  void commitAssumptions();
  void discardAssumptions() { pending_.clear(); }

  Graph &graph() { return graph_; }

private:
  Graph &graph_;
  std::unordered_set<std::string> inputSymbols_;
  std::vector<ShapeAssumption> pending_;
  std::unordered_map<const Value *, std::vector<Dim>> contents_;
  // Every symbol named so far, and the next suffix freshSymbol tries per
  // hint: a model can ask for many fresh symbols, so this stays linear.
  std::unordered_set<std::string> usedSymbols_;
  std::unordered_map<std::string, unsigned> nextSuffix_;
};

/// Infers the dtype and shape of every node result, visiting nodes in
/// topological order. Existing types on results are replaced. Throws
/// onnxc::Error naming the node when the input types are inconsistent
/// (provably mismatched dimensions, wrong dtypes, bad attributes).
/// Returns the context holding the known integer contents.
InferenceContext inferShapes(Graph &graph);

/// Infers one node's results (its operands' types must be set).
void inferNodeShapes(Node &node, InferenceContext &context);

} // namespace onnxc
