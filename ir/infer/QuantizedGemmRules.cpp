//===- ir/infer/QuantizedGemmRules.cpp - DynamicQuantizedMatMul shapes ----===//
//
// onnxc's DynamicQuantizedMatMul (docs/IR.md): A f32 [..., M, K] (rank >= 2),
// W s8 or u8 [K, N], W scale f32 [] / [1] / [N], optional W zero point of
// W's dtype shaped like a scale, optional bias f32 [N] -> f32 [..., M, N].
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

/// A per-tensor ([] or [1]) or per-column ([N]) parameter of the weights.
void checkColumnParameter(InferenceContext &context, const Node &node, size_t index,
                          const char *what, const Shape &weights) {
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
    requireSameDim(context, node, shape[0], weights[1], std::string("quantized matmul ") + what,
                   shape, weights);
}

void inferDynamicQuantizedMatMul(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 3);
  DType aType = node.operand(0)->dtype(), wType = node.operand(1)->dtype();
  DType scaleType = node.operand(2)->dtype();
  if (aType != DType::Unknown && aType != DType::F32)
    fail(node.describe(), ": quantized matmul activation must be f32, got ", dtypeName(aType));
  if (wType != DType::Unknown && wType != DType::I8 && wType != DType::U8)
    fail(node.describe(), ": quantized matmul weights must be i8 or u8, got ", dtypeName(wType));
  if (scaleType != DType::Unknown && scaleType != DType::F32)
    fail(node.describe(), ": quantized matmul weight scale must be f32, got ",
         dtypeName(scaleType));
  if (const Value *zero = node.operand(3)) {
    DType zeroType = zero->dtype();
    if (zeroType != DType::Unknown && wType != DType::Unknown && zeroType != wType)
      fail(node.describe(), ": quantized matmul weight zero point must be ", dtypeName(wType),
           " like the weights, got ", dtypeName(zeroType));
  }
  const Value *bias = node.operand(4);
  if (bias && bias->dtype() != DType::Unknown && bias->dtype() != DType::F32)
    fail(node.describe(), ": quantized matmul bias must be f32, got ", dtypeName(bias->dtype()));

  const Shape &a = node.operand(0)->shape(), &w = node.operand(1)->shape();
  if (a.isRanked() && a.rank() < 2)
    fail(node.describe(), ": quantized matmul activation must have rank >= 2, got ", a.str());
  if (w.isRanked() && w.rank() != 2)
    fail(node.describe(), ": quantized matmul weights must be 2-D [K, N], got ", w.str());
  checkColumnParameter(context, node, 2, "weight scale", w);
  checkColumnParameter(context, node, 3, "weight zero point", w);
  const Value *scale = node.operand(2), *zero = node.operand(3);
  if (zero && scale->shape().isRanked() && zero->shape().isRanked() &&
      provablyDifferent(scale->shape().numElements(), zero->shape().numElements()))
    fail(node.describe(), ": quantized matmul weight scale ", scale->shape().str(),
         " and zero point ", zero->shape().str(), " must have the same shape");
  if (bias && bias->shape().isRanked()) {
    if (bias->shape().rank() != 1)
      fail(node.describe(), ": quantized matmul bias must be 1-D [N], got ", bias->shape().str());
    if (w.isRanked())
      requireSameDim(context, node, bias->shape()[0], w[1], "quantized matmul bias", bias->shape(),
                     w);
  }
  if (!a.isRanked() || !w.isRanked())
    return setAllResultsUnranked(node, DType::F32);
  requireSameDim(context, node, a[a.rank() - 1], w[0], "quantized matmul depth (K)", a, w);
  std::vector<Dim> dims(a.dims().begin(), a.dims().end());
  dims.back() = w[1];
  node.result(0)->setType({DType::F32, Shape(dims)});
}

} // namespace

void registerQuantizedGemmShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::DynamicQuantizedMatMul, inferDynamicQuantizedMatMul);
}

} // namespace onnxc
