//===- ir/infer/QuantizedGemmRules.cpp - Quantized MatMul and Conv shapes -===//
//
// onnxc's DynamicQuantizedMatMul (docs/IR.md): A f32 [..., M, K] (rank >= 2),
// W s8 or u8 [K, N], W scale f32 [] / [1] / [N], optional W zero point of
// W's dtype shaped like a scale, optional bias f32 [N] -> f32 [..., M, N].
// QuantizedMatMul has an A scale (f32) and A zero point (u8/i8), each one
// value, between A and W. `transpose_w = 1` gives W as [N, K].
// QuantizedConv: Conv's result shape, X f32, W s8/u8, the W scale and zero
// point [] / [1] / [M], bias f32 [M] -> f32.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

/// A per-tensor ([] or [1]) or per-column ([N]) parameter of the weights.
/// Where the operands of the two ops are.
struct QuantizedMatMulOperands {
  size_t weights, weightScale, weightZero, bias;
};

void checkColumnParameter(InferenceContext &context, const Node &node, size_t index,
                          const char *what, const Shape &weights, const Dim &columns) {
  const Value *value = node.operand(index);
  if (!value)
    return;
  const Shape &shape = value->shape();
  if (!shape.isRanked())
    return;
  if (shape.rank() > 1)
    fail(node.describe(), ": quantized matmul ", what, " must be a scalar or 1-D, got ",
         shape.str());
  if (shape.rank() == 1 && !(shape[0] == Dim(1)) && weights.isRanked())
    requireSameDim(context, node, shape[0], columns, std::string("quantized matmul ") + what, shape,
                   weights);
}

void inferQuantizedMatMul(Node &node, InferenceContext &context,
                          const QuantizedMatMulOperands &at) {
  requireOperandsPresent(node, at.weightScale + 1);
  DType aType = node.operand(0)->dtype(), wType = node.operand(at.weights)->dtype();
  DType scaleType = node.operand(at.weightScale)->dtype();
  if (aType != DType::Unknown && aType != DType::F32)
    fail(node.describe(), ": quantized matmul activation must be f32, got ", dtypeName(aType));
  if (wType != DType::Unknown && wType != DType::I8 && wType != DType::U8)
    fail(node.describe(), ": quantized matmul weights must be i8 or u8, got ", dtypeName(wType));
  if (scaleType != DType::Unknown && scaleType != DType::F32)
    fail(node.describe(), ": quantized matmul weight scale must be f32, got ",
         dtypeName(scaleType));
  if (const Value *zero = node.operand(at.weightZero)) {
    DType zeroType = zero->dtype();
    if (zeroType != DType::Unknown && wType != DType::Unknown && zeroType != wType)
      fail(node.describe(), ": quantized matmul weight zero point must be ", dtypeName(wType),
           " like the weights, got ", dtypeName(zeroType));
  }
  const Value *bias = node.operand(at.bias);
  if (bias && bias->dtype() != DType::Unknown && bias->dtype() != DType::F32)
    fail(node.describe(), ": quantized matmul bias must be f32, got ", dtypeName(bias->dtype()));

  const Shape &a = node.operand(0)->shape(), &w = node.operand(at.weights)->shape();
  if (a.isRanked() && a.rank() < 2)
    fail(node.describe(), ": quantized matmul activation must have rank >= 2, got ", a.str());
  const bool transposed = node.getInt("transpose_w", 0) != 0;
  if (w.isRanked() && w.rank() != 2)
    fail(node.describe(), ": quantized matmul weights must be 2-D ",
         transposed ? "[N, K]" : "[K, N]", ", got ", w.str());
  Dim depth = w.isRanked() ? w[transposed ? 1 : 0] : Dim::unknown();
  Dim columns = w.isRanked() ? w[transposed ? 0 : 1] : Dim::unknown();
  checkColumnParameter(context, node, at.weightScale, "weight scale", w, columns);
  checkColumnParameter(context, node, at.weightZero, "weight zero point", w, columns);
  const Value *scale = node.operand(at.weightScale), *zero = node.operand(at.weightZero);
  if (zero && scale->shape().isRanked() && zero->shape().isRanked() &&
      provablyDifferent(scale->shape().numElements(), zero->shape().numElements()))
    fail(node.describe(), ": quantized matmul weight scale ", scale->shape().str(),
         " and zero point ", zero->shape().str(), " must have the same shape");
  if (bias && bias->shape().isRanked()) {
    if (bias->shape().rank() != 1)
      fail(node.describe(), ": quantized matmul bias must be 1-D [N], got ", bias->shape().str());
    if (w.isRanked())
      requireSameDim(context, node, bias->shape()[0], columns, "quantized matmul bias",
                     bias->shape(), w);
  }
  if (!a.isRanked() || !w.isRanked())
    return setAllResultsUnranked(node, DType::F32);
  requireSameDim(context, node, a[a.rank() - 1], depth, "quantized matmul depth (K)", a, w);
  std::vector<Dim> dims(a.dims().begin(), a.dims().end());
  dims.back() = columns;
  node.result(0)->setType({DType::F32, Shape(dims)});
}

