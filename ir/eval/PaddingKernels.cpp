//===- ir/eval/PaddingKernels.cpp - Pad reference kernel -------------------===//
//
// Pad in the four modes of opset 19+: constant, reflect (mirror without the
// edge element), edge (repeat it) and wrap (cyclic). Negative pads crop.
// Elements are copied as bytes, so every dtype pads exactly.
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"

#include <cstring>

namespace onnxc {

namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

PadMode padMode(const Node &node) {
  std::string mode = node.getString("mode", "constant");
  if (mode == "constant")
    return PadMode::Constant;
  if (mode == "reflect")
    return PadMode::Reflect;
  if (mode == "edge")
    return PadMode::Edge;
  if (mode == "wrap")
    return PadMode::Wrap;
  fail(node.describe(), ": unknown pad mode '", mode, "'");
}

/// The source index along an axis of `size` for position `i` (already
/// shifted by the leading pad), or -1 for the constant fill.
int64_t sourceIndex(PadMode mode, int64_t i, int64_t size) {
  if (i >= 0 && i < size)
    return i;
  switch (mode) {
  case PadMode::Constant:
    return -1;
  case PadMode::Edge:
    return i < 0 ? 0 : size - 1;
  case PadMode::Wrap:
    return ((i % size) + size) % size;
  case PadMode::Reflect: {
    if (size == 1)
      return 0;
    int64_t period = 2 * (size - 1);
    int64_t r = ((i % period) + period) % period;
    return r < size ? r : period - r;
  }
  }
  return -1;
}

void padKernel(const Node &node, const std::vector<const Tensor *> &operands,
               std::vector<Tensor> &results) {
  const Tensor &data = *operands[0];
  int64_t rank = int64_t(data.rank());
  std::vector<int64_t> padsValues = operands[1]->toInt64Vector();
  std::vector<int64_t> axes;
  if (operands.size() > 3 && operands[3]) {
    for (int64_t axis : operands[3]->toInt64Vector())
      axes.push_back(normalizeAxisOrFail(node, axis, rank, "pad axis"));
  } else {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  }
  size_t n = axes.size();
  if (padsValues.size() != 2 * n)
    fail(node.describe(), ": pad has ", padsValues.size(), " pads for ", n, " axes");
  PadMode mode = padMode(node);
  std::vector<int64_t> begin(size_t(rank), 0), outDims = data.dims();
  for (size_t i = 0; i < n; ++i) {
    size_t axis = size_t(axes[i]);
    begin[axis] += padsValues[i];
    outDims[axis] += padsValues[i] + padsValues[n + i];
    if (outDims[axis] < 0)
      fail(node.describe(), ": pads remove more than axis ", axis, " holds");
    if (mode != PadMode::Constant && data.dims()[axis] == 0 && outDims[axis] > 0)
      fail(node.describe(), ": cannot pad the empty axis ", axis, " in this mode");
  }
  results[0] = Tensor(data.dtype(), outDims);
  Tensor &out = results[0];
  size_t elementSize = dtypeSize(data.dtype());
  std::vector<uint8_t> fill(elementSize, 0);
  if (operands.size() > 2 && operands[2]) {
    const Tensor &value = *operands[2];
    if (value.dtype() != data.dtype() || value.numElements() != 1)
      fail(node.describe(), ": pad constant_value must be one ", dtypeName(data.dtype()),
           " element");
    std::memcpy(fill.data(), value.rawData(), elementSize);
  }
  const auto *src = static_cast<const uint8_t *>(data.rawData());
  auto *dst = static_cast<uint8_t *>(out.rawData());
  std::vector<int64_t> index(size_t(rank), 0);
  for (int64_t flat = 0, total = out.numElements(); flat < total; ++flat) {
    int64_t rest = flat, source = 0;
    bool filled = false;
    for (int64_t axis = rank - 1; axis >= 0; --axis) {
      index[size_t(axis)] = rest % outDims[size_t(axis)];
      rest /= outDims[size_t(axis)];
    }
    for (int64_t axis = 0; axis < rank; ++axis) {
      int64_t s =
          sourceIndex(mode, index[size_t(axis)] - begin[size_t(axis)], data.dims()[size_t(axis)]);
      filled = filled || s < 0;
      source = source * data.dims()[size_t(axis)] + s;
    }
    std::memcpy(dst + size_t(flat) * elementSize,
                filled ? fill.data() : src + size_t(source) * elementSize, elementSize);
  }
}

} // namespace

void registerPaddingKernels(KernelTable &table) { table.add(OpKind::Pad, padKernel); }

} // namespace onnxc
