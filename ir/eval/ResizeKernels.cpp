//===- ir/eval/ResizeKernels.cpp - Resize reference kernel -----------------===//
//
// Resize as separable interpolation: each resized axis maps an output index
// to a source coordinate (ir/PoolingAttributes.h) and 1, 2 or 4 taps with
// weights (nearest, linear, cubic; more under antialias, whose filter a
// downscale stretches by 1 / scale); an output element is the weighted sum
// over every combination of its axes' taps, in double. Axes outside `axes`
// are copied.
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/PoolingAttributes.h"

namespace onnxc {

namespace {

const Tensor *givenOperand(const std::vector<const Tensor *> &operands, size_t i) {
  if (i >= operands.size() || !operands[i] || operands[i]->numElements() == 0)
    return nullptr;
  return operands[i];
}

/// Per axis, the region of interest in normalized input coordinates: the
/// roi operand's under tf_crop_and_resize, else [0, 1].
struct ResizeRoi {
  std::vector<double> start, end;
};

ResizeRoi resizeRoi(const Node &node, const ResizeAttributes &a, const std::vector<int64_t> &axes,
                    const Tensor *roiTensor, int64_t rank) {
  std::vector<double> roiStart(size_t(rank), 0.0), roiEnd(size_t(rank), 1.0);
  if (a.coordinates == ResizeCoordinates::TfCropAndResize) {
    if (!roiTensor || roiTensor->numElements() != int64_t(2 * axes.size()))
      fail(node.describe(), ": tf_crop_and_resize needs roi of ", 2 * axes.size(), " values");
    for (size_t i = 0; i < axes.size(); ++i) {
      roiStart[size_t(axes[i])] = roiTensor->elementAsDouble(int64_t(i));
      roiEnd[size_t(axes[i])] = roiTensor->elementAsDouble(int64_t(axes.size() + i));
    }
  }
  return {std::move(roiStart), std::move(roiEnd)};
}

/// The taps of every output index of every resized axis (none for the
/// other axes).
std::vector<std::vector<ResizeTaps>>
resizeAxisTaps(const ResizeAttributes &a, const std::vector<int64_t> &axes,
               const ResizeShape &shape, const std::vector<int64_t> &inDims, const ResizeRoi &roi) {
  std::vector<std::vector<ResizeTaps>> taps(inDims.size());
  for (int64_t axis : axes) {
    size_t d = size_t(axis);
    for (int64_t o = 0; o < shape.outDims[d]; ++o)
      taps[d].push_back(
          resizeTaps(a,
                     resizeSourceCoordinate(a, double(o), shape.scales[d], inDims[d],
                                            shape.outDims[d], roi.start[d], roi.end[d]),
                     inDims[d], shape.scales[d]));
  }
  return taps;
}

void resizeKernel(const Node &node, const std::vector<const Tensor *> &operands,
                  std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  ResizeAttributes a = resizeAttributes(node);
  int64_t rank = int64_t(x.rank());
  std::vector<int64_t> axes = resizeAxes(node, a, rank);
  const Tensor *roiTensor = givenOperand(operands, 1);
  const Tensor *scalesTensor = givenOperand(operands, 2);
  const Tensor *sizesTensor = givenOperand(operands, 3);
  std::vector<float> scales;
  std::vector<int64_t> sizes;
  if (scalesTensor)
    for (int64_t i = 0; i < scalesTensor->numElements(); ++i)
      scales.push_back(float(scalesTensor->elementAsDouble(i)));
  if (sizesTensor)
    sizes = sizesTensor->toInt64Vector();
  ResizeShape shape = resizeShape(node, a, x.dims(), scalesTensor ? &scales : nullptr,
                                  sizesTensor ? &sizes : nullptr);
  ResizeRoi roi = resizeRoi(node, a, axes, roiTensor, rank);
  std::vector<std::vector<ResizeTaps>> taps = resizeAxisTaps(a, axes, shape, x.dims(), roi);
  results[0] = Tensor(x.dtype(), shape.outDims);
  Tensor &y = results[0];
  size_t k = axes.size();
  std::vector<int64_t> tapCounts(k);
  int64_t combinations = 1;
  for (size_t i = 0; i < k; ++i) {
    tapCounts[i] = resizeTapCount(a, shape.scales[size_t(axes[i])]);
    combinations *= tapCounts[i];
  }
  std::vector<int64_t> inStrides(static_cast<size_t>(rank), 1), outIndex(static_cast<size_t>(rank));
  for (int64_t i = rank - 1; i > 0; --i)
    inStrides[size_t(i - 1)] = inStrides[size_t(i)] * x.dims()[size_t(i)];
  for (int64_t flat = 0, total = y.numElements(); flat < total; ++flat) {
    int64_t rest = flat;
    for (int64_t i = rank - 1; i >= 0; --i) {
      outIndex[size_t(i)] = rest % shape.outDims[size_t(i)];
      rest /= shape.outDims[size_t(i)];
    }
    bool outside = false;
    int64_t base = 0;
    for (int64_t i = 0; i < rank; ++i)
      if (taps[size_t(i)].empty())
        base += outIndex[size_t(i)] * inStrides[size_t(i)];
      else
        outside = outside || taps[size_t(i)][size_t(outIndex[size_t(i)])].outside;
    if (outside) {
      y.setElementFromDouble(flat, a.extrapolation);
      continue;
    }
    double sum = 0;
    for (int64_t c = 0; c < combinations; ++c) {
      double weight = 1;
      int64_t offset = base, code = c;
      for (size_t i = 0; i < k; ++i) {
        size_t d = size_t(axes[i]);
        const ResizeTaps &t = taps[d][size_t(outIndex[d])];
        size_t tap = size_t(code % tapCounts[i]);
        code /= tapCounts[i];
        weight *= t.weight[tap];
        offset += t.index[tap] * inStrides[d];
      }
      if (weight != 0)
        sum += weight * x.elementAsDouble(offset);
    }
    y.setElementFromDouble(flat, sum);
  }
}

} // namespace

void registerResizeKernels(KernelTable &table) { table.add(OpKind::Resize, resizeKernel); }

} // namespace onnxc
