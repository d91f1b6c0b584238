//===- ir/infer/ScatterGatherRules.cpp - GatherElements, ScatterND, TensorScatter ===//
//
// GatherElements has the shape of its indices, ScatterND and TensorScatter
// the shape of their data. What the rules check is the relation between the operands: equal
// ranks and indices no larger than the data (GatherElements), updates of
// shape indices[:-1] + data[k:] (ScatterND), and, when the indices are
// constants, that every index is in range, so a bad model fails at import
// naming the node rather than at the first run. TensorScatter's update
// matches the cache off the axis and is no longer on it; the write indices
// are one per batch row (axis 0, which therefore cannot be the axis).
//
//===----------------------------------------------------------------------===//
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"
#include "ir/infer/KnownContents.h"

namespace onnxc {

namespace {

const Value *requireIndices(const Node &node, size_t i) {
  const Value *indices = requireNamedOperand(node, i, "indices");
  if (indices->dtype() != DType::Unknown && !isInteger(indices->dtype()))
    fail(node.describe(), ": indices must be an integer tensor, not ", dtypeName(indices->dtype()));
  return indices;
}

/// `a` must equal `b`: an error when both are constants that differ, a
/// recorded assumption when either is symbolic.
void requireEqualDims(InferenceContext &context, const Node &node, const Dim &a, const Dim &b,
                      const std::string &what) {
  if (a.isUnknown() || b.isUnknown() || a == b)
    return;
  if (a.isConstant() && b.isConstant())
    fail(node.describe(), ": ", what, " is ", a.str(), " but must be ", b.str());
  context.assumeEqual(node, a, b, what);
}

/// `a` must be at most `b`, as requireEqualDims.
void requireAtMostDim(InferenceContext &context, const Node &node, const Dim &a, const Dim &b,
                      const std::string &what) {
  if (a.isUnknown() || b.isUnknown() || a == b)
    return;
  if (a.isConstant() && b.isConstant()) {
    if (*a.constant() > *b.constant())
      fail(node.describe(), ": ", what, " is ", a.str(), " but must be at most ", b.str());
    return;
  }
  context.assumeAtMost(node, a, b, what);
}

void inferGatherElements(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *indices = requireIndices(node, 1);
  const Shape &input = data->shape(), &index = indices->shape();
  if (!input.isRanked() || !index.isRanked()) {
    setResult(node, 0, data->dtype(), index.isRanked() ? index : Shape());
    return;
  }
  if (input.rank() == 0)
    fail(node.describe(), ": GatherElements needs data of rank at least 1");
  if (input.rank() != index.rank())
    fail(node.describe(), ": indices have rank ", index.rank(), " but data has rank ", input.rank(),
         " (they must be equal)");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(input.rank())));
  // Off the axis, an index position is also a data position (onnxruntime
  // refuses larger indices the same way).
  for (size_t i = 0; i < input.rank(); ++i)
    if (i != axis)
      requireAtMostDim(context, node, index[i], input[i],
                       "dimension " + std::to_string(i) + " of the indices");
  std::optional<int64_t> size = input[axis].constant();
  const Tensor *values = constantTensorOf(indices);
  if (size && values)
    for (int64_t i = 0, n = values->numElements(); i < n; ++i)
      if (int64_t v = values->elementAsInt64(i); v < -*size || v >= *size)
        fail(node.describe(), ": index ", v, " (element ", i,
             " of the indices) is out of range for axis ", axis, " of size ", *size);
  setResult(node, 0, data->dtype(), index);
}

/// Every index tuple of a constant ScatterND indices tensor is in range.
void checkConstantScatterIndices(const Node &node, const Tensor &values, const Shape &data,
                                 size_t depth) {
  int64_t n = values.numElements(), k = int64_t(depth);
  for (int64_t at = 0; at + k <= n; at += k)
    for (int64_t j = 0; j < k; ++j) {
      std::optional<int64_t> size = data[size_t(j)].constant();
      int64_t v = values.elementAsInt64(at + j);
      if (size && (v < -*size || v >= *size))
        fail(node.describe(), ": index ", v, " (row ", at / k, " of the indices, position ", j,
             ") is out of range for axis ", j, " of size ", *size);
    }
}

