//===- ir/infer/AdditiveAttentionRules.cpp - AdditiveAttention shapes ------===//
//
// onnxc's AdditiveAttention (docs/IR.md): query [b, Sq, d], key [b, Sk, d],
// value [b, Sk, dv], score vector [d], optional mask right-aligned to
// [b, Sq, Sk] -> [b, Sq, dv]. The mask broadcasts only over axes that are
// 1 in its shape: the kernel reads it with fixed strides, so a symbolic dim
// that might be 1 at run time is taken to be the full extent (and recorded
// as an assumption the runtime checks).
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

void requireRank(const Node &node, const Shape &shape, size_t rank, const char *what) {
  if (shape.isRanked() && shape.rank() != rank)
    fail(node.describe(), ": additive attention ", what, " must be ", rank, "-D, got ",
         shape.str());
}

void checkMask(Node &node, InferenceContext &context, DType dtype, const Shape &scores) {
  const Value *mask = node.operand(4);
  if (!mask) {
    if (node.hasAttr("mask_fill"))
      fail(node.describe(), ": mask_fill needs a bool mask operand");
    return;
  }
  DType maskType = mask->dtype();
  if (maskType != DType::Unknown && maskType != DType::Bool && dtype != DType::Unknown &&
      maskType != dtype)
    fail(node.describe(), ": additive attention mask must be bool or ", dtypeName(dtype), ", got ",
         dtypeName(maskType));
  if (maskType != DType::Bool && maskType != DType::Unknown && node.hasAttr("mask_fill"))
    fail(node.describe(), ": mask_fill applies to a bool mask only (a float mask is added)");
  const Shape &m = mask->shape();
  if (!m.isRanked() || !scores.isRanked())
    return;
  if (m.rank() == 0 || m.rank() > 3)
    fail(node.describe(), ": additive attention mask must have rank 1 to 3, got ", m.str());
  size_t skip = 3 - m.rank();
  for (size_t i = 0; i < m.rank(); ++i)
    if (!(m[i] == Dim(1)))
      requireSameDim(context, node, m[i], scores[skip + i], "additive attention mask extent", m,
                     scores);
}

void inferAdditiveAttention(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 4);
  DType dtype = commonOperandDType(node, {0, 1, 2, 3});
  if (dtype != DType::Unknown && !isFloat(dtype))
    fail(node.describe(), ": additive attention needs floating point operands, got ",
         dtypeName(dtype));
  (void)node.getFloat("mask_fill", 0.0f); // throws on a non-number
  const Shape &q = node.operand(0)->shape(), &k = node.operand(1)->shape(),
              &v = node.operand(2)->shape(), &w = node.operand(3)->shape();
  requireRank(node, q, 3, "query");
  requireRank(node, k, 3, "key");
  requireRank(node, v, 3, "value");
  requireRank(node, w, 1, "score vector");
  if (!q.isRanked() || !k.isRanked() || !v.isRanked() || !w.isRanked()) {
    checkMask(node, context, dtype, Shape::unranked());
    return setAllResultsUnranked(node, dtype);
  }
  requireSameDim(context, node, q[0], k[0], "additive attention batch", q, k);
  requireSameDim(context, node, q[0], v[0], "additive attention batch", q, v);
  requireSameDim(context, node, k[1], v[1], "additive attention key/value length", k, v);
  requireSameDim(context, node, q[2], k[2], "additive attention query/key size", q, k);
  requireSameDim(context, node, q[2], w[0], "additive attention score vector size", q, w);
  checkMask(node, context, dtype, Shape({q[0], q[1], k[1]}));
  node.result(0)->setType({dtype, Shape({q[0], q[1], v[2]})});
}

} // namespace

void registerAdditiveAttentionShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::AdditiveAttention, inferAdditiveAttention);
}

} // namespace onnxc
