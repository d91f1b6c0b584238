//===- ir/eval/MovementKernels.cpp - Reference kernels for data movement --===//
//
// Reshape, Transpose, Concat, Split, Slice, Gather, Squeeze, Unsqueeze,
// Flatten, Expand, Tile, Shape, Size, Range, ConstantOfShape, Constant,
// Identity, Dropout (inference), Trilu. Data is moved byte-wise by element
// size, so every kernel serves every dtype. Ops that only change the shape
// return a tensor sharing the operand's storage.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/OpAttributes.h"
#include "ir/eval/Kernels.h"
#include "ir/infer/KnownContents.h"
#include "ir/shape/Shape.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onnxc {

namespace {

using Operands = std::vector<const Tensor *>;

const Tensor *optionalInput(const Node &node, const Operands &operands, size_t i,
                            const char *what) {
  const Tensor *t = i < operands.size() ? operands[i] : nullptr;
  if (t && !t->hasData())
    fail(node.describe(), ": operand '", what, "' has no data (elided constant)");
  return t;
}

const Tensor &input(const Node &node, const Operands &operands, size_t i, const char *what) {
  const Tensor *t = optionalInput(node, operands, i, what);
  if (!t)
    fail(node.describe(), ": missing operand '", what, "'");
  return *t;
}

/// The values of an integer operand of rank 0 or 1 (shapes, axes, indices).
std::vector<int64_t> indexValues(const Node &node, const Tensor &t, const char *what) {
  if (!isInteger(t.dtype()))
    fail(node.describe(), ": operand '", what, "' must be an integer tensor, not ",
         dtypeName(t.dtype()));
  if (t.rank() > 1)
    fail(node.describe(), ": operand '", what, "' must be 1-D, not of rank ", t.rank());
  return t.toInt64Vector();
}

std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

int64_t product(const std::vector<int64_t> &dims, size_t begin, size_t end) {
  int64_t p = 1;
  for (size_t i = begin; i < end; ++i)
    p *= dims[i];
  return p;
}

std::string dimsString(const std::vector<int64_t> &dims) {
  return Shape::fromConstants(dims).str();
}

/// dst[index] = src[base + sum(index[k] * strides[k])] over every index of
/// dst (in elements; strides may be zero or negative). Transpose, Slice,
/// Expand and Split are all this copy with different strides.
void stridedCopy(const Tensor &src, Tensor &dst, int64_t base,
                 const std::vector<int64_t> &strides) {
  int64_t total = dst.numElements();
  if (total == 0)
    return;
  size_t size = dtypeSize(dst.dtype());
  const auto *in = static_cast<const uint8_t *>(src.rawData());
  auto *out = static_cast<uint8_t *>(dst.rawData());
  const std::vector<int64_t> &dims = dst.dims();
  std::vector<int64_t> index(dims.size(), 0);
  int64_t offset = base;
  for (int64_t i = 0; i < total; ++i) {
    std::memcpy(out + size_t(i) * size, in + size_t(offset) * size, size);
    for (size_t k = dims.size(); k-- > 0;) {
      offset += strides[k];
      if (++index[k] < dims[k])
        break;
      offset -= strides[k] * dims[k];
      index[k] = 0;
    }
  }
}

// --- Shape-only ops -------------------------------------------------------------

void reshapeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  std::vector<int64_t> dims = indexValues(node, input(node, operands, 1, "shape"), "shape");
  bool allowZero = node.getInt("allowzero", 0) != 0;
  int64_t inferred = -1, known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0 && !allowZero) {
      if (i >= data.rank())
        fail(node.describe(), ": reshape target copies dimension ", i, " of a rank-", data.rank(),
             " input");
      dims[i] = data.dims()[i];
    }
    if (dims[i] == -1) {
      if (inferred >= 0)
        fail(node.describe(), ": reshape target has more than one -1");
      inferred = int64_t(i);
    } else if (dims[i] < 0) {
      fail(node.describe(), ": reshape target has invalid dimension ", dims[i]);
    } else {
      if (dims[i] != 0 && known > (int64_t(1) << 40) / dims[i])
        fail(node.describe(), ": reshape target ", dimsString(dims), " is too large");
      known *= dims[i];
    }
  }
  int64_t total = data.numElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      fail(node.describe(), ": reshape of ", total, " elements to ", dimsString(dims),
           " is impossible");
    dims[size_t(inferred)] = total / known;
  } else if (known != total) {
    fail(node.describe(), ": reshape of ", total, " elements to ", dimsString(dims),
         " is impossible");
  }
  results[0] = data.reshaped(dims);
}

void squeezeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  int64_t rank = int64_t(data.rank());
  std::vector<bool> removed(data.rank(), false);
  if (const Tensor *axes = optionalInput(node, operands, 1, "axes")) {
    for (int64_t axis : indexValues(node, *axes, "axes")) {
      size_t a = size_t(normalizeAxisOrFail(node, axis, rank));
      if (data.dims()[a] != 1)
        fail(node.describe(), ": cannot squeeze axis ", axis, " of size ", data.dims()[a]);
      removed[a] = true;
    }
  } else {
    for (size_t i = 0; i < data.rank(); ++i)
      removed[i] = data.dims()[i] == 1;
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < data.rank(); ++i)
    if (!removed[i])
      dims.push_back(data.dims()[i]);
  results[0] = data.reshaped(dims);
}

void unsqueezeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  std::vector<int64_t> axes = indexValues(node, input(node, operands, 1, "axes"), "axes");
  int64_t rank = int64_t(data.rank() + axes.size());
  std::vector<bool> inserted(size_t(rank), false);
  for (int64_t axis : axes) {
    size_t a = size_t(normalizeAxisOrFail(node, axis, rank));
    if (inserted[a])
      fail(node.describe(), ": axis ", axis, " appears twice");
    inserted[a] = true;
  }
  std::vector<int64_t> dims;
  size_t next = 0;
  for (size_t i = 0; i < size_t(rank); ++i)
    dims.push_back(inserted[i] ? 1 : data.dims()[next++]);
  results[0] = data.reshaped(dims);
}

void flattenKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "input");
  int64_t axis = flattenAxis(node, int64_t(data.rank()));
  results[0] = data.reshaped(
      {product(data.dims(), 0, size_t(axis)), product(data.dims(), size_t(axis), data.rank())});
}

void identityKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  results[0] = input(node, operands, 0, "input");
}

void dropoutKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  if (const Tensor *training = optionalInput(node, operands, 2, "training_mode")) {
    const Tensor *ratio = optionalInput(node, operands, 1, "ratio");
    bool train = training->numElements() == 1 && training->elementAsDouble(0) != 0.0;
    double rate = ratio && ratio->numElements() == 1 ? ratio->elementAsDouble(0) : 0.5;
    // With a zero ratio training mode drops nothing, so it is still exact.
    if (train && rate != 0.0)
      fail(node.describe(), ": training-mode dropout is not supported");
  }
  results[0] = data;
  if (results.size() > 1) {
    Tensor mask(DType::Bool, data.dims());
    std::memset(mask.rawData(), 1, mask.byteSize());
    results[1] = mask;
  }
}

// --- Transpose, Concat, Split, Slice ----------------------------------------

void transposeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  std::vector<int64_t> perm = transposePermutation(node, data.rank());
  std::vector<int64_t> inStrides = stridesOf(data.dims()), dims, strides;
  for (int64_t p : perm) {
    dims.push_back(data.dims()[size_t(p)]);
    strides.push_back(inStrides[size_t(p)]);
  }
  results[0] = Tensor(data.dtype(), dims);
  stridedCopy(data, results[0], 0, strides);
}

void concatKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  if (operands.empty())
    fail(node.describe(), ": concat needs at least one operand");
  const Tensor &first = input(node, operands, 0, "inputs");
  size_t axis = size_t(normalizeAxisOrFail(node, node.requireInt("axis"), int64_t(first.rank())));
  std::vector<int64_t> dims = first.dims();
  dims[axis] = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const Tensor &t = input(node, operands, i, "inputs");
    bool compatible = t.dtype() == first.dtype() && t.rank() == first.rank();
    for (size_t d = 0; compatible && d < t.rank(); ++d)
      compatible = d == axis || t.dims()[d] == first.dims()[d];
    if (!compatible)
      fail(node.describe(), ": cannot concatenate ", t.typeString(), " with ", first.typeString(),
           " on axis ", axis);
    dims[axis] += t.dims()[axis];
  }
  Tensor out(first.dtype(), dims);
  size_t size = dtypeSize(first.dtype());
  int64_t outer = product(dims, 0, axis);
  auto *dst = static_cast<uint8_t *>(out.rawData());
  for (int64_t o = 0; o < outer; ++o) {
    for (const Tensor *t : operands) {
      size_t block = size_t(product(t->dims(), axis, t->rank())) * size;
      std::memcpy(dst, static_cast<const uint8_t *>(t->rawData()) + size_t(o) * block, block);
      dst += block;
    }
  }
  results[0] = out;
}

