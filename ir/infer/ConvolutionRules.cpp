//===- ir/infer/ConvolutionRules.cpp - Conv shape rule --------------------===//
//
// Output size per spatial dim: floor((in + pads - extent) / stride) + 1, with
// extent = (kernel - 1) * dilation + 1, or ceil(in / stride) for SAME_*.
// Symbolic inputs keep a symbolic size where the division is exact (stride 1,
// or a size like seq*8 with stride 8); otherwise the size is unknown.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/CheckedMath.h"
#include "ir/Error.h"
#include "ir/Node.h"
#include "ir/OpAttributes.h"

namespace onnxc {
namespace {

/// ceil(numerator / stride) for a known-nonnegative numerator, when expressible.
Dim divideRoundingUp(const Dim &numerator, int64_t stride) {
  if (std::optional<int64_t> n = numerator.constant())
    return Dim(*n / stride + (*n % stride != 0));
  std::optional<Dim> exact = numerator.divideExactly(Dim(stride));
  return exact ? *exact : Dim::unknown();
}

Dim convOutputDim(const Node &node, const Dim &in, int64_t kernel, int64_t stride, int64_t dilation,
                  int64_t padBegin, int64_t padEnd, bool samePadding) {
  if (samePadding)
    return divideRoundingUp(in, stride);
  int64_t extent = checkedAdd(checkedMul(kernel - 1, dilation), 1);
  Dim padded = in + Dim(padBegin) + Dim(padEnd);
  Dim room = padded - Dim(extent);
  if (std::optional<int64_t> r = room.constant()) {
    if (*r < 0)
      fail(node.describe(), ": kernel extent ", extent, " exceeds padded input size ",
           padded.str());
    return Dim(*r / stride + 1);
  }
  if (room.isUnknown())
    return Dim::unknown();
  std::optional<Dim> steps = room.divideExactly(Dim(stride));
  return steps ? *steps + Dim(1) : Dim::unknown();
}

void inferConv(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 2);
  DType dtype = commonOperandDType(node, {0, 1, 2});
  if (dtype != DType::Unknown && !isFloat(dtype))
    fail(node.describe(), ": conv needs floating point operands, got ", dtypeName(dtype));
  const Shape &x = node.operand(0)->shape();
  const Shape &w = node.operand(1)->shape();
  if (!x.isRanked() || !w.isRanked())
    return setAllResultsUnranked(node, dtype);
  if (x.rank() < 3 || w.rank() != x.rank())
    fail(node.describe(), ": conv needs X [N, C, spatial...] and W of the same rank, got ", x.str(),
         " and ", w.str());
  if (const Value *bias = node.operand(2); bias && bias->shape().isRanked()) {
    if (bias->shape().rank() != 1)
      fail(node.describe(), ": conv bias must be 1-D, got ", bias->shape().str());
    requireSameDim(context, node, bias->shape()[0], w[0], "conv bias length", bias->shape(), w);
  }

  node.result(0)->setType({dtype, convResultShape(context, node, x, w)});
}

} // namespace

Shape convResultShape(InferenceContext &context, const Node &node, const Shape &x, const Shape &w) {
  if (x.rank() < 3 || w.rank() != x.rank())
    fail(node.describe(), ": conv needs X [N, C, spatial...] and W of the same rank, got ", x.str(),
         " and ", w.str());
  int64_t group = node.getInt("group", 1);
  if (group <= 0)
    fail(node.describe(), ": conv group must be positive, got ", group);
  requireSameDim(context, node, x[1], w[1] * Dim(group),
                 "conv input channels (X channels vs W channels * group)", x, w);
  if (std::optional<int64_t> m = w[0].constant(); m && *m % group != 0)
    fail(node.describe(), ": conv output channels ", *m, " are not a multiple of group ", group);
  size_t n = x.rank() - 2;
  std::vector<int64_t> kernel(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (std::optional<int64_t> k = w[2 + i].constant())
      kernel[i] = *k;
  if (node.hasAttr("kernel_shape")) {
    std::vector<int64_t> attr = convSpatialAttr(node, "kernel_shape", n, 1, 1);
    for (size_t i = 0; i < n; ++i) {
      if (kernel[i] >= 0 && kernel[i] != attr[i])
        fail(node.describe(), ": kernel_shape does not match weights ", w.str());
      kernel[i] = attr[i];
    }
  }
  std::vector<int64_t> strides = convSpatialAttr(node, "strides", n, 1, 1);
  std::vector<int64_t> dilations = convSpatialAttr(node, "dilations", n, 1, 1);
  ConvPadding padding = convPadding(node, n);
  const std::vector<int64_t> &pads = padding.pads;
  std::vector<Dim> dims = {x[0], w[0]};
  for (size_t i = 0; i < n; ++i)
    dims.push_back(kernel[i] < 0
                       ? Dim::unknown()
                       : convOutputDim(node, x[2 + i], kernel[i], strides[i], dilations[i], pads[i],
                                       pads[n + i], padding.isSame()));
  return Shape(std::move(dims));
}

void registerConvolutionShapeRules(ShapeRuleTable &table) { table.add(OpKind::Conv, inferConv); }

} // namespace onnxc
