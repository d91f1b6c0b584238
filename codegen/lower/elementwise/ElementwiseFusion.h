//===- codegen/lower/elementwise/ElementwiseFusion.h - Elementwise chains, one kernel -===//
//
// When the driver hands over an elementwise node, the chain that follows it
//
//   t1 = Div(x, c)  ->  t2 = Erf(t1)  ->  t3 = Add(t2, one)  ->  y = Mul(t3, h)
//
// is computed by the same kernel, one element at a time in registers, when
// each link holds: the value has no use but the next node (possibly several
// operands of it) and is not a graph output; the next node is an
// elementwise op that compiles, has the same result shape as the chain
// (no recomputation under broadcasting), and its other operands are already
// available when this step runs. Absorbed nodes are claimed, so the driver
// skips them; only the last result is written to memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <string>
#include <vector>

namespace onnxc::lower {

/// The nodes of one elementwise kernel, in evaluation order; each after the
/// first consumes its predecessor's result.
struct ElementwiseGroup {
  std::vector<const Node *> nodes;
  const Value *result() const { return nodes.back()->result(0); }
  /// The step's name: the node names joined by " + ".
  std::string stepName() const;
  /// A short kernel name from the op names ("ew.div.erf.add.mul").
  std::string kernelName() const;
};

/// Longest chain one kernel computes.
constexpr size_t kMaxFusedNodes = 16;

/// The group that starts at `first` (which must compile), with every
/// absorbed node claimed in `context`.
ElementwiseGroup formElementwiseGroup(LoweringContext &context, const Node &first);

} // namespace onnxc::lower
