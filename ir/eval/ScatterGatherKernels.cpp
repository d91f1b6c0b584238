//===- ir/eval/ScatterGatherKernels.cpp - GatherElements, ScatterND, TensorScatter ===//
//
// GatherElements reads one data element per index position: the position
// itself off the axis, the index along it. ScatterND copies the data and
// then, update row by update row in order, combines a slice of data[k:]
// with the row's update slice. With reduction "none" ONNX leaves the result
// of duplicate index tuples unspecified; onnxc follows onnxruntime, which
// applies the rows in order, so the last write wins (the compiled kernel
// keeps the same order). Both accept negative indices and fail naming the
// node, the index and where it sits when one is out of range.
// TensorScatter copies the cache and writes the update's positions from each
// batch row's write index on (modulo the cache length in circular mode); in
// linear mode a write index that leaves no room for the update fails.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>

namespace onnxc {

namespace {

using Operands = std::vector<const Tensor *>;

template <DType D> using StorageOf = typename ElementTraits<D>::Storage;

const Tensor &integerIndices(const Node &node, const Operands &operands, size_t i) {
  const Tensor &indices = requireOperand(node, operands, i);
  if (!isInteger(indices.dtype()))
    fail(node.describe(), ": indices must be an integer tensor, not ", dtypeName(indices.dtype()));
  return indices;
}

std::string dimsText(const std::vector<int64_t> &dims) { return Shape::fromConstants(dims).str(); }

void gatherElementsKernel(const Node &node, const Operands &operands,
                          std::vector<Tensor> &results) {
  const Tensor &data = requireOperand(node, operands, 0);
  const Tensor &indices = integerIndices(node, operands, 1);
  size_t rank = data.rank();
  if (rank == 0)
    fail(node.describe(), ": GatherElements needs data of rank at least 1");
  if (indices.rank() != rank)
    fail(node.describe(), ": indices ", dimsText(indices.dims()), " and data ",
         dimsText(data.dims()), " must have the same rank");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(rank)));
  for (size_t i = 0; i < rank; ++i)
    if (i != axis && indices.dims()[i] > data.dims()[i])
      fail(node.describe(), ": indices ", dimsText(indices.dims()), " exceed data ",
           dimsText(data.dims()), " in dimension ", i);
  int64_t size = data.dims()[axis];
  std::vector<int64_t> strides = rowMajorStrides(data.dims());
  std::vector<int64_t> index = indices.toInt64Vector();
  Tensor out(data.dtype(), indices.dims());
  size_t elementSize = dtypeSize(data.dtype());
  const auto *src = static_cast<const uint8_t *>(data.rawData());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  // position: the index position as coordinates; base: its data offset
  // without the axis coordinate.
  std::vector<int64_t> position(rank, 0);
  int64_t base = 0;
  for (size_t n = 0; n < index.size(); ++n) {
    int64_t i = index[n];
    if (i < -size || i >= size)
      fail(node.describe(), ": index ", i, " (element ", n, " of the indices) is out of range for ",
           "axis ", axis, " of size ", size);
    if (i < 0)
      i += size;
    std::memcpy(dst + n * elementSize, src + size_t(base + i * strides[axis]) * elementSize,
                elementSize);
    for (size_t d = rank; d-- > 0;) {
      if (++position[d] < indices.dims()[d]) {
        if (d != axis)
          base += strides[d];
        break;
      }
      if (d != axis)
        base -= (position[d] - 1) * strides[d];
      position[d] = 0;
    }
  }
  results[0] = std::move(out);
}

enum class ScatterReduction { None, Add, Mul, Max, Min };

ScatterReduction scatterReduction(const Node &node) {
  std::string name = node.getString("reduction", "none");
  if (name == "none")
    return ScatterReduction::None;
  if (name == "add")
    return ScatterReduction::Add;
  if (name == "mul")
    return ScatterReduction::Mul;
  if (name == "max")
    return ScatterReduction::Max;
  if (name == "min")
    return ScatterReduction::Min;
  fail(node.describe(), ": ScatterND reduction must be none, add, mul, max or min, got '", name,
       "'");
}

