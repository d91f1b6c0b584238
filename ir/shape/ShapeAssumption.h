//===- ir/shape/ShapeAssumption.h - What shape inference took on trust ----------===//
//
// One compiled artifact serves every input shape, so shape inference gives
// each value one symbolic type. Some rules can only do that by relying on a
// fact about the symbols they cannot prove: a dim `seq` broadcast against 4
// must be 1 or 4, a MatMul's symbolic contraction dim must equal the
// weight's 4, a Slice of a 64-row table ending at `seq` needs seq <= 64.
// Such a rule records the fact as an assumption on the graph. The graph
// keeps every assumption (a pass that fuses the node away keeps its
// assumption too), and before anything runs the reference evaluator and the
// compiled runtime check them against the input shapes, so an input that
// breaks one gets an error naming the node, never a result computed for a
// shape the inputs do not have.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/shape/Dim.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxc {

struct ShapeAssumption {
  /// What must hold of `expr`; values equal to onnxc_assumption_kind.
  enum class Kind : int32_t { Zero = 1, NonNegative = 2 };

  Dim expr;
  Kind kind = Kind::Zero;
  /// One line naming the node and the requirement, phrased so that "...;
  /// the inputs bind seq = 5" completes it: "node 'mm': the matmul
  /// contraction dimension k must equal 4".
  std::string message;

  /// Whether it holds for the bindings; nullopt when a symbol is unbound.
  /// An overflowing evaluation does not hold.
  std::optional<bool> holds(const std::map<std::string, int64_t> &bindings) const;
  /// Whether it holds for every value of its symbols (all >= 0), as far as
  /// that can be shown from the signs of the coefficients; false is "not
  /// shown", not "violated".
  bool provable() const;
  /// Whether it fails for every value (a constant that breaks it).
  bool refuted() const;
  bool operator==(const ShapeAssumption &o) const { return expr == o.expr && kind == o.kind; }
};

/// Throws onnxc::Error when `assumptions` can never all hold: one that no
/// binding satisfies, two equalities that fix a symbol to different values,
/// or one that breaks at the value an equality fixes. (A model written with
/// such assumptions would compile into a library that refuses every input.)
/// Only these cases are found; assumptions it cannot relate pass.
void checkAssumptionsCanHold(const std::vector<ShapeAssumption> &assumptions);

} // namespace onnxc
