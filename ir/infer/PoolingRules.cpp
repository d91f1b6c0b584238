//===- ir/infer/PoolingRules.cpp - Pad, pool and ConvTranspose shape rules -===//
//
// Pad adds its pads (read through the known contents of the pads and axes
// operands) to each padded axis. A pool's spatial size is
// floor((in + pads - extent) / stride) + 1 (ceil under ceil_mode, less the
// window that would start past the input), or ceil(in / stride) for SAME_*;
// ConvTranspose's is stride * (in - 1) + output_padding + extent - pads,
// in * stride for SAME_*, or output_shape. Symbolic sizes stay symbolic
// where the expression is exact; otherwise the size is unknown.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/PoolingAttributes.h"
#include "ir/infer/KnownContents.h"

namespace onnxc {
namespace {

// --- Pad ----------------------------------------------------------------------

/// The axes Pad pads, normalized: its axes operand's constant contents, or
/// every axis. nullopt when the axes are not known.
std::optional<std::vector<int64_t>> padAxes(const Node &node, InferenceContext &context,
                                            int64_t rank) {
  std::vector<int64_t> axes;
  if (!node.hasOperand(3)) {
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
    return axes;
  }
  std::optional<std::vector<int64_t>> given = constantContents(context, node.operand(3));
  if (!given)
    return std::nullopt;
  for (int64_t axis : *given)
    axes.push_back(normalizeAxisOrFail(node, axis, rank, "pad axis"));
  return axes;
}

void inferPad(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *padsValue = requireIndexOperand(node, 1, "pads");
  if (const Value *fill = node.operand(2); fill && fill->dtype() != DType::Unknown &&
                                           data->dtype() != DType::Unknown &&
                                           fill->dtype() != data->dtype())
    fail(node.describe(), ": pad constant_value is ", dtypeName(fill->dtype()), ", data is ",
         dtypeName(data->dtype()));
  if (node.hasOperand(3))
    requireIndexOperand(node, 3, "axes");
  std::string mode = node.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    fail(node.describe(), ": unknown pad mode '", mode, "'");
  if (!data->shape().isRanked())
    return setResult(node, 0, data->dtype(), Shape());
  const Shape &in = data->shape();
  int64_t rank = int64_t(in.rank());
  std::optional<std::vector<int64_t>> axes = padAxes(node, context, rank);
  std::optional<std::vector<Dim>> pads = contentsOrUnknowns(context, padsValue);
  std::vector<Dim> dims = in.dims();
  if (!axes || !pads) {
    for (Dim &d : dims)
      d = Dim::unknown();
    return setResult(node, 0, data->dtype(), Shape(std::move(dims)));
  }
  size_t n = axes->size();
  if (pads->size() != 2 * n)
    fail(node.describe(), ": pad has ", pads->size(), " pads for ", n, " axes");
  for (size_t i = 0; i < n; ++i) {
    Dim &d = dims[size_t((*axes)[i])];
    const Dim &begin = (*pads)[i], &end = (*pads)[n + i];
    if (begin.isUnknown() || end.isUnknown() || d.isUnknown()) {
      d = Dim::unknown();
      continue;
    }
    d = d + begin + end;
    if (std::optional<int64_t> c = d.constant(); c && *c < 0)
      fail(node.describe(), ": pads remove more than axis ", (*axes)[i], " holds");
  }
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

// --- MaxPool, AveragePool -------------------------------------------------------

Dim poolOutputDim(const Node &node, const PoolAttributes &a, size_t i, const Dim &in) {
  if (std::optional<int64_t> c = in.constant())
    return Dim(poolDim(node, a, i, *c).out);
  if (in.isUnknown())
    return Dim::unknown();
  size_t n = a.kernel.size();
  int64_t stride = a.strides[i];
  if (a.padding.isSame()) {
    if (stride == 1)
      return in;
    std::optional<Dim> exact = in.divideExactly(Dim(stride));
    return exact ? *exact : Dim::unknown();
  }
  Dim room = in + Dim(a.padding.pads[i] + a.padding.pads[n + i] - a.extent(i));
  if (stride == 1)
    return room + Dim(1);
  // ceil_mode differs from floor only when the division is inexact.
  std::optional<Dim> steps = room.divideExactly(Dim(stride));
  return steps ? *steps + Dim(1) : Dim::unknown();
}

void inferPool(Node &node, InferenceContext &) {
  const Value *x = requireNamedOperand(node, 0, "X");
  DType dtype = x->dtype();
  bool integersToo = node.kind() == OpKind::MaxPool;
  if (dtype != DType::Unknown && !isFloat(dtype) &&
      !(integersToo && (dtype == DType::U8 || dtype == DType::I8)))
    fail(node.describe(), ": ", node.opName(), " does not take ", dtypeName(dtype), " inputs");
  if (!x->shape().isRanked())
    return setResult(node, 0, dtype, Shape());
  const Shape &in = x->shape();
  if (in.rank() < 3)
    fail(node.describe(), ": ", node.opName(), " needs X [N, C, spatial...], got ", in.str());
  size_t n = in.rank() - 2;
  PoolAttributes a = poolAttributes(node, n);
  if (a.padding.isSame() && a.ceilMode)
    fail(node.describe(), ": ceil_mode with auto_pad ", a.padding.autoPad, " is not supported");
  std::vector<Dim> dims = {in[0], in[1]};
  for (size_t i = 0; i < n; ++i)
    dims.push_back(poolOutputDim(node, a, i, in[2 + i]));
  setResult(node, 0, dtype, Shape(std::move(dims)));
}

// --- ConvTranspose ----------------------------------------------------------------

void inferConvTranspose(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 2);
  DType dtype = commonOperandDType(node, {0, 1, 2});
  if (dtype != DType::Unknown && !isFloat(dtype))
    fail(node.describe(), ": convtranspose needs floating point operands, got ", dtypeName(dtype));
  const Shape &x = node.operand(0)->shape();
  const Shape &w = node.operand(1)->shape();
  if (!x.isRanked() || !w.isRanked())
    return setAllResultsUnranked(node, dtype);
  if (x.rank() < 3 || w.rank() != x.rank())
    fail(node.describe(), ": convtranspose needs X [N, C, spatial...] and W of the same rank, got ",
         x.str(), " and ", w.str());
  size_t n = x.rank() - 2;
  std::vector<int64_t> kernel(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (std::optional<int64_t> k = w[2 + i].constant())
      kernel[i] = *k;
  ConvTransposeAttributes a = convTransposeAttributes(node, kernel);
  requireSameDim(context, node, x[1], w[0], "convtranspose input channels (X channels vs W dim 0)",
                 x, w);
  if (std::optional<int64_t> c = w[0].constant(); c && *c % a.group != 0)
    fail(node.describe(), ": convtranspose input channels ", *c, " are not a multiple of group ",
         a.group);
  Dim outChannels = w[1] * Dim(a.group);
  if (const Value *bias = node.operand(2); bias && bias->shape().isRanked()) {
    if (bias->shape().rank() != 1)
      fail(node.describe(), ": convtranspose bias must be 1-D, got ", bias->shape().str());
    requireSameDim(context, node, bias->shape()[0], outChannels, "convtranspose bias length",
                   bias->shape(), w);
  }
  std::vector<Dim> dims = {x[0], outChannels};
  for (size_t i = 0; i < n; ++i) {
    const Dim &in = x[2 + i];
    if (a.kernel[i] < 0) {
      dims.push_back(a.outputShape.empty() ? Dim::unknown() : Dim(a.outputShape[i]));
      continue;
    }
    if (std::optional<int64_t> c = in.constant()) {
      dims.push_back(Dim(convTransposeDim(node, a, i, *c).out));
      continue;
    }
    if (!a.outputShape.empty())
      dims.push_back(Dim(a.outputShape[i]));
    else if (a.padding.isSame())
      dims.push_back(in * Dim(a.strides[i]));
    else
      dims.push_back(in * Dim(a.strides[i]) + Dim(a.outputPadding[i] + a.extent(i) - a.strides[i] -
                                                  a.padding.pads[i] - a.padding.pads[n + i]));
  }
  node.result(0)->setType({dtype, Shape(std::move(dims))});
}

} // namespace

void registerPoolingShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::Pad, inferPad);
  table.add(OpKind::MaxPool, inferPool);
  table.add(OpKind::AveragePool, inferPool);
  table.add(OpKind::ConvTranspose, inferConvTranspose);
}

} // namespace onnxc
