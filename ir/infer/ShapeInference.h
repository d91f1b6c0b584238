//===- ir/infer/ShapeInference.h - Dtype and shape inference ----------------===//
#pragma once

#include "ir/Graph.h"

#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
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
  /// >= 0 (see ir/shape/ShapeAssumption.h); `requirement` completes "node 'x': "
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
  /// Two dims that must be equal but are not the same polynomial: the
  /// attention mask's own length `past_seq` broadcast against the keys'
  /// past+seq. When one is a graph input's symbol and the other an
  /// expression of the other inputs' symbols, the symbol is replaced by the
  /// expression everywhere in the graph, the inputs' types included, once
  /// the rule has succeeded: the runtime and the evaluator then bind it from
  /// the other inputs and refuse an input whose dim disagrees, naming it
  /// (which also refuses a 1 that a broadcast would have stretched, rather
  /// than computing for a shape the graph was not typed for). Returns the
  /// dim both become; nullopt when neither side can be replaced.
  std::optional<Dim> unify(const Dim &a, const Dim &b);
  /// `dim` with the symbols unified so far (and by the current rule)
  /// replaced.
  Dim resolve(const Dim &dim) const;
  /// Moves the assumptions of the last successful rule to the graph, after
  /// applying its unifications to the graph.
  void commitAssumptions();
  void discardAssumptions() {
    pending_.clear();
    pendingUnifications_.clear();
  }

  Graph &graph() { return graph_; }

private:
  Graph &graph_;
  std::unordered_set<std::string> inputSymbols_;
  std::vector<ShapeAssumption> pending_;
  /// Symbol -> what replaced it (fully resolved: no replaced symbol occurs
  /// in a replacement), committed and of the current rule.
  std::vector<std::pair<std::string, Dim>> unified_;
  std::vector<std::pair<std::string, Dim>> pendingUnifications_;
  bool canReplace(const Dim &symbol, const Dim &replacement) const;
  void applyUnification(const std::string &symbol, const Dim &replacement);
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
/// Returns the context holding the known integer contents. `knownInputs`
/// gives contents of inputs known from outside (a subgraph's captured shape
/// tensors, ir/infer/ControlFlowRules.cpp).
InferenceContext
inferShapes(Graph &graph,
            const std::vector<std::pair<const Value *, std::vector<Dim>>> &knownInputs = {});

/// Infers one node's results (its operands' types must be set).
void inferNodeShapes(Node &node, InferenceContext &context);

} // namespace onnxc
