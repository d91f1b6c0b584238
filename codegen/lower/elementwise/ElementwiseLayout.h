//===- codegen/lower/elementwise/ElementwiseLayout.h - Index space of an elementwise kernel -===//
//
// An elementwise kernel walks its result (always contiguous) and reads each
// operand under numpy broadcasting. At compile time, from the shapes alone:
//
//   result [batch, seq, 768] + bias [768] + mask [batch, 1, 1]
//
// each result axis is classified per operand as Full (the operand has the
// axis), Broadcast (the operand's dim is 1 or absent: stride 0) or Runtime
// (a symbolic operand dim that may be 1 at run time: the stride is chosen
// when the kernel runs). Result axes of extent 1 are dropped, and
// neighbouring axes that every operand classifies alike merge into one
// (their extents multiply), so the example becomes two axes,
// [batch, seq*768], with the bias Broadcast then Full and the mask Full then
// Broadcast. Along the innermost axis an operand is then read contiguously
// (Full, stride 1), as one value for the whole row (Broadcast), or strided.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/shape/Dim.h"
#include "ir/shape/Shape.h"

#include <optional>
#include <vector>

namespace onnxc::lower {

/// An operand's stride (in elements) along one axis of the iteration space.
struct LayoutStride {
  Dim stride = Dim(0);
  /// When set, the stride is 0 whenever this (operand) dim is 1 at run time.
  std::optional<Dim> zeroWhenOne;
};

/// How an operand is read along the innermost axis.
enum class InnerAccess { Contiguous, Splat, Strided };

struct OperandLayout {
  /// One per axis of the iteration space.
  std::vector<LayoutStride> strides;
  InnerAccess inner = InnerAccess::Splat;
};

/// The axes an elementwise kernel loops over and how each operand is read.
struct IterationSpace {
  /// Extents of the merged axes, outermost first; at least one axis.
  std::vector<Dim> extents;
  /// In the order of the shapes given to planIterationSpace.
  std::vector<OperandLayout> operands;
};

/// Whether every dim of `shape` is the constant 1 (a one-element tensor).
bool isSingleElementShape(const Shape &shape);

/// The iteration space of a result of shape `result` reading operands of
/// `operandShapes`, each broadcastable to it (a one-element operand of any
/// rank reads its only element). Throws onnxc::Error for an operand of
/// higher rank than the result.
IterationSpace planIterationSpace(const Shape &result, const std::vector<Shape> &operandShapes);

} // namespace onnxc::lower