/// `into` combined with `update`, in the compute type C: integers wrap, a
/// NaN in either operand of max/min gives NaN (as the elementwise Max/Min).
template <typename C> C combine(ScatterReduction reduction, C into, C update) {
  if constexpr (std::is_floating_point_v<C>) {
    if ((reduction == ScatterReduction::Max || reduction == ScatterReduction::Min) &&
        (std::isnan(into) || std::isnan(update)))
      return std::numeric_limits<C>::quiet_NaN();
  }
  switch (reduction) {
  case ScatterReduction::Add:
    if constexpr (std::is_integral_v<C>)
      return C(uint64_t(into) + uint64_t(update));
    else
      return into + update;
  case ScatterReduction::Mul:
    if constexpr (std::is_integral_v<C>)
      return C(uint64_t(into) * uint64_t(update));
    else
      return into * update;
  case ScatterReduction::Max:
    return update > into ? update : into;
  case ScatterReduction::Min:
    return update < into ? update : into;
  case ScatterReduction::None:
    return update;
  }
  return update;
}

/// The element offset in data of update row `row`: its k-tuple of indices,
/// each checked against its axis.
int64_t scatterRowOffset(const Node &node, const std::vector<int64_t> &index, int64_t row,
                         size_t depth, const std::vector<int64_t> &dataDims,
                         const std::vector<int64_t> &strides) {
  int64_t offset = 0;
  for (size_t j = 0; j < depth; ++j) {
    int64_t i = index[size_t(row) * depth + j], size = dataDims[j];
    if (i < -size || i >= size)
      fail(node.describe(), ": index ", i, " (row ", row, " of the indices, position ", j,
           ") is out of range for axis ", j, " of size ", size);
    offset += (i < 0 ? i + size : i) * strides[j];
  }
  return offset;
}

void checkScatterShapes(const Node &node, const Tensor &data, const Tensor &indices,
                        const Tensor &updates) {
  if (data.rank() == 0)
    fail(node.describe(), ": ScatterND needs data of rank at least 1");
  if (indices.rank() == 0)
    fail(node.describe(), ": ScatterND needs indices of rank at least 1");
  if (updates.dtype() != data.dtype())
    fail(node.describe(), ": updates are ", dtypeName(updates.dtype()), " but data is ",
         dtypeName(data.dtype()));
  int64_t depth = indices.dims().back();
  if (depth < 1 || depth > int64_t(data.rank()))
    fail(node.describe(), ": the last dimension of the indices is ", depth,
         " but must be between 1 and the data's rank ", data.rank());
  std::vector<int64_t> expected(indices.dims().begin(), indices.dims().end() - 1);
  expected.insert(expected.end(), data.dims().begin() + depth, data.dims().end());
  if (updates.dims() != expected)
    fail(node.describe(), ": updates are ", dimsText(updates.dims()), " but must be ",
         dimsText(expected), " (indices[:-1] + data[", depth, ":])");
}

void scatterNDKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = requireOperand(node, operands, 0);
  const Tensor &indices = integerIndices(node, operands, 1);
  const Tensor &updates = requireOperand(node, operands, 2);
  ScatterReduction reduction = scatterReduction(node);
  if (reduction != ScatterReduction::None)
    requireDType(node, data, kNumericTypes, 0);
  checkScatterShapes(node, data, indices, updates);
  size_t depth = size_t(indices.dims().back());
  std::vector<int64_t> strides = rowMajorStrides(data.dims());
  int64_t sliceLength = depth == data.rank() ? 1 : strides[depth - 1];
  int64_t rows = indices.numElements() / int64_t(depth);
  std::vector<int64_t> index = indices.toInt64Vector();
  Tensor out = data.clone();
  size_t elementSize = dtypeSize(data.dtype());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  const auto *src = static_cast<const uint8_t *>(updates.rawData());
  for (int64_t row = 0; row < rows; ++row) {
    int64_t offset = scatterRowOffset(node, index, row, depth, data.dims(), strides);
    if (reduction == ScatterReduction::None) {
      std::memcpy(dst + size_t(offset) * elementSize, src + size_t(row * sliceLength) * elementSize,
                  size_t(sliceLength) * elementSize);
      continue;
    }
    dispatchDType(data.dtype(), [&]<DType D>() {
      if constexpr (dtypeIn(D, kNumericTypes)) {
        using T = ElementTraits<D>;
        StorageOf<D> *into = out.data<StorageOf<D>>() + offset;
        const StorageOf<D> *from = updates.data<StorageOf<D>>() + row * sliceLength;
        for (int64_t e = 0; e < sliceLength; ++e)
          into[e] = T::store(combine(reduction, T::load(into[e]), T::load(from[e])));
      }
    });
  }
  results[0] = std::move(out);
}

