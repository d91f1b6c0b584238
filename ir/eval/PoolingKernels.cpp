//===- ir/eval/PoolingKernels.cpp - MaxPool, AveragePool, ConvTranspose ----===//
//
// Direct loops over any number of spatial dims, summing in double; the
// oracle for the lowerings, not a fast path. A pool window's taps in the
// padding are skipped; AveragePool divides by the taps inside the input,
// or with count_include_pad by those inside the input and its explicit
// pads (a ceil_mode window hanging past the end pad does not count the
// overhang). ConvTranspose scatters each input element into the output.
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/PoolingAttributes.h"

#include <limits>

namespace onnxc {

namespace {

int64_t product(const std::vector<int64_t> &dims, size_t begin = 0) {
  int64_t p = 1;
  for (size_t i = begin; i < dims.size(); ++i)
    p *= dims[i];
  return p;
}

void unflatten(int64_t flat, const std::vector<int64_t> &dims, std::vector<int64_t> &coords) {
  for (size_t i = dims.size(); i-- > 0;) {
    coords[i] = flat % dims[i];
    flat /= dims[i];
  }
}

void poolKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  const Tensor &x = *operands[0];
  if (x.rank() < 3)
    fail(node.describe(), ": ", node.opName(), " needs X [N, C, spatial...], got ", x.typeString());
  bool isMax = node.kind() == OpKind::MaxPool;
  size_t n = x.rank() - 2;
  PoolAttributes a = poolAttributes(node, n);
  std::vector<int64_t> inSpatial(x.dims().begin() + 2, x.dims().end()), outSpatial, padBegin;
  for (size_t i = 0; i < n; ++i) {
    WindowDim d = poolDim(node, a, i, inSpatial[i]);
    outSpatial.push_back(d.out);
    padBegin.push_back(d.padBegin);
  }
  // The end of the explicit (or automatic) padding on each dim.
  std::vector<int64_t> paddedEnd(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t padEnd = a.padding.isSame() ? (outSpatial[i] - 1) * a.strides[i] + a.extent(i) -
                                              inSpatial[i] - padBegin[i]
                                        : a.padding.pads[n + i];
    paddedEnd[i] = inSpatial[i] + std::max<int64_t>(padEnd, 0);
  }
  std::vector<int64_t> outDims = {x.dims()[0], x.dims()[1]};
  outDims.insert(outDims.end(), outSpatial.begin(), outSpatial.end());
  results[0] = Tensor(x.dtype(), outDims);
  Tensor &y = results[0];
  int64_t planes = x.dims()[0] * x.dims()[1], inSize = product(inSpatial),
          outSize = product(outSpatial), taps = product(a.kernel);
  std::vector<int64_t> outCoord(n), tapCoord(n);
  for (int64_t plane = 0; plane < planes; ++plane)
    for (int64_t o = 0; o < outSize; ++o) {
      unflatten(o, outSpatial, outCoord);
      double best = -std::numeric_limits<double>::infinity(), sum = 0;
      int64_t inside = 0, counted = 0;
      for (int64_t t = 0; t < taps; ++t) {
        unflatten(t, a.kernel, tapCoord);
        int64_t offset = 0;
        bool in = true, inPads = true;
        for (size_t i = 0; i < n; ++i) {
          int64_t pos = outCoord[i] * a.strides[i] - padBegin[i] + tapCoord[i] * a.dilations[i];
          in = in && pos >= 0 && pos < inSpatial[i];
          inPads = inPads && pos < paddedEnd[i];
          offset = offset * inSpatial[i] + pos;
        }
        counted += inPads;
        if (!in)
          continue;
        double v = x.elementAsDouble(plane * inSize + offset);
        ++inside;
        sum += v;
        if (v > best || v != v)
          best = v;
      }
      double value = isMax ? best : sum / double(a.countIncludePad ? counted : inside);
      // A window wholly in the padding (pads as large as the kernel) has no
      // maximum; an integer result cannot hold -inf.
      if (isMax && inside == 0 && !isFloat(x.dtype()))
        value = 0;
      y.setElementFromDouble(plane * outSize + o, value);
    }
}

void convTransposeKernel(const Node &node, const std::vector<const Tensor *> &operands,
                         std::vector<Tensor> &results) {
  const Tensor &x = *operands[0], &w = *operands[1];
  const Tensor *bias = operands.size() > 2 ? operands[2] : nullptr;
  if (!isFloat(x.dtype()) || w.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype()))
    fail(node.describe(), ": convtranspose operands must share one floating type");
  if (x.rank() < 3 || w.rank() != x.rank())
    fail(node.describe(), ": convtranspose needs X [N, C, spatial...] and W of the same rank, got ",
         x.typeString(), " and ", w.typeString());
  size_t n = x.rank() - 2;
  ConvTransposeAttributes a =
      convTransposeAttributes(node, std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  int64_t batch = x.dims()[0], inChannels = x.dims()[1], group = a.group;
  if (w.dims()[0] != inChannels || inChannels % group != 0)
    fail(node.describe(), ": convtranspose channels do not fit group ", group, " (X ",
         x.typeString(), ", W ", w.typeString(), ")");
  int64_t groupOut = w.dims()[1], outChannels = groupOut * group, groupIn = inChannels / group;
  if (bias && (bias->rank() != 1 || bias->dims()[0] != outChannels))
    fail(node.describe(), ": convtranspose bias must be [", outChannels, "], got ",
         bias->typeString());
  std::vector<int64_t> inSpatial(x.dims().begin() + 2, x.dims().end()), outSpatial, padBegin;
  for (size_t i = 0; i < n; ++i) {
    WindowDim d = convTransposeDim(node, a, i, inSpatial[i]);
    outSpatial.push_back(d.out);
    padBegin.push_back(d.padBegin);
  }
  std::vector<int64_t> outDims = {batch, outChannels};
  outDims.insert(outDims.end(), outSpatial.begin(), outSpatial.end());
  int64_t inSize = product(inSpatial), outSize = product(outSpatial), taps = product(a.kernel);
  std::vector<double> sums(size_t(batch * outChannels * outSize), 0.0);
  std::vector<int64_t> inCoord(n), tapCoord(n);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < inChannels; ++c) {
      int64_t g = c / groupIn;
      for (int64_t p = 0; p < inSize; ++p) {
        unflatten(p, inSpatial, inCoord);
        double xv = x.elementAsDouble((b * inChannels + c) * inSize + p);
        for (int64_t t = 0; t < taps; ++t) {
          unflatten(t, a.kernel, tapCoord);
          int64_t offset = 0;
          bool inside = true;
          for (size_t i = 0; i < n && inside; ++i) {
            int64_t pos = inCoord[i] * a.strides[i] + tapCoord[i] * a.dilations[i] - padBegin[i];
            inside = pos >= 0 && pos < outSpatial[i];
            offset = offset * outSpatial[i] + pos;
          }
          if (!inside)
            continue;
          for (int64_t m = 0; m < groupOut; ++m) {
            int64_t channel = g * groupOut + m;
            double wv = w.elementAsDouble((c * groupOut + m) * taps + t);
            sums[size_t((b * outChannels + channel) * outSize + offset)] += xv * wv;
          }
        }
      }
    }
  results[0] = Tensor(x.dtype(), outDims);
  for (int64_t i = 0; i < int64_t(sums.size()); ++i) {
    double value = sums[size_t(i)];
    if (bias)
      value += bias->elementAsDouble((i / outSize) % outChannels);
    results[0].setElementFromDouble(i, value);
  }
}

} // namespace

void registerPoolingKernels(KernelTable &table) {
  table.add(OpKind::MaxPool, poolKernel);
  table.add(OpKind::AveragePool, poolKernel);
  table.add(OpKind::ConvTranspose, convTransposeKernel);
}

} // namespace onnxc
