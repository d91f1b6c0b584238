//===- ir/eval/ConvolutionKernels.cpp - N-D Conv reference kernel ---------===//
//
// Direct convolution over any number of spatial dims, with groups, strides,
// dilations, explicit or automatic padding and an optional bias; sums in
// double. Slow by design: it is the oracle for the patch-embedding Conv of
// vision transformers, not the fast path.
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"

#include <algorithm>

namespace onnxc {
namespace {

struct ConvGeometry {
  int64_t batch = 0, inChannels = 0, outChannels = 0, group = 1;
  std::vector<int64_t> inSpatial, kernel, strides, dilations, padBegin, outSpatial;
};

/// Resolves pads (explicit or auto_pad) and the output size of each spatial dim.
void resolvePadding(const Node &node, ConvGeometry &g) {
  size_t n = g.inSpatial.size();
  ConvPadding padding = convPadding(node, n);
  std::vector<int64_t> &pads = padding.pads;
  g.padBegin.assign(n, 0);
  g.outSpatial.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    int64_t extent = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (padding.isSame()) {
      int64_t out = (g.inSpatial[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + extent - g.inSpatial[i]);
      // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the start.
      pads[i] = padding.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
      pads[i + n] = total - pads[i];
    }
    int64_t padded = g.inSpatial[i] + pads[i] + pads[i + n];
    if (padded < extent)
      fail(node.describe(), ": kernel extent ", extent, " exceeds padded input size ", padded,
           " in spatial dim ", i);
    g.padBegin[i] = pads[i];
    g.outSpatial[i] = (padded - extent) / g.strides[i] + 1;
  }
}

ConvGeometry convGeometry(const Node &node, const Tensor &x, const Tensor &w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    fail(node.describe(), ": conv needs X [N, C, spatial...] and W of the same rank, got ",
         x.typeString(), " and ", w.typeString());
  ConvGeometry g;
  g.batch = x.dims()[0];
  g.inChannels = x.dims()[1];
  g.outChannels = w.dims()[0];
  g.group = node.getInt("group", 1);
  if (g.group <= 0 || g.inChannels % g.group != 0 || g.outChannels % g.group != 0 ||
      w.dims()[1] * g.group != g.inChannels)
    fail(node.describe(), ": conv channels do not fit group ", g.group, " (X ", x.typeString(),
         ", W ", w.typeString(), ")");
  size_t n = x.rank() - 2;
  g.inSpatial.assign(x.dims().begin() + 2, x.dims().end());
  g.kernel.assign(w.dims().begin() + 2, w.dims().end());
  if (node.hasAttr("kernel_shape") && node.getInts("kernel_shape") != g.kernel)
    fail(node.describe(), ": kernel_shape does not match weights ", w.typeString());
  g.strides = convSpatialAttr(node, "strides", n, 1, 1);
  g.dilations = convSpatialAttr(node, "dilations", n, 1, 1);
  resolvePadding(node, g);
  return g;
}

int64_t product(const std::vector<int64_t> &dims) {
  int64_t p = 1;
  for (int64_t d : dims)
    p *= d;
  return p;
}

/// Splits a flat row-major index over `dims` into coordinates.
void unflatten(int64_t flat, const std::vector<int64_t> &dims, std::vector<int64_t> &coords) {
  for (size_t i = dims.size(); i-- > 0;) {
    coords[i] = flat % dims[i];
    flat /= dims[i];
  }
}

void convKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  for (size_t i = 0; i < 2; ++i)
    if (i >= operands.size() || !operands[i] || !operands[i]->hasData())
      fail(node.describe(), ": conv operand ", i == 0 ? "X" : "W", " is missing or has no data");
  const Tensor &x = *operands[0], &w = *operands[1];
  const Tensor *bias = operands.size() > 2 ? operands[2] : nullptr;
  if (!isFloat(x.dtype()) || w.dtype() != x.dtype() || (bias && bias->dtype() != x.dtype()))
    fail(node.describe(), ": conv operands must share one floating type");
  ConvGeometry g = convGeometry(node, x, w);
  if (bias && (!bias->hasData() || bias->rank() != 1 || bias->dims()[0] != g.outChannels))
    fail(node.describe(), ": conv bias must be [", g.outChannels, "], got ", bias->typeString());

  size_t n = g.inSpatial.size();
  int64_t inSize = product(g.inSpatial), outSize = product(g.outSpatial);
  int64_t kernelSize = product(g.kernel);
  int64_t groupIn = g.inChannels / g.group, groupOut = g.outChannels / g.group;
  std::vector<int64_t> outDims = {g.batch, g.outChannels};
  outDims.insert(outDims.end(), g.outSpatial.begin(), g.outSpatial.end());
  results[0] = Tensor(x.dtype(), outDims);
  Tensor &y = results[0];

  std::vector<int64_t> outCoord(n), kernelCoord(n);
  for (int64_t b = 0; b < g.batch; ++b)
    for (int64_t m = 0; m < g.outChannels; ++m) {
      int64_t firstChannel = (m / groupOut) * groupIn;
      for (int64_t o = 0; o < outSize; ++o) {
        unflatten(o, g.outSpatial, outCoord);
        double sum = bias ? bias->elementAsDouble(m) : 0.0;
        for (int64_t k = 0; k < kernelSize; ++k) {
          unflatten(k, g.kernel, kernelCoord);
          int64_t inOffset = 0;
          bool inside = true;
          for (size_t i = 0; i < n && inside; ++i) {
            int64_t pos =
                outCoord[i] * g.strides[i] - g.padBegin[i] + kernelCoord[i] * g.dilations[i];
            inside = pos >= 0 && pos < g.inSpatial[i];
            inOffset = inOffset * g.inSpatial[i] + pos;
          }
          if (!inside)
            continue;
          for (int64_t c = 0; c < groupIn; ++c) {
            int64_t xIndex = (b * g.inChannels + firstChannel + c) * inSize + inOffset;
            int64_t wIndex = (m * groupIn + c) * kernelSize + k;
            sum += x.elementAsDouble(xIndex) * w.elementAsDouble(wIndex);
          }
        }
        y.setElementFromDouble((b * g.outChannels + m) * outSize + o, sum);
      }
    }
}

} // namespace

void registerConvolutionKernels(KernelTable &table) { table.add(OpKind::Conv, convKernel); }

} // namespace onnxc
