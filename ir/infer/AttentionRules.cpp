//===- ir/infer/AttentionRules.cpp - Attention, RotaryEmbedding rules -----===//
//
// Shapes of the opset-23 Attention op: Q, K, V are all 4-D
// [batch, heads, seq, head_size] or all 3-D [batch, seq, heads*head_size]
// (with q_num_heads / kv_num_heads); the past caches extend the key length.
// onnxc's own attribute seq_first = 1 makes the 3-D form [seq, batch,
// heads*head_size] (torch's nn.MultiheadAttention layout), for Y too.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include "ir/Error.h"
#include "ir/Node.h"

namespace onnxc {
namespace {

/// `hidden / heads` when it divides exactly; a provable remainder is an error.
Dim headSizeOf(const Node &node, const Dim &hidden, int64_t heads, const char *what) {
  if (std::optional<int64_t> h = hidden.constant(); h && *h % heads != 0)
    fail(node.describe(), ": hidden size ", *h, " of ", what, " is not a multiple of ", heads,
         " heads");
  std::optional<Dim> size = hidden.divideExactly(Dim(heads));
  return size ? *size : Dim::unknown();
}

int64_t positiveIntAttr(const Node &node, const char *name) {
  int64_t value = node.requireInt(name);
  if (value <= 0)
    fail(node.describe(), ": attribute '", name, "' must be positive, got ", value);
  return value;
}

/// Attention shapes in the 4-D view: [batch, heads, seq, size] of Q, K, V.
struct AttentionDims {
  Dim batch, qHeads, kvHeads, qSeq, kvSeq, headSize, kHeadSize, vHeadSize;
};

AttentionDims attentionDims(InferenceContext &context, const Node &node, const Shape &q,
                            const Shape &k, const Shape &v) {
  AttentionDims d;
  bool seqFirst = node.getInt("seq_first", 0) != 0;
  if (seqFirst && q.rank() != 3)
    fail(node.describe(), ": seq_first needs the 3-D form, got Q ", q.str());
  size_t batchAxis = seqFirst ? 1 : 0, seqAxis = seqFirst ? 0 : 1;
  d.batch = q[batchAxis];
  if (q.rank() == 4) {
    d.qHeads = q[1], d.qSeq = q[2], d.headSize = q[3];
    d.kvHeads = k[1], d.kvSeq = k[2], d.kHeadSize = k[3], d.vHeadSize = v[3];
    requireSameDim(context, node, k[1], v[1], "attention key/value head count", k, v);
    return d;
  }
  int64_t qHeads = positiveIntAttr(node, "q_num_heads");
  int64_t kvHeads = positiveIntAttr(node, "kv_num_heads");
  d.qHeads = Dim(qHeads), d.kvHeads = Dim(kvHeads);
  d.qSeq = q[seqAxis], d.kvSeq = k[seqAxis];
  d.headSize = headSizeOf(node, q[2], qHeads, "Q");
  d.kHeadSize = headSizeOf(node, k[2], kvHeads, "K");
  d.vHeadSize = headSizeOf(node, v[2], kvHeads, "V");
  return d;
}

/// The mask broadcasts to the scores [batch, qHeads, qSeq, total], except
/// that its last dim may be shorter than total (the keys past it are
/// masked, as the ONNX reference does); the compiled kernels read it so.
void checkMaskShape(InferenceContext &context, const Node &node, const std::vector<Dim> &scores) {
  const Value *mask = node.operand(3);
  if (!mask || !mask->shape().isRanked())
    return;
  const Shape &shape = mask->shape();
  if (shape.rank() == 0 || shape.rank() > 4)
    fail(node.describe(), ": attention mask must have rank 1 to 4, got ", shape.str());
  size_t offset = 4 - shape.rank();
  static const char *names[] = {"batch", "head", "query", "key"};
  for (size_t i = 0; i < shape.rank(); ++i) {
    const Dim &dim = shape[i], &expected = scores[offset + i];
    std::string what = std::string("attention mask ") + names[offset + i] + " dim";
    if (offset + i == 3)
      context.assumeAtMost(node, dim, expected, what);
    else
      context.assumeBroadcastsTo(node, dim, expected, what);
  }
}

void inferAttention(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 3);
  DType dtype = commonOperandDType(node, {0, 1, 2, 4, 5});
  if (dtype != DType::Unknown && !isFloat(dtype))
    fail(node.describe(), ": attention needs floating point Q, K, V, got ", dtypeName(dtype));
  if (const Value *mask = node.operand(3); mask && mask->dtype() != DType::Unknown &&
                                           mask->dtype() != DType::Bool &&
                                           dtype != DType::Unknown && mask->dtype() != dtype)
    fail(node.describe(), ": attention mask must be bool or ", dtypeName(dtype), ", got ",
         dtypeName(mask->dtype()));
  const Shape &q = node.operand(0)->shape();
  const Shape &k = node.operand(1)->shape();
  const Shape &v = node.operand(2)->shape();
  if (!q.isRanked() || !k.isRanked() || !v.isRanked())
    return setAllResultsUnranked(node, dtype);
  if (!((q.rank() == 3 || q.rank() == 4) && k.rank() == q.rank() && v.rank() == q.rank()))
    fail(node.describe(), ": attention Q, K, V must all be 3-D or all 4-D, got ", q.str(), ", ",
         k.str(), ", ", v.str());

