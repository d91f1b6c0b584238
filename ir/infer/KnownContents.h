//===- ir/infer/KnownContents.h - Contents of small integer tensors ---------===//
//
// Exported models compute shapes at run time (Shape -> Gather -> Concat ->
// Reshape). Shape inference follows those chains by tracking the contents of
// small 0-D and 1-D integer (and bool) tensors element by element as Dims:
// an element may be a constant, a symbolic expression such as `seq`, or
// unknown. Rules read contents through InferenceContext::knownContents().
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/infer/ShapeInference.h"

#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace onnxc {

/// Tensors with more elements than this never get known contents.
constexpr int64_t kMaxKnownElements = 64;

/// True for the dtypes whose contents are tracked (integers and bool).
bool hasTrackableDType(DType type);

/// The contents of a tensor with data, of trackable dtype, rank <= 1 and at
/// most kMaxKnownElements elements; nullopt otherwise.
std::optional<std::vector<Dim>> contentsOfTensor(const Tensor &tensor);

/// The tensor a value is known to hold without evaluation: a graph constant
/// with data, or the result of a Constant node; null otherwise.
const Tensor *constantTensorOf(const Value *value);

/// The known contents of `value` when every element is a constant.
std::optional<std::vector<int64_t>> constantContents(const InferenceContext &context,
                                                     const Value *value);

/// The elements of a rank-0 or rank-1 integer operand as Dims: its known
/// contents, or (when only its length is known) that many unknown Dims.
/// nullopt when not even the length is known.
std::optional<std::vector<Dim>> contentsOrUnknowns(const InferenceContext &context,
                                                   const Value *value);

/// The static length of a rank-0 (1) or rank-1 value; nullopt otherwise.
std::optional<int64_t> staticLength(const Value *value);

/// ONNX slice bounds on one axis of constant length `dim`: negative starts
/// and ends count from the back, then both are clamped (differently for
/// negative steps). `step` must be nonzero.
struct SliceBounds {
  int64_t start;
  int64_t step;
  int64_t length;
};
SliceBounds resolveSliceBounds(int64_t start, int64_t end, int64_t step, int64_t dim);

/// The [first, last) range of dimensions a Shape node returns for an operand
/// of rank `rank` (opset 15 `start`/`end`: negative counts from the back,
/// then clamped to [0, rank]).
std::pair<int64_t, int64_t> shapeOpRange(const Node &node, int64_t rank);

/// Computes the known contents of the node's results from its operands'
/// contents. Runs after the node's shape rule, and only for results of
/// trackable dtype with a static shape of rank <= 1.
void propagateKnownContents(const Node &node, InferenceContext &context);

} // namespace onnxc
