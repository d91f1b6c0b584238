//===- codegen/lower/controlflow/LoopLowering.h - Loop and Scan in codegen ===//
//
// Internal to codegen/lower: the lowerings of Loop and Scan (LoopLowering.cpp)
// and the check that runs before any lowering, so that a loop codegen cannot
// compile is refused in one line naming it before a step is emitted.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <set>
#include <string>

namespace onnxc::lower {

/// Throws naming the Loop or Scan `node` when codegen cannot compile it: body
/// ops without a kernel, a loop-carried value whose shape changes between
/// iterations, values whose size does not follow from `bound`, scan outputs
/// of a Loop whose number of iterations is only known once it has run.
void checkLoop(const Node &node, const std::set<std::string> &bound);

void lowerLoop(LoweringContext &ctx, const Node &node);
void lowerScan(LoweringContext &ctx, const Node &node);

} // namespace onnxc::lower