  AttentionDims d = attentionDims(context, node, q, k, v);
  bool seqFirst = node.getInt("seq_first", 0) != 0;
  size_t batchAxis = seqFirst ? 1 : 0, seqAxis = q.rank() == 4 ? 2 : seqFirst ? 0 : 1;
  requireSameDim(context, node, q[batchAxis], k[batchAxis], "attention batch", q, k);
  requireSameDim(context, node, q[batchAxis], v[batchAxis], "attention batch", q, v);
  requireSameDim(context, node, d.headSize, d.kHeadSize, "attention query/key head size", q, k);
  requireSameDim(context, node, d.kvSeq, v[seqAxis], "attention key/value length", k, v);
  std::optional<int64_t> qHeads = d.qHeads.constant(), kvHeads = d.kvHeads.constant();
  if (qHeads && kvHeads && (*kvHeads == 0 || *qHeads % *kvHeads != 0))
    fail(node.describe(), ": ", *qHeads, " query heads are not a multiple of ", *kvHeads,
         " key/value heads");

  Dim total = d.kvSeq;
  if (const Value *pastKey = node.operand(4)) {
    const Shape &past = pastKey->shape();
    if (past.isRanked() && past.rank() != 4)
      fail(node.describe(), ": past_key must be 4-D, got ", past.str());
    total = past.isRanked() ? past[2] + d.kvSeq : Dim::unknown();
  }
  checkMaskShape(context, node, {d.batch, d.qHeads, d.qSeq, total});
  Shape y = q.rank() == 4 ? Shape({d.batch, d.qHeads, d.qSeq, d.vHeadSize})
            : seqFirst    ? Shape({d.qSeq, d.batch, d.vHeadSize * d.qHeads})
                          : Shape({d.batch, d.qSeq, d.vHeadSize * d.qHeads});
  std::vector<Shape> shapes = {y, Shape({d.batch, d.kvHeads, total, d.headSize}),
                               Shape({d.batch, d.kvHeads, total, d.vHeadSize}),
                               Shape({d.batch, d.qHeads, d.qSeq, total})};
  for (size_t i = 0; i < node.numResults() && i < shapes.size(); ++i)
    node.result(i)->setType({dtype, shapes[i]});
}

void inferRotaryEmbedding(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 3);
  DType dtype = commonOperandDType(node, {0, 1, 2});
  if (dtype != DType::Unknown && !isFloat(dtype))
    fail(node.describe(), ": rotary embedding needs floating point input, got ", dtypeName(dtype));
  if (const Value *positions = node.operand(3);
      positions && positions->dtype() != DType::Unknown && !isInteger(positions->dtype()))
    fail(node.describe(), ": position_ids must be integers, got ", dtypeName(positions->dtype()));
  const Shape &x = node.operand(0)->shape();
  if (x.isRanked()) {
    if (x.rank() != 3 && x.rank() != 4)
      fail(node.describe(), ": rotary embedding input must be 3-D or 4-D, got ", x.str());
    if (x.rank() == 3)
      headSizeOf(node, x[2], positiveIntAttr(node, "num_heads"), "X");
  }
  node.result(0)->setType({dtype, x});
}

} // namespace

void registerAttentionShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::Attention, inferAttention);
  table.add(OpKind::RotaryEmbedding, inferRotaryEmbedding);
}

} // namespace onnxc
