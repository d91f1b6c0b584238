//===- passes/attention/masks/MaskDistance.h - A mask element as a function of i - j ---===//
//
// Steps 3 to 5 of MaskProof.h: an element expression whose integer leaves
// are c*(i - j) + k (variable 0 is i, variable 1 is j) and whose tables are
// series in d = i - j is a function F(d). DistanceFunction checks that every
// integer node fits its dtype for |d| < 2^31, finds a horizon past which
// every node is affine (integers) or constant (the rest) in d on each side,
// and evaluates F at any d exactly as the graph computes it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/attention/masks/MaskExpr.h"

#include <cstdint>
#include <vector>

namespace onnxc::mask {

/// The variables the proof binds: query position i, key position j, and
/// the leading (batch, head) axes from kFirstLeadingVariable on.
constexpr int kQueryVariable = 0;
constexpr int kKeyVariable = 1;
constexpr int kFirstLeadingVariable = 2;

/// Positions are below this: at 2^31 the scores alone would hold 2^62
/// elements, more than any machine can allocate.
constexpr int64_t kMaxDistance = (int64_t(1) << 31) - 1;

/// One value of F: undefined where the original graph reads past a stored
/// table (it fails there), otherwise the number (bools as 0/1).
struct DistanceValue {
  bool defined = true;
  double number = 0;
  int64_t integer = 0; // integer dtypes
};

class DistanceFunction {
public:
  /// Checks ranges and finds the horizon; throws NotProvable.
  explicit DistanceFunction(const ExprPtr &root);

  /// F(d) equals F(horizon) for every d >= horizon and F(-horizon) for
  /// every d <= -horizon.
  int64_t horizon() const { return horizon_; }
  DistanceValue at(int64_t d) const;

private:
  void checkRanges();
  int64_t tailBound(int side);

  std::vector<const Expr *> order_;         // operands before users
  std::vector<std::vector<size_t>> inputs_; // operand slots of each node
  int64_t horizon_ = 0;
  mutable std::vector<DistanceValue> values_;
};

} // namespace onnxc::mask
