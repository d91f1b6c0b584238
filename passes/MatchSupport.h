//===- passes/MatchSupport.h - Small helpers of the pattern-matching passes ===//
//
// What every fusion pass asks of the graph around a candidate: is this value
// a one-element constant, who is its only user, which operand of a binary op
// is the other one; and how a matching step answers: its result, or the
// Rejection saying why the candidate is left alone.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Graph.h"
#include "passes/Pass.h"

#include <cassert>
#include <cmath>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace onnxc::match {

/// Why a pass leaves a candidate alone: a fixed reason without node names
/// (a static string), so that --stats tallies equal reasons and --explain
/// shows each with its node (PassContext::reject). A reason that names what
/// the candidate holds (an axis, a group count) is built when it is found
/// (Rejection::built) and owned by the rejection and its copies.
struct Rejection {
  explicit Rejection(const char *why) : reason(why) { assert(reason); }

  static Rejection built(std::string why) {
    auto text = std::make_shared<const std::string>(std::move(why));
    Rejection rejection(text->c_str());
    rejection.text_ = std::move(text);
    return rejection;
  }

  const char *reason;

private:
  std::shared_ptr<const std::string> text_; // owns `reason` when built
};

/// What a matching step returns: its result, or the Rejection saying why
/// the candidate is left alone. True when it matched; a caller hands a
/// rejection on with `return result.rejection();`.
template <typename T> class [[nodiscard]] MatchResult {
public:
  MatchResult(T value) : result_(std::move(value)) {}
  MatchResult(Rejection rejection) : result_(std::move(rejection)) {}

  explicit operator bool() const { return result_.index() == 0; }
  T &operator*() { return std::get<0>(result_); }
  const T &operator*() const { return std::get<0>(result_); }
  T *operator->() { return &std::get<0>(result_); }
  const T *operator->() const { return &std::get<0>(result_); }

  /// Why the candidate is left alone (only when the step did not match).
  const Rejection &rejection() const { return std::get<1>(result_); }

private:
  std::variant<T, Rejection> result_;
};

/// What a step that only checks (or fills in its caller's match) returns:
/// matched(), or the Rejection saying why not. True when it matched.
class [[nodiscard]] MatchStatus {
public:
  MatchStatus() = default;
  MatchStatus(Rejection rejection) : rejection_(std::move(rejection)) {}

  explicit operator bool() const { return !rejection_; }

  /// Why the candidate is left alone (only when the step did not match).
  const Rejection &rejection() const {
    assert(rejection_);
    return *rejection_;
  }

private:
  std::optional<Rejection> rejection_;
};

/// The status of a step that matched.
inline MatchStatus matched() { return MatchStatus(); }

/// The value of a one-element numeric (not bool) constant, if `value` is one.
inline std::optional<double> scalarConstant(const Value *value) {
  if (!value || !value->isConstant() || value->dtype() == DType::Bool)
    return std::nullopt;
  const Tensor &t = value->constantValue();
  if (!t.hasData() || t.numElements() != 1)
    return std::nullopt;
  return t.elementAsDouble(0);
}

/// Whether two one-element constants hold the same number in the same dtype
/// (a QuantizeLinear's scale and its DequantizeLinear's).
inline bool sameScalar(const Value *a, const Value *b) {
  return a && b && a->dtype() == b->dtype() && scalarConstant(a) && scalarConstant(b) &&
         *scalarConstant(a) == *scalarConstant(b);
}

/// A constant with contents, of rank <= `maxRank`, whose element count is
/// one of `allowedCounts`.
inline bool isConstantOfShape(const Value *value, const std::vector<int64_t> &allowedCounts,
                              size_t maxRank) {
  if (!value || !value->isConstant() || !value->constantValue().hasData())
    return false;
  const Shape &shape = value->shape();
  if (!shape.isRanked() || shape.rank() > maxRank)
    return false;
  int64_t count = value->constantValue().numElements();
  for (int64_t allowed : allowedCounts)
    if (count == allowed)
      return true;
  return false;
}

/// Whether a QuantizeLinear or DequantizeLinear is the per-tensor / per-axis
/// form: no block size, no explicit output type.
inline bool isPlainQuantizeOp(const Node &node) {
  return node.getInt("block_size", 0) == 0 && node.getInt("output_dtype", 0) == 0;
}

/// Whether `value` is within a relative 1e-4 of `expected`, or is
/// `expected` rounded to f16 or bf16: how a half-precision model spells the
/// constant (widen-half-precision keeps its half value, in f32).
inline bool near(std::optional<double> value, double expected) {
  if (!value)
    return false;
  float single = float(expected);
  return std::fabs(*value - expected) <= 1e-4 * std::fabs(expected) ||
         *value == double(halfToFloat(floatToHalf(single))) ||
         *value == double(bfloat16ToFloat(floatToBfloat16(single)));
}

/// For a two-operand `kind` node, the operand that is not `known` (null if
/// `known` is not an operand).
inline Value *otherOperand(const Node &node, OpKind kind, const Value *known) {
  if (node.kind() != kind || node.numOperands() != 2)
    return nullptr;
  if (node.operand(0) == known)
    return node.operand(1);
  if (node.operand(1) == known)
    return node.operand(0);
  return nullptr;
}

/// The only node reading `value`, when the value is not a graph output.
inline Node *soleUser(const Graph &graph, const Value *value) {
  if (value->numUses() != 1 || graph.isOutput(value))
    return nullptr;
  return value->uses()[0].user;
}

/// Whether two shapes have the same rank and provably equal dims.
inline bool provablySameShape(const Shape &a, const Shape &b) {
  if (!a.isRanked() || !b.isRanked() || a.rank() != b.rank())
    return false;
  for (size_t i = 0; i < a.rank(); ++i)
    if (!a[i].provablyEqual(b[i]))
      return false;
  return true;
}

/// The node defining `value` if it is of `kind`.
inline Node *definedBy(const Value *value, OpKind kind) {
  Node *node = value ? value->definingNode() : nullptr;
  return node && node->kind() == kind ? node : nullptr;
}

/// A Transpose's permutation (the reversal when the attribute is absent).
inline std::vector<int64_t> transposePerm(const Node &transpose) {
  if (transpose.hasAttr("perm"))
    return transpose.getInts("perm");
  std::vector<int64_t> perm;
  const Shape &shape = transpose.operand(0)->shape();
  for (size_t i = shape.rank(); i-- > 0;)
    perm.push_back(int64_t(i));
  return perm;
}

/// A candidate's outcome: counted under `counter` when `status` matched,
/// else rejected at `node` with its reason (for --explain and --stats).
/// Whether it matched.
inline bool tally(PassContext &context, const Node &node, const MatchStatus &status,
                  std::string_view counter) {
  if (!status) {
    context.reject(node, status.rejection().reason);
    return false;
  }
  context.count(counter);
  return true;
}

} // namespace onnxc::match