std::vector<int64_t> splitSizes(const Node &node, const Operands &operands, int64_t length,
                                size_t parts) {
  if (const Tensor *split = optionalInput(node, operands, 1, "split")) {
    std::vector<int64_t> sizes = indexValues(node, *split, "split");
    int64_t sum = 0;
    for (int64_t s : sizes) {
      if (s < 0)
        fail(node.describe(), ": split size ", s, " is negative");
      sum += s;
    }
    if (sizes.size() != parts || sum != length)
      fail(node.describe(), ": split sizes ", dimsString(sizes), " do not cut a dimension of ",
           length, " into ", parts, " parts");
    return sizes;
  }
  checkSplitNumOutputs(node, parts);
  if (parts == 0)
    fail(node.describe(), ": split has no results");
  int64_t chunk = (length + int64_t(parts) - 1) / int64_t(parts);
  std::vector<int64_t> sizes(parts, chunk);
  sizes.back() = length - chunk * int64_t(parts - 1);
  if (sizes.back() < 0)
    fail(node.describe(), ": cannot split dimension ", length, " into ", parts, " parts");
  return sizes;
}

void splitKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "input");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(data.rank())));
  std::vector<int64_t> sizes = splitSizes(node, operands, data.dims()[axis], results.size());
  std::vector<int64_t> strides = stridesOf(data.dims());
  int64_t offset = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    std::vector<int64_t> dims = data.dims();
    dims[axis] = sizes[i];
    results[i] = Tensor(data.dtype(), dims);
    stridedCopy(data, results[i], offset * strides[axis], strides);
    offset += sizes[i];
  }
}

void sliceKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  std::vector<int64_t> starts = indexValues(node, input(node, operands, 1, "starts"), "starts");
  std::vector<int64_t> ends = indexValues(node, input(node, operands, 2, "ends"), "ends");
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (const Tensor *t = optionalInput(node, operands, 3, "axes"))
    axes = indexValues(node, *t, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  if (const Tensor *t = optionalInput(node, operands, 4, "steps"))
    steps = indexValues(node, *t, "steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    fail(node.describe(), ": starts, ends, axes and steps have different lengths");
  std::vector<int64_t> dims = data.dims(), strides = stridesOf(data.dims());
  std::vector<bool> sliced(data.rank(), false);
  int64_t base = 0;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = size_t(normalizeAxisOrFail(node, axes[i], int64_t(data.rank())));
    if (sliced[a])
      fail(node.describe(), ": axis ", axes[i], " is sliced twice");
    if (steps[i] == 0)
      fail(node.describe(), ": slice step is 0");
    sliced[a] = true;
    SliceBounds bounds = resolveSliceBounds(starts[i], ends[i], steps[i], data.dims()[a]);
    dims[a] = bounds.length;
    if (bounds.length > 0)
      base += bounds.start * strides[a];
    strides[a] *= bounds.step;
  }
  results[0] = Tensor(data.dtype(), dims);
  stridedCopy(data, results[0], base, strides);
}

// --- Gather, Expand, Tile, Trilu ----------------------------------------------

void gatherKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "data");
  const Tensor &indicesTensor = input(node, operands, 1, "indices");
  if (!isInteger(indicesTensor.dtype()))
    fail(node.describe(), ": indices must be an integer tensor");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(data.rank())));
  int64_t size = data.dims()[axis];
  std::vector<int64_t> dims(data.dims().begin(), data.dims().begin() + axis);
  dims.insert(dims.end(), indicesTensor.dims().begin(), indicesTensor.dims().end());
  dims.insert(dims.end(), data.dims().begin() + axis + 1, data.dims().end());
  Tensor out(data.dtype(), dims);
  std::vector<int64_t> indices = indicesTensor.toInt64Vector();
  for (int64_t &index : indices) {
    if (index < -size || index >= size)
      fail(node.describe(), ": index ", index, " is out of range for axis ", axis, " of size ",
           size);
    if (index < 0)
      index += size;
  }
  size_t block = size_t(product(data.dims(), axis + 1, data.rank())) * dtypeSize(data.dtype());
  int64_t outer = product(data.dims(), 0, axis);
  const auto *src = static_cast<const uint8_t *>(data.rawData());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t index : indices) {
      std::memcpy(dst, src + (size_t(o * size + index)) * block, block);
      dst += block;
    }
  results[0] = out;
}

void expandKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "input");
  std::vector<int64_t> target = indexValues(node, input(node, operands, 1, "shape"), "shape");
  size_t rank = std::max(data.rank(), target.size());
  std::vector<int64_t> inStrides = stridesOf(data.dims()), dims(rank), strides(rank, 0);
  for (size_t i = 0; i < rank; ++i) {
    size_t fromEnd = rank - 1 - i;
    bool hasInput = fromEnd < data.rank();
    size_t k = data.rank() - 1 - fromEnd;
    int64_t a = hasInput ? data.dims()[k] : 1;
    int64_t b = fromEnd < target.size() ? target[target.size() - 1 - fromEnd] : 1;
    if (a != b && a != 1 && b != 1)
      fail(node.describe(), ": cannot expand ", data.typeString(), " to ", dimsString(target));
    if (b < 0)
      fail(node.describe(), ": expand shape ", dimsString(target), " has a negative dimension");
    dims[i] = a == 1 ? b : a;
    strides[i] = hasInput && a != 1 ? inStrides[k] : 0;
  }
  results[0] = Tensor(data.dtype(), dims);
  stridedCopy(data, results[0], 0, strides);
}

void tileKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "input");
  std::vector<int64_t> repeats = indexValues(node, input(node, operands, 1, "repeats"), "repeats");
  if (repeats.size() != data.rank())
    fail(node.describe(), ": repeats has ", repeats.size(), " entries for rank ", data.rank());
  std::vector<int64_t> dims;
  for (size_t i = 0; i < data.rank(); ++i) {
    if (repeats[i] < 0 || (repeats[i] > 0 && data.dims()[i] > (int64_t(1) << 40) / repeats[i]))
      fail(node.describe(), ": repeat count ", repeats[i], " is negative or too large");
    dims.push_back(data.dims()[i] * repeats[i]);
  }
  Tensor out(data.dtype(), dims);
  std::vector<int64_t> inStrides = stridesOf(data.dims()), index(dims.size(), 0);
  size_t size = dtypeSize(data.dtype());
  const auto *src = static_cast<const uint8_t *>(data.rawData());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t offset = 0;
    for (size_t k = 0; k < dims.size(); ++k)
      offset += (index[k] % data.dims()[k]) * inStrides[k];
    std::memcpy(dst + size_t(i) * size, src + size_t(offset) * size, size);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++index[k] < dims[k])
        break;
      index[k] = 0;
    }
  }
  results[0] = out;
}

void triluKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = input(node, operands, 0, "input");
  if (data.rank() < 2)
    fail(node.describe(), ": trilu needs rank at least 2, not ", data.rank());
  int64_t k = 0;
  if (const Tensor *kTensor = optionalInput(node, operands, 1, "k")) {
    if (!isInteger(kTensor->dtype()) || kTensor->numElements() != 1)
      fail(node.describe(), ": k must be an integer scalar");
    k = kTensor->elementAsInt64(0);
  }
  bool upper = node.getInt("upper", 1) != 0;
  Tensor out = data.clone();
  int64_t rows = data.dims()[data.rank() - 2], cols = data.dims()[data.rank() - 1];
  int64_t batches = product(data.dims(), 0, data.rank() - 2);
  size_t size = dtypeSize(data.dtype());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        bool keep = upper ? j - i >= k : j - i <= k;
        if (!keep)
          std::memset(dst + size_t((b * rows + i) * cols + j) * size, 0, size);
      }
  results[0] = out;
}

// --- Shape, Size, Range, ConstantOfShape, Constant --------------------------

/// Shape and Size read only the operand's dims, so an elided constant will do.
const Tensor &dimsOnlyInput(const Node &node, const Operands &operands) {
  if (operands.empty() || !operands[0])
    fail(node.describe(), ": missing operand 'data'");
  return *operands[0];
}

void shapeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &data = dimsOnlyInput(node, operands);
  auto [first, last] = shapeOpRange(node, int64_t(data.rank()));
  results[0] =
      Tensor::fromVector<int64_t>({last - first}, std::vector<int64_t>(data.dims().begin() + first,
                                                                       data.dims().begin() + last));
}

void sizeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  results[0] = Tensor::scalar<int64_t>(dimsOnlyInput(node, operands).numElements());
}

int64_t rangeCount(const Node &node, double count) {
  if (count > double(int64_t(1) << 40))
    fail(node.describe(), ": range of ", count, " elements is too large");
  return count > 0 ? int64_t(count) : 0;
}

void rangeKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &start = input(node, operands, 0, "start");
  const Tensor &limit = input(node, operands, 1, "limit");
  const Tensor &delta = input(node, operands, 2, "delta");
  DType dtype = start.dtype();
  for (const Tensor *t : {&start, &limit, &delta})
    if (t->dtype() != dtype || t->numElements() != 1)
      fail(node.describe(), ": start, limit and delta must be scalars of one dtype");
  if (dtype == DType::Bool)
    fail(node.describe(), ": range of bool is not defined");
  if (isFloat(dtype)) {
    double s = start.elementAsDouble(0), l = limit.elementAsDouble(0), d = delta.elementAsDouble(0);
    if (d == 0.0 || !std::isfinite(s) || !std::isfinite(l) || !std::isfinite(d))
      fail(node.describe(), ": range needs finite operands and a nonzero delta");
    int64_t count = rangeCount(node, std::ceil((l - s) / d));
    Tensor out(dtype, {count});
    for (int64_t i = 0; i < count; ++i)
      out.setElementFromDouble(i, s + double(i) * d);
    results[0] = out;
    return;
  }
  int64_t s = start.elementAsInt64(0), l = limit.elementAsInt64(0), d = delta.elementAsInt64(0);
  if (d == 0)
    fail(node.describe(), ": range delta is 0");
  // The count is computed in floating point: the int64 difference may overflow.
  int64_t count = rangeCount(node, std::ceil((double(l) - double(s)) / double(d)));
  Tensor out(dtype, {count});
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::I64)
      out.data<int64_t>()[i] = s + i * d; // exact beyond 2^53
    else
      out.setElementFromDouble(i, double(s + i * d));
  }
  results[0] = out;
}

void constantOfShapeKernel(const Node &node, const Operands &operands,
                           std::vector<Tensor> &results) {
  std::vector<int64_t> dims = indexValues(node, input(node, operands, 0, "input"), "input");
  for (int64_t d : dims)
    if (d < 0)
      fail(node.describe(), ": negative dimension ", d);
  Tensor fill = Tensor::scalar<float>(0.0f);
  if (const Attribute *value = node.findAttr("value")) {
    if (value->kind() != Attribute::Kind::Tensor || value->asTensor().numElements() != 1 ||
        !value->asTensor().hasData())
      fail(node.describe(), ": attribute 'value' must be a one-element tensor");
    fill = value->asTensor();
  }
  Tensor out(fill.dtype(), dims);
  size_t size = dtypeSize(fill.dtype());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  for (int64_t i = 0; i < out.numElements(); ++i)
    std::memcpy(dst + size_t(i) * size, fill.rawData(), size);
  results[0] = out;
}

void constantKernel(const Node &node, const Operands &, std::vector<Tensor> &results) {
  if (node.hasAttr("value")) {
    const Tensor &value = node.requireTensor("value");
    if (!value.hasData())
      fail(node.describe(), ": constant value has no data (elided)");
    results[0] = value;
  } else if (node.hasAttr("value_float")) {
    results[0] = Tensor::scalar<float>(node.getFloat("value_float", 0));
  } else if (node.hasAttr("value_floats")) {
    std::vector<float> values = node.getFloats("value_floats");
    results[0] = Tensor::fromVector<float>({int64_t(values.size())}, values);
  } else if (node.hasAttr("value_int")) {
    results[0] = Tensor::scalar<int64_t>(node.getInt("value_int", 0));
  } else if (node.hasAttr("value_ints")) {
    std::vector<int64_t> values = node.getInts("value_ints");
    results[0] = Tensor::fromVector<int64_t>({int64_t(values.size())}, values);
  } else {
    fail(node.describe(), ": constant has no supported value attribute");
  }
}

} // namespace

void registerMovementKernels(KernelTable &table) {
  table.add(OpKind::Reshape, reshapeKernel);
  table.add(OpKind::Transpose, transposeKernel);
  table.add(OpKind::Concat, concatKernel);
  table.add(OpKind::Split, splitKernel);
  table.add(OpKind::Slice, sliceKernel);
  table.add(OpKind::Gather, gatherKernel);
  table.add(OpKind::Squeeze, squeezeKernel);
  table.add(OpKind::Unsqueeze, unsqueezeKernel);
  table.add(OpKind::Flatten, flattenKernel);
  table.add(OpKind::Expand, expandKernel);
  table.add(OpKind::Tile, tileKernel);
  table.add(OpKind::Shape, shapeKernel);
  table.add(OpKind::Size, sizeKernel);
  table.add(OpKind::Range, rangeKernel);
  table.add(OpKind::ConstantOfShape, constantOfShapeKernel);
  table.add(OpKind::Constant, constantKernel);
  table.add(OpKind::Identity, identityKernel);
  table.add(OpKind::Dropout, dropoutKernel);
  table.add(OpKind::Trilu, triluKernel);
}

} // namespace onnxc
