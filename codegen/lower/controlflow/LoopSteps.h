//===- codegen/lower/controlflow/LoopSteps.h - The steps a compiled loop adds -===//
//
// A Loop or Scan runs its body's steps again and again inside the one flat
// step list (LoopLowering.cpp), with two branch steps (model_abi.h's
// ONNXC_STEP_BRANCH) around them:
//
//   step e    enter      i = 0, cond = initial; no iteration to run -> b+1
//   step e+1  body ...   slices of scan inputs: windows or unstack copies
//   ...       end of the iteration: carried values, stacked scan outputs
//   step b    back-edge  i += 1; another iteration -> e+1
//
// The iteration number and the condition are scalars in plan buffers the
// body reads as its inputs. A slice of a stacked tensor (a scan input's
// slice, a scan output's row) is either a window, a pointer into the
// stacked tensor that moves with i, or a strided copy per iteration.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <optional>
#include <vector>

namespace onnxc::lower {

/// The scalars that decide whether another iteration runs.
struct LoopControl {
  /// i64 buffer of the iteration number (the body's iter_num input).
  int32_t iteration = -1;
  /// bool buffer of the Loop's condition (the body's cond input and what
  /// its cond output is carried into); -1 for Scan.
  int32_t condition = -1;
  /// The Loop's M and cond operands' buffers; -1 when absent.
  int32_t tripCountOperand = -1;
  int32_t conditionOperand = -1;
  /// Scan: the number of iterations. Loop with scan outputs: the number
  /// they were sized for, which the entry checks M against.
  std::optional<Dim> length;
  /// Scan: the other scan inputs' lengths, checked equal to `length`.
  std::vector<Dim> otherLengths;
};

/// Appends the entry branch of `node`'s loop; returns its step index. Its
/// target (the step after the back-edge) is set by addLoopBackEdge.
size_t addLoopEntry(LoweringContext &ctx, const Node &node, const LoopControl &control);

/// A step failing the run unless `value` (an If or Loop condition, a trip
/// count) holds one element, which is all the compiled code reads; none
/// when its shape proves it. Inputs were checked at binding already: this
/// covers counts computed inside the model.
void addOneElementCheck(LoweringContext &ctx, const Node &node, const Value *value,
                        const char *what);

/// Appends the back-edge to step `entry + 1` and points the entry past it.
void addLoopBackEdge(LoweringContext &ctx, const Node &node, const LoopControl &control,
                     size_t entry);

/// How iteration i's slice sits in a tensor stacked along one axis:
/// `outer` runs of `innerBytes` bytes, `length` slices apart.
struct StackLayout {
  Dim outer = Dim(1);
  Dim length = Dim(1);
  Dim innerBytes = Dim(0);
  /// Iteration i is slice length-1-i.
  bool reversed = false;

  /// A slice is one contiguous run (outer is 1): a window can point at it.
  bool contiguous() const { return outer == Dim(1); }
};

/// The layout of `stacked` (the whole tensor) along `axis`.
StackLayout stackLayout(const Value *stacked, size_t axis, bool reversed);

/// Appends a step copying iteration i's slice between plan buffers
/// `stacked` and `slice` (into the slice for a scan input, out of it for a
/// scan output).
void addSliceCopy(LoweringContext &ctx, const std::string &name, int32_t stacked, int32_t slice,
                  const StackLayout &layout, int32_t iteration, bool intoStacked);

/// A buffer of the body that stands for iteration i's slice of `stacked`.
struct SliceWindow {
  int32_t placeholder = -1;
  int32_t stacked = -1;
  StackLayout layout; // contiguous()
};

/// In every step of [first, end) that names a window's placeholder, names
/// the stacked buffer instead and wraps the kernel so that it sees the
/// slice's address there: the body reads its scan input's slice, or writes
/// its scan output's row, where it lies, no copy.
void applyWindows(LoweringContext &ctx, size_t first, size_t end,
                  const std::vector<SliceWindow> &windows, int32_t iteration);

} // namespace onnxc::lower