void inferDynamicQuantizedMatMul(Node &node, InferenceContext &context) {
  inferQuantizedMatMul(node, context, {1, 2, 3, 4});
}

/// A static activation's scale (f32) and zero point (u8/i8), one value each,
/// at operands 1 and 2.
void checkActivationParameters(const Node &node, const char *op) {
  requireOperandsPresent(node, 5);
  const Value *scale = node.operand(1), *zero = node.operand(2);
  if (scale->dtype() != DType::Unknown && scale->dtype() != DType::F32)
    fail(node.describe(), ": ", op, " activation scale must be f32, got ",
         dtypeName(scale->dtype()));
  if (zero->dtype() != DType::Unknown && zero->dtype() != DType::U8 && zero->dtype() != DType::I8)
    fail(node.describe(), ": ", op, " activation zero point must be u8 or i8, got ",
         dtypeName(zero->dtype()));
  for (const Value *parameter : {scale, zero})
    if (parameter->shape().isRanked() &&
        provablyDifferent(parameter->shape().numElements(), Dim(1)))
      fail(node.describe(), ": ", op,
           " activation scale and zero point must be one value each, got ",
           parameter->shape().str());
}

void inferStaticQuantizedMatMul(Node &node, InferenceContext &context) {
  checkActivationParameters(node, "quantized matmul");
  inferQuantizedMatMul(node, context, {3, 4, 5, 6});
}

/// A weight scale or zero point of QuantizedConv: [] / [1] / [M].
void checkChannelParameter(InferenceContext &context, const Node &node, const Value *value,
                           const char *what, const Shape &w) {
  if (!value || !value->shape().isRanked())
    return;
  const Shape &shape = value->shape();
  if (shape.rank() > 1)
    fail(node.describe(), ": quantized conv ", what, " must be a scalar or 1-D, got ", shape.str());
  if (shape.rank() == 1 && !(shape[0] == Dim(1)) && w.isRanked())
    requireSameDim(context, node, shape[0], w[0], std::string("quantized conv ") + what, shape, w);
}

void inferQuantizedConv(Node &node, InferenceContext &context) {
  checkActivationParameters(node, "quantized conv");
  const Value *x = node.operand(0), *w = node.operand(3), *scale = node.operand(4);
  const Value *zero = node.operand(5), *bias = node.operand(6);
  if (x->dtype() != DType::Unknown && x->dtype() != DType::F32)
    fail(node.describe(), ": quantized conv input must be f32, got ", dtypeName(x->dtype()));
  if (w->dtype() != DType::Unknown && w->dtype() != DType::I8 && w->dtype() != DType::U8)
    fail(node.describe(), ": quantized conv weights must be i8 or u8, got ", dtypeName(w->dtype()));
  if (scale->dtype() != DType::Unknown && scale->dtype() != DType::F32)
    fail(node.describe(), ": quantized conv weight scale must be f32, got ",
         dtypeName(scale->dtype()));
  if (zero && zero->dtype() != DType::Unknown && w->dtype() != DType::Unknown &&
      zero->dtype() != w->dtype())
    fail(node.describe(), ": quantized conv weight zero point must be ", dtypeName(w->dtype()),
         " like the weights, got ", dtypeName(zero->dtype()));
  if (bias && bias->dtype() != DType::Unknown && bias->dtype() != DType::F32)
    fail(node.describe(), ": quantized conv bias must be f32, got ", dtypeName(bias->dtype()));
  const Shape &xs = x->shape(), &ws = w->shape();
  checkChannelParameter(context, node, scale, "weight scale", ws);
  checkChannelParameter(context, node, zero, "weight zero point", ws);
  if (bias && bias->shape().isRanked()) {
    if (bias->shape().rank() != 1)
      fail(node.describe(), ": quantized conv bias must be 1-D [M], got ", bias->shape().str());
    if (ws.isRanked())
      requireSameDim(context, node, bias->shape()[0], ws[0], "quantized conv bias", bias->shape(),
                     ws);
  }
  if (!xs.isRanked() || !ws.isRanked())
    return setAllResultsUnranked(node, DType::F32);
  node.result(0)->setType({DType::F32, convResultShape(context, node, xs, ws)});
}

} // namespace

void registerQuantizedGemmShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::DynamicQuantizedMatMul, inferDynamicQuantizedMatMul);
  table.add(OpKind::QuantizedMatMul, inferStaticQuantizedMatMul);
  table.add(OpKind::QuantizedConv, inferQuantizedConv);
}

} // namespace onnxc