void inferScatterND(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *indices = requireIndices(node, 1);
  const Value *updates = requireNamedOperand(node, 2, "updates");
  std::string reduction = node.getString("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    fail(node.describe(), ": ScatterND reduction must be none, add, mul, max or min, got '",
         reduction, "'");
  if (data->dtype() != DType::Unknown && updates->dtype() != DType::Unknown &&
      data->dtype() != updates->dtype())
    fail(node.describe(), ": updates are ", dtypeName(updates->dtype()), " but data is ",
         dtypeName(data->dtype()));
  if (reduction != "none" && data->dtype() == DType::Bool)
    fail(node.describe(), ": ScatterND reduction '", reduction, "' needs numeric data, not bool");
  const Shape &input = data->shape(), &index = indices->shape(), &update = updates->shape();
  setResult(node, 0, data->dtype(), input);
  if (!input.isRanked() || !index.isRanked())
    return;
  if (input.rank() == 0)
    fail(node.describe(), ": ScatterND needs data of rank at least 1");
  if (index.rank() == 0)
    fail(node.describe(), ": ScatterND needs indices of rank at least 1");
  std::optional<int64_t> depth = index[index.rank() - 1].constant();
  if (!depth)
    return; // the runtime checks k against the data's rank
  if (*depth < 1 || *depth > int64_t(input.rank()))
    fail(node.describe(), ": the last dimension of the indices is ", *depth,
         " but must be between 1 and the data's rank ", input.rank());
  size_t k = size_t(*depth);
  if (const Tensor *values = constantTensorOf(indices))
    checkConstantScatterIndices(node, *values, input, k);
  if (!update.isRanked())
    return;
  // updates = indices[:-1] + data[k:]
  size_t expectedRank = index.rank() - 1 + input.rank() - k;
  if (update.rank() != expectedRank)
    fail(node.describe(), ": updates have rank ", update.rank(), " but must have rank ",
         expectedRank, " (indices rank - 1 + data rank - ", k, ")");
  for (size_t i = 0; i + 1 < index.rank(); ++i)
    requireEqualDims(context, node, update[i], index[i],
                     "dimension " + std::to_string(i) + " of the updates");
  for (size_t i = k; i < input.rank(); ++i) {
    size_t u = index.rank() - 1 + (i - k);
    requireEqualDims(context, node, update[u], input[i],
                     "dimension " + std::to_string(u) + " of the updates");
  }
}

/// Constant write indices of a linear TensorScatter leave room for the
/// update: 0 <= index <= cache length - update length.
void checkConstantWriteIndices(const Node &node, const Tensor &values, const Dim &cache,
                               const Dim &update) {
  std::optional<int64_t> rows = cache.constant(), length = update.constant();
  if (!rows || !length || *length == 0)
    return;
  for (int64_t i = 0, n = values.numElements(); i < n; ++i)
    if (int64_t v = values.elementAsInt64(i); v < 0 || v + *length > *rows)
      fail(node.describe(), ": write index ", v, " of batch row ", i, " leaves no room for ",
           *length, " update positions in a cache of ", *rows, " (linear mode)");
}

void inferTensorScatter(Node &node, InferenceContext &context) {
  const Value *past = requireNamedOperand(node, 0, "past_cache");
  const Value *update = requireNamedOperand(node, 1, "update");
  const Value *writeIndices = node.numOperands() > 2 ? node.operand(2) : nullptr;
  std::string mode = node.getString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    fail(node.describe(), ": TensorScatter mode must be linear or circular, got '", mode, "'");
  if (past->dtype() != DType::Unknown && update->dtype() != DType::Unknown &&
      past->dtype() != update->dtype())
    fail(node.describe(), ": update is ", dtypeName(update->dtype()), " but past_cache is ",
         dtypeName(past->dtype()));
  if (writeIndices && writeIndices->dtype() != DType::Unknown &&
      writeIndices->dtype() != DType::I64)
    fail(node.describe(), ": write_indices must be i64, not ", dtypeName(writeIndices->dtype()));
  const Shape &cache = past->shape(), &rows = update->shape();
  setResult(node, 0, past->dtype(), cache);
  if (!cache.isRanked())
    return;
  if (cache.rank() < 2)
    fail(node.describe(), ": TensorScatter needs past_cache of rank at least 2 (batch first), got ",
         cache.str());
  int64_t axis = normalizeAxisOrFail(node, node.getInt("axis", -2), int64_t(cache.rank()));
  if (axis == 0)
    fail(node.describe(), ": TensorScatter axis cannot be 0, the batch axis of the write indices");
  if (rows.isRanked()) {
    if (rows.rank() != cache.rank())
      fail(node.describe(), ": update has rank ", rows.rank(), " but past_cache has rank ",
           cache.rank());
    for (size_t i = 0; i < cache.rank(); ++i)
      if (int64_t(i) != axis)
        requireEqualDims(context, node, rows[i], cache[i],
                         "dimension " + std::to_string(i) + " of the update");
    requireAtMostDim(context, node, rows[size_t(axis)], cache[size_t(axis)],
                     "the update's length on axis " + std::to_string(axis));
  }
  if (!writeIndices || !writeIndices->shape().isRanked())
    return;
  const Shape &at = writeIndices->shape();
  if (at.rank() != 1)
    fail(node.describe(), ": write_indices must be 1-D [batch], got ", at.str());
  requireEqualDims(context, node, at[0], cache[0], "the length of write_indices");
  const Tensor *values = constantTensorOf(writeIndices);
  if (values && mode == "linear" && rows.isRanked())
    checkConstantWriteIndices(node, *values, cache[size_t(axis)], rows[size_t(axis)]);
}

} // namespace

void registerScatterGatherShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::GatherElements, inferGatherElements);
  table.add(OpKind::ScatterND, inferScatterND);
  table.add(OpKind::TensorScatter, inferTensorScatter);
}

} // namespace onnxc
