//===- codegen/lower/ShapeAssumptions.h - Run-time checks of unproven dims ===//
//
// Shape inference lets a symbol stand where a constant is needed when the
// two could agree: n against 3 in a broadcast ("n is 1 or 3"), a MatMul
// whose contraction dims are n and 3 ("n is 3"). The compiled kernels are
// then written for the constant; a model run with another n would read
// the wrong elements or past a buffer. A lowering lists such dims here, and
// a one-task step before its own fails the run when one does not hold for
// the bound symbols, as the evaluator refuses the shapes.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <string>
#include <vector>

namespace onnxc::lower {

/// `actual` must equal `expected` at run time (or be 1, with `orOne`).
struct DimAssumption {
  Dim actual;
  Dim expected;
  bool orOne = false;
};

/// Emits the check step for the assumptions of `node` that are not proven
/// (nothing when all are). A failing run reads "step '<node>': <message>".
void checkDimAssumptions(LoweringContext &ctx, const Node &node,
                         const std::vector<DimAssumption> &assumptions, const std::string &message);

} // namespace onnxc::lower
