//===- ir/infer/SliceRules.cpp - Slice's shape rule ----------------------===//
//
// Part of the data movement family (MovementRules.cpp registers it). Slice's
// bounds are read through the known contents of InferenceContext; a length
// that ONNX's clamping makes inexpressible gets a fresh symbol, and bounds
// that must lie in range become run-time assumptions.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"
#include "ir/infer/KnownContents.h"

#include <algorithm>

namespace onnxc {
namespace {

// Ends at least this large mean "to the end" (exporters write INT64_MAX,
// some INT32_MAX).
constexpr int64_t kHugeIndex = 2147483647;

// --- Slice --------------------------------------------------------------------

/// Whether `bound` is minus a sum of sizes (-seq, -seq-1): every coefficient
/// negative, so the bound is below 0 whenever a symbol is positive.
bool isNegatedSize(const Dim &bound) {
  if (bound.isUnknown() || bound.terms().empty())
    return false;
  for (const auto &[monomial, coefficient] : bound.terms())
    if (coefficient >= 0)
      return false;
  return true;
}

/// The length of slice [start, end) by `step` of a dimension, symbolically.
/// ONNX clamps the bounds to the dimension, which no Dim can express for a
/// symbolic bound; the length is then the unclamped one, and the bounds
/// being in range is an assumption the run-time checks (a Slice of a stored
/// 1024-row table ending at `seq` needs seq <= 1024).
Dim slicedLength(const Node &node, InferenceContext &context, const Dim &dim, const Dim &start,
                 const Dim &end, const Dim &step) {
  std::optional<int64_t> stepValue = step.constant();
  if (stepValue && *stepValue == 0)
    fail(node.describe(), ": slice step is 0");
  std::optional<int64_t> d = dim.constant(), s = start.constant(), e = end.constant();
  if (d && s && e && stepValue)
    return Dim(resolveSliceBounds(*s, *e, *stepValue, *d).length);
  if (!stepValue || *stepValue < 0 || start.isUnknown() || end.isUnknown() || dim.isUnknown())
    return context.freshSymbol("slice");
  Dim first = start, last = end;
  if (s && *s < 0)
    first = *s <= -kHugeIndex ? Dim(0) : dim + start;
  else if (s && d)
    first = Dim(std::min(*s, *d));
  else if (!s && isNegatedSize(start)) {
    // Minus a size counts from the end (HF T5's position_bias[:, :, -seq:]
    // with a KV cache) while the size is positive; at 0 it would be the
    // start, so the run time checks that it is not.
    context.assume(node, -start - Dim(1), ShapeAssumption::Kind::NonNegative,
                   "the slice start " + start.str() + " must be negative");
    first = dim + start;
  }
  if (e && *e >= kHugeIndex)
    last = dim;
  else if (e && *e <= -kHugeIndex)
    return Dim(0);
  else if (e && *e < 0)
    last = dim + end;
  else if (e && d)
    last = Dim(std::min(*e, *d));
  else if (e)
    return context.freshSymbol("slice"); // min(dim, end) is not expressible
  if (std::optional<int64_t> f = first.constant(), l = last.constant(); f && l && *f >= *l)
    return Dim(0);
  context.assume(node, first, ShapeAssumption::Kind::NonNegative,
                 "the slice start " + first.str() + " must not be negative");
  context.assumeAtMost(node, last, dim, "the slice end");
  context.assumeAtMost(node, first, last, "the slice start");
  Dim length = last - first;
  if (*stepValue != 1) {
    std::optional<Dim> quotient = length.divideExactly(step);
    if (!quotient)
      return context.freshSymbol("slice");
    length = *quotient;
  }
  if (std::optional<int64_t> c = length.constant(); c && *c < 0)
    return Dim(0);
  return length;
}

void inferSlice(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *startsValue = requireIndexOperand(node, 1, "starts");
  const Value *endsValue = requireIndexOperand(node, 2, "ends");
  if (node.hasOperand(3))
    requireIndexOperand(node, 3, "axes");
  if (node.hasOperand(4))
    requireIndexOperand(node, 4, "steps");
  if (!data->shape().isRanked()) {
    setResult(node, 0, data->dtype(), Shape());
    return;
  }
  const Shape &input = data->shape();
  int64_t rank = int64_t(input.rank());
  std::optional<std::vector<Dim>> starts = contentsOrUnknowns(context, startsValue);
  std::optional<std::vector<Dim>> ends = contentsOrUnknowns(context, endsValue);
  std::optional<std::vector<int64_t>> axes;
  if (node.hasOperand(3))
    axes = constantContents(context, node.operand(3));
  else if (starts)
    for (axes.emplace(); axes->size() < starts->size();)
      axes->push_back(int64_t(axes->size()));
  if (!starts || !ends || !axes) {
    // Which axes are sliced, or by how much, is unknown: all may change.
    setResult(node, 0, data->dtype(), Shape(freshDims(context, input.rank(), "slice")));
    return;
  }
  std::vector<Dim> steps(starts->size(), Dim(1));
  if (node.hasOperand(4))
    if (std::optional<std::vector<Dim>> given = contentsOrUnknowns(context, node.operand(4)))
      steps = *given;
  if (ends->size() != starts->size() || axes->size() != starts->size() ||
      steps.size() != starts->size())
    fail(node.describe(), ": starts, ends, axes and steps have different lengths");
  std::vector<Dim> dims = input.dims();
  std::vector<bool> sliced(input.rank(), false);
  for (size_t i = 0; i < axes->size(); ++i) {
    size_t axis = size_t(normalizeAxisOrFail(node, (*axes)[i], rank));
    if (sliced[axis])
      fail(node.describe(), ": axis ", (*axes)[i], " is sliced twice");
    sliced[axis] = true;
    dims[axis] = slicedLength(node, context, input[axis], (*starts)[i], (*ends)[i], steps[i]);
  }
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

} // namespace

void registerSliceShapeRules(ShapeRuleTable &table) { table.add(OpKind::Slice, inferSlice); }

} // namespace onnxc