void checkTensorScatterShapes(const Node &node, const Tensor &past, const Tensor &update,
                              const Tensor *writeIndices, size_t axis) {
  if (update.dtype() != past.dtype())
    fail(node.describe(), ": update is ", dtypeName(update.dtype()), " but past_cache is ",
         dtypeName(past.dtype()));
  bool fits = update.rank() == past.rank() && update.dims()[axis] <= past.dims()[axis];
  for (size_t i = 0; fits && i < past.rank(); ++i)
    fits = i == axis || update.dims()[i] == past.dims()[i];
  if (!fits)
    fail(node.describe(), ": update ", dimsText(update.dims()), " does not fit past_cache ",
         dimsText(past.dims()), " (equal off axis ", axis, ", no longer on it)");
  if (writeIndices && (writeIndices->dtype() != DType::I64 || writeIndices->rank() != 1 ||
                       writeIndices->dims()[0] != past.dims()[0]))
    fail(node.describe(), ": write_indices must be i64 [", past.dims()[0], "], got ",
         dtypeName(writeIndices->dtype()), " ", dimsText(writeIndices->dims()));
}

void tensorScatterKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &past = requireOperand(node, operands, 0);
  const Tensor &update = requireOperand(node, operands, 1);
  const Tensor *writeIndices = operands.size() > 2 ? operands[2] : nullptr;
  std::string mode = node.getString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    fail(node.describe(), ": TensorScatter mode must be linear or circular, got '", mode, "'");
  if (past.rank() < 2)
    fail(node.describe(), ": TensorScatter needs past_cache of rank at least 2 (batch first)");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", -2), int64_t(past.rank())));
  if (axis == 0)
    fail(node.describe(), ": TensorScatter axis cannot be 0, the batch axis of the write indices");
  checkTensorScatterShapes(node, past, update, writeIndices, axis);
  const std::vector<int64_t> &dims = past.dims();
  int64_t batch = dims[0], rows = dims[axis], length = update.dims()[axis];
  int64_t inner = 1, perBatch = 1;
  for (size_t i = axis + 1; i < dims.size(); ++i)
    inner *= dims[i];
  for (size_t i = 1; i < axis; ++i)
    perBatch *= dims[i];
  std::vector<int64_t> starts =
      writeIndices ? writeIndices->toInt64Vector() : std::vector<int64_t>(size_t(batch), 0);
  bool circular = mode == "circular";
  for (int64_t b = 0; b < batch && !circular && length > 0; ++b)
    if (starts[size_t(b)] < 0 || starts[size_t(b)] + length > rows)
      fail(node.describe(), ": write index ", starts[size_t(b)], " of batch row ", b,
           " leaves no room for ", length, " update positions in a cache of ", rows,
           " (linear mode)");
  Tensor out = past.clone();
  size_t rowBytes = size_t(inner) * dtypeSize(past.dtype());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  const auto *src = static_cast<const uint8_t *>(update.rawData());
  for (int64_t p = 0; p < batch * perBatch; ++p) {
    int64_t start = starts[size_t(p / perBatch)];
    for (int64_t s = 0; s < length; ++s) {
      int64_t at = start + s;
      if (circular)
        at = ((at % rows) + rows) % rows;
      std::memcpy(dst + size_t(p * rows + at) * rowBytes, src + size_t(p * length + s) * rowBytes,
                  rowBytes);
    }
  }
  results[0] = std::move(out);
}

} // namespace

void registerScatterGatherKernels(KernelTable &table) {
  table.add(OpKind::GatherElements, gatherElementsKernel);
  table.add(OpKind::ScatterND, scatterNDKernel);
  table.add(OpKind::TensorScatter, tensorScatterKernel);
}

} // namespace onnxc
