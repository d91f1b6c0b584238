//===- codegen/lower/controlflow/LoopIterationEnd.h - Where a body's outputs go -===//
//
// At the end of an iteration each body output becomes the next iteration's
// input (a carried value, the Loop's condition) or a row of a stacked scan
// output. Three ways, cheapest first:
//
//   in place  the buffer the body computes a carried value into becomes
//             the state buffer itself, when every read of the old value
//             comes before the first write of the new one (no copy);
//   window    the buffer of a scan output's row becomes a pointer into the
//             stacked result at row i (LoopSteps.h's applyWindows);
//   copy      a copy step (a strided one into a stacked result), through a
//             temporary when two carried values trade places.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/controlflow/LoopSteps.h"

#include <set>
#include <string>
#include <vector>

namespace onnxc::lower {

/// One output of the body and where it goes.
struct BodyOutput {
  const Value *value = nullptr;
  /// Carried: the buffer the next iteration reads it from (-1 otherwise).
  int32_t state = -1;
  /// Scan output: the result buffer it is stacked into (-1 otherwise).
  int32_t stacked = -1;
  StackLayout layout;
  /// For step names: "carry 'h'", "stack 'ys'".
  std::string what;
  // Neither: nothing to do (a Loop's condition that stays true).
};

/// Emits the end of an iteration whose body steps start at `bodyFirst` and
/// were lowered in `inner`. `outputTemps` are the buffers the loop's
/// lowering gave the body's computed outputs (only the body names them).
/// Returns the windows of scan outputs written in place; the caller applies
/// them to the whole iteration once the back-edge is known.
std::vector<SliceWindow> finishIteration(LoweringContext &ctx, LoweringContext &inner,
                                         const std::vector<BodyOutput> &outputs,
                                         const std::set<int32_t> &outputTemps, size_t bodyFirst,
                                         int32_t iteration);

/// Makes every buffer that must outlive one iteration (a value read by
/// every iteration or carried through them: named by the steps in
/// (entry, backEdge), made before the body's own buffers `bodyBuffersStart`,
/// not in `iterationLocal`) live from the entry to the back-edge, so that
/// the arena never gives its bytes to a buffer of the body.
void keepAliveAcrossIterations(LoweringContext &ctx, size_t entry, size_t backEdge,
                               int32_t bodyBuffersStart, const std::set<int32_t> &iterationLocal);

} // namespace onnxc::lower
