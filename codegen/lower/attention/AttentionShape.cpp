//===- codegen/lower/attention/AttentionShape.cpp - Attention dims in the 4-D view -===//
//
// Mirrors readAttentionInputs of ir/eval/AttentionKernels.cpp on the
// symbolic shapes: what the reference rejects at run time (a head count not
// dividing the hidden size, mismatched head sizes) is refused here when it
// is provable, and indexed by the operand's own dims otherwise.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/AttentionLoweringInternal.h"

#include <cmath>
#include <limits>
#include <string>

namespace onnxc::lower {
namespace {

void requireSame(const LoweringContext &ctx, const Node &node, const Dim &a, const Dim &b,
                 const char *what) {
  if (a.provablyEqual(b))
    return;
  ctx.unsupported(node, std::string(what) + " " + a.str() + " and " + b.str() +
                            " are not provably equal");
}

/// The mask broadcasts to [batch, qHeads, qSeq, total] (its last axis may
/// be shorter: the keys past it are masked out); the kernel indexes it with
/// its own dims, so every other axis must be provably 1 or the full extent.
void checkMask(const LoweringContext &ctx, const Node &node, const AttentionShape &s,
               const Value &mask) {
  if (mask.dtype() != DType::Bool && mask.dtype() != s.dtype)
    ctx.unsupported(node, "attention mask must be bool or the type of Q, got " +
                              std::string(dtypeName(mask.dtype())));
  const Shape &m = mask.shape();
  if (m.rank() < 1 || m.rank() > 4)
    ctx.unsupported(node, "attention mask must have rank 1 to 4, got " + m.str());
  const Dim expected[3] = {s.batch, s.qHeads, s.qSeq};
  for (size_t axis = 0; axis + 1 < 4; ++axis) {
    if (axis + m.rank() < 4)
      continue;
    const Dim &d = m[axis + m.rank() - 4];
    if (!d.provablyEqual(Dim(1)) && !d.provablyEqual(expected[axis]))
      ctx.unsupported(node, "attention mask " + m.str() + " does not provably broadcast to [" +
                                s.batch.str() + ", " + s.qHeads.str() + ", " + s.qSeq.str() + ", " +
                                s.total.str() + "]");
  }
}

} // namespace

Dim headSizeOf(const LoweringContext &ctx, const Node &node, const Dim &hidden, int64_t heads,
               const char *what) {
  std::optional<Dim> size = hidden.divideExactly(Dim(heads));
  if (!size)
    ctx.unsupported(node, "hidden size " + hidden.str() + " of " + what +
                              " is not provably a multiple of " + std::to_string(heads) + " heads");
  return *size;
}

int64_t attentionWindow(const LoweringContext &ctx, const Node &node) {
  int64_t window = node.getInt("window", -1);
  if (window < -1)
    ctx.unsupported(node, "window " + std::to_string(window) + " must be -1 (none) or at least 0");
  return window;
}

std::optional<float> attentionMaskFill(const LoweringContext &ctx, const Node &node) {
  if (!node.hasAttr("mask_fill"))
    return std::nullopt;
  float fill = node.getFloat("mask_fill", 0.0f);
  if (std::isnan(fill) || fill == std::numeric_limits<float>::infinity())
    ctx.unsupported(node, "mask_fill must be finite or -inf");
  return fill;
}

namespace {

/// The past key/values (operands 4 and 5) into `s`: both or neither, 4-D,
/// matching Q, K and V.
void readPastKeyValue(const LoweringContext &ctx, const Node &node, AttentionShape &s) {
  const Value *pastKey = node.operand(4), *pastValue = node.operand(5);
  if (bool(pastKey) != bool(pastValue))
    ctx.unsupported(node, "past_key and past_value must be given together");
  if (pastKey) {
    const Shape &pk = pastKey->shape(), &pv = pastValue->shape();
    if (pk.rank() != 4 || pv.rank() != 4)
      ctx.unsupported(node, "past_key and past_value must be 4-D");
    s.hasPast = true;
    s.past = pk[2];
    requireSame(ctx, node, pk[0], s.batch, "past_key batch");
    requireSame(ctx, node, pk[1], s.kvHeads, "past_key heads");
    requireSame(ctx, node, pk[3], s.headSize, "past_key head size");
    requireSame(ctx, node, pv[0], s.batch, "past_value batch");
    requireSame(ctx, node, pv[1], s.kvHeads, "past_value heads");
    requireSame(ctx, node, pv[2], s.past, "past_value length");
    requireSame(ctx, node, pv[3], s.vHeadSize, "past_value head size");
    s.pastKeyRows = ctx.layoutOf(pastKey)[2];
    s.pastValueRows = ctx.layoutOf(pastValue)[2];
  }
}

} // namespace

AttentionShape attentionShape(const LoweringContext &ctx, const Node &node) {
  const Value *query = node.operand(0), *key = node.operand(1), *value = node.operand(2);
  if (!query || !key || !value)
    ctx.unsupported(node, "attention needs Q, K and V");
  AttentionShape s;
  s.dtype = query->dtype();
  if (!isFloat(s.dtype) || key->dtype() != s.dtype || value->dtype() != s.dtype)
    ctx.unsupported(node, "Q, K, V must share one floating type");
  const Shape &q = query->shape(), &k = key->shape(), &v = value->shape();
  if (!((q.rank() == 3 || q.rank() == 4) && k.rank() == q.rank() && v.rank() == q.rank()))
    ctx.unsupported(node, "Q, K, V must all be 3-D or all 4-D, got " + q.str() + ", " + k.str() +
                              ", " + v.str());
  s.is3d = q.rank() == 3;
  // onnxc's seq_first: the 3-D operands and Y are [seq, batch, heads*size].
  s.seqFirst = node.getInt("seq_first", 0) != 0;
  if (s.seqFirst && !s.is3d)
    ctx.unsupported(node, "seq_first needs the 3-D form");
  size_t batchAxis = s.seqFirst ? 1 : 0, seqAxis = s.seqFirst ? 0 : 1;
  s.batch = q[batchAxis];
  if (s.is3d) {
    int64_t qHeads = node.requireInt("q_num_heads"), kvHeads = node.requireInt("kv_num_heads");
    if (qHeads <= 0 || kvHeads <= 0)
      ctx.unsupported(node, "q_num_heads and kv_num_heads must be positive");
    s.qHeads = Dim(qHeads);
    s.kvHeads = Dim(kvHeads);
    s.qSeq = q[seqAxis];
    s.kvSeq = k[seqAxis];
    s.headSize = headSizeOf(ctx, node, q[2], qHeads, "Q");
    requireSame(ctx, node, headSizeOf(ctx, node, k[2], kvHeads, "K"), s.headSize,
                "key and query head sizes");
    s.vHeadSize = headSizeOf(ctx, node, v[2], kvHeads, "V");
    requireSame(ctx, node, v[seqAxis], s.kvSeq, "key and value lengths");
  } else {
    s.qHeads = q[1];
    s.qSeq = q[2];
    s.headSize = q[3];
    s.kvHeads = k[1];
    s.kvSeq = k[2];
    s.vHeadSize = v[3];
    requireSame(ctx, node, k[3], s.headSize, "key and query head sizes");
    requireSame(ctx, node, v[1], s.kvHeads, "key and value head counts");
    requireSame(ctx, node, v[2], s.kvSeq, "key and value lengths");
  }
  requireSame(ctx, node, k[batchAxis], s.batch, "query and key batch sizes");
  requireSame(ctx, node, v[batchAxis], s.batch, "query and value batch sizes");
  std::optional<int64_t> qHeads = s.qHeads.constant(), kvHeads = s.kvHeads.constant();
  if (!qHeads || !kvHeads || *kvHeads <= 0 || *qHeads % *kvHeads != 0)
    ctx.unsupported(node, "query heads " + s.qHeads.str() +
                              " are not a known multiple of key/value heads " + s.kvHeads.str());

  readPastKeyValue(ctx, node, s);
  s.total = s.past + s.kvSeq;
  if (const Value *mask = node.operand(3))
    checkMask(ctx, node, s, *mask);
  s.q = headLayout(s.is3d, s.seqFirst, s.batch, s.qHeads, s.qSeq, s.headSize);
  // A 4-D K or V that is a KV cache's present, updated in place
  // (CachePairs.h), has the cache capacity's rows per head, not kvSeq.
  auto rows = [&](const Value *operand) {
    return !s.is3d && operand->shape().rank() == 4 ? ctx.layoutOf(operand)[2] : s.kvSeq;
  };
  s.k = headLayout(s.is3d, s.seqFirst, s.batch, s.kvHeads, rows(node.operand(1)), s.headSize);
  s.v = headLayout(s.is3d, s.seqFirst, s.batch, s.kvHeads, rows(node.operand(2)), s.vHeadSize);
  s.y = headLayout(s.is3d, s.seqFirst, s.batch, s.qHeads, s.qSeq, s.vHeadSize);
  return s;
}

MaskLayout attentionMaskLayout(KernelBuilder &k, const Shape &shape) {
  MaskLayout layout;
  layout.dims = {Dim(1), Dim(1), Dim(1), Dim(1)};
  for (size_t i = 0; i < shape.rank(); ++i)
    layout.dims[4 - shape.rank() + i] = shape[i];
  llvm::IRBuilder<> &b = k.hoisted();
  Dim rowStride(1);
  for (int i = 3; i >= 0; --i) {
    llvm::Value *isOne = b.CreateICmpEQ(k.dim(layout.dims[size_t(i)]), b.getInt64(1));
    layout.strides[size_t(i)] = b.CreateSelect(isOne, b.getInt64(0), k.dim(rowStride));
    rowStride = rowStride * layout.dims[size_t(i)];
  }
  layout.columns = k.dim(layout.dims[3]);
  return layout;
}

} // namespace onnxc::lower
