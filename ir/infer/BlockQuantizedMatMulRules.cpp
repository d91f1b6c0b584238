//===- ir/infer/BlockQuantizedMatMulRules.cpp - Weight-only quantized MatMul shape -===//
//
// onnxc's BlockQuantizedMatMul (docs/IR.md): A f32 [..., M, K] (rank >= 2),
// W i4 or u4 [K, N], W scale f32 [ceil(K / block_size), N], an optional W
// zero point of W's dtype shaped like the scale -> f32 [..., M, N]. It is
// A . DequantizeLinear(W, scale, zero point){axis = 0, block_size}.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

void checkTypes(const Node &node) {
  DType aType = node.operand(0)->dtype(), wType = node.operand(1)->dtype();
  DType scaleType = node.operand(2)->dtype();
  if (aType != DType::Unknown && aType != DType::F32)
    fail(node.describe(), ": block-quantized matmul activation must be f32, got ",
         dtypeName(aType));
  if (wType != DType::Unknown && !isFourBit(wType))
    fail(node.describe(), ": block-quantized matmul weights must be i4 or u4, got ",
         dtypeName(wType));
  if (scaleType != DType::Unknown && scaleType != DType::F32)
    fail(node.describe(), ": block-quantized matmul weight scale must be f32, got ",
         dtypeName(scaleType));
  if (const Value *zero = node.operand(3))
    if (zero->dtype() != DType::Unknown && wType != DType::Unknown && zero->dtype() != wType)
      fail(node.describe(), ": block-quantized matmul weight zero point must be ", dtypeName(wType),
           " like the weights, got ", dtypeName(zero->dtype()));
}

/// The scale (and zero point) must be [ceil(K / block), N].
void checkBlockParameter(InferenceContext &context, const Node &node, size_t index,
                         const char *what, const Shape &weights, int64_t block) {
  const Value *value = node.operand(index);
  if (!value || !value->shape().isRanked() || !weights.isRanked())
    return;
  const Shape &shape = value->shape();
  if (shape.rank() != 2)
    fail(node.describe(), ": block-quantized matmul ", what, " must be 2-D [blocks, N], got ",
         shape.str());
  if (std::optional<int64_t> k = weights[0].constant()) {
    Dim blocks((*k + block - 1) / block);
    requireSameDim(context, node, shape[0], blocks,
                   std::string("block-quantized matmul ") + what + " blocks", shape, weights);
  }
  requireSameDim(context, node, shape[1], weights[1],
                 std::string("block-quantized matmul ") + what + " columns", shape, weights);
}

void inferBlockQuantizedMatMul(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 3);
  checkTypes(node);
  const int64_t block = node.getInt("block_size", 0);
  if (block < 2)
    fail(node.describe(), ": block-quantized matmul block_size must be at least 2, got ", block);
  const Shape &a = node.operand(0)->shape(), &w = node.operand(1)->shape();
  if (a.isRanked() && a.rank() < 2)
    fail(node.describe(), ": block-quantized matmul activation must have rank >= 2, got ", a.str());
  if (w.isRanked() && w.rank() != 2)
    fail(node.describe(), ": block-quantized matmul weights must be 2-D [K, N], got ", w.str());
  checkBlockParameter(context, node, 2, "weight scale", w, block);
  checkBlockParameter(context, node, 3, "weight zero point", w, block);
  if (!a.isRanked() || !w.isRanked())
    return setAllResultsUnranked(node, DType::F32);
  requireSameDim(context, node, a[a.rank() - 1], w[0], "block-quantized matmul depth (K)", a, w);
  std::vector<Dim> dims(a.dims().begin(), a.dims().end());
  dims.back() = w[1];
  node.result(0)->setType({DType::F32, Shape(dims)});
}

} // namespace

void registerBlockQuantizedMatMulShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::BlockQuantizedMatMul, inferBlockQuantizedMatMul);
}

} // namespace onnxc
