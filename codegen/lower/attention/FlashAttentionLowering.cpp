//===- codegen/lower/attention/FlashAttentionLowering.cpp - Fused f32 attention -===//
//
// The fast path of Attention (see canUseFlashAttention): one task computes a
// block of R query rows of one (batch, head) against the keys, in tiles of
// T keys, with an online softmax, so no score matrix exists:
//
//   Qt[c][r] = scale * Q[i0 + r][c]            packed once per task
//   for each key tile [j0, j1) of the block's visible key range:
//     S[t][r] = sum_c K[j0 + t][c] * Qt[c][r]  G keys x R rows in registers
//     S += attn_mask; causal / window only in tiles crossing a band edge
//     m' = max(m, max_t S); alpha = e^(m - m'); P = e^(S - m')
//     l = alpha * l + sum_t P
//     Ot[c][r] = alpha * Ot[c][r] + sum_t V[j0 + t][c] * P[t][r]
//   Y[i0 + r][c] = Ot[c][r] / l[r]
//
// The vector lanes run over query rows: the softmax statistics are plain
// vectors (no horizontal reductions), and both products are the GEMM's
// broadcast-A x vector-B micro-kernel (K and V elements are broadcast from
// memory, so neither needs packing; K rows are prefetched a group ahead, a
// tile's V rows during its exp pass). The vector width is the GEMM's
// (LoweringContext::gemmLanes: 16 with AVX-512F, else 8), and the blocking
// follows it (flashGeometry):
//
//   8 lanes   R = 24 (3 ymm row vectors), G = 4: 12 accumulators, 3 row
//             loads and 1 broadcast fill the 16 ymm registers. 24 rows
//             rather than 16 read each K/V tile for 1.5 times the work: with
//             [b, S, h*d] inputs, whose rows of one head are kilobytes apart
//             and share few cache sets, that is 10% faster at S = 2048.
//   16 lanes  R = 32 (2 zmm row vectors), G = 8: 16 accumulators of the 32
//             zmm registers. Each zmm FMA does twice the ymm's work, and the
//             exp pass costs half as much per score.
//
// A block on one row vector (a decode step's grouped query heads, a last
// block of few rows) takes 2G keys or value columns per step: G
// accumulators alone were too few chains for the FMA's latency (keyGroup).
//
// T = 128 keys at both widths (a whole tile at S = 128). The exp is
// FlashVectorIR's softmax-only form. Key tiles outside the causal or window
// band are never visited: causal attention does about half the work,
// windowed O(S * window). A last block of fewer rows runs on fewer row
// vectors. Scratch is fixed-size stack (Qt, one tile of scores, Ot: 32 KiB
// at head size 64 and 16 lanes), whatever the sequence lengths.
//
// Grouped-query attention (LLaMA-2-70B, Mistral, TinyLlama: G query heads
// per KV head) in a decode step (one query position): a block is the G
// heads of one KV head at that position, rows over heads instead of
// positions, so each K and V row is read once for the G heads instead of
// once per head (TinyLlama at 1024 cached positions reread 8 x 46 MB a
// step). G must fit one block, there must be two KV heads or more (one
// task per thread at least), and the mask, if any, be the same for every
// head; otherwise, and for longer queries, blocks are positions of one head.
//
// As in the reference, a row whose keys are all masked gives NaN, or zeros
// with masked_rows_zero (checked from its max at the end: masked keys get
// e^-60, not 0, see the exp).
//
// With a finite mask_fill (the exported Where(mask, scores, finfo.min)), a
// hidden key is not gone: it scores fill (+ the float mask), and a row
// hiding every key is uniform over all keys. Inside the visited tiles the
// boundary select writes the fill instead of -inf. The keys the band skips,
// [0, keyBegin) and [keyEnd, kvSeq), are hidden for every row of the block,
// so after the band pass one loop walks them (FlashAttentionSkippedKeys.cpp).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/FlashAttentionEmitter.h"

#include "llvm/IR/Function.h"

#include <cmath>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;
using Values = FlashValues;

FlashGeometry flashGeometry(int64_t lanes) {
  if (lanes == 16)
    return {16, 2, 8, 128};
  return {8, 3, 4, 128};
}

FlashAttentionEmitter::FlashAttentionEmitter(LoweringContext &ctx, const Node &node,
                                             const AttentionShape &shape)
    : node_(node), shape_(shape), geometry_(flashGeometry(ctx.gemmLanes())),
      step_(ctx.beginStep(node, "flash_attention")), k_(step_.kernel()),
      v_(k_.ir(), geometry_.width) {
  headSize_ = *shape.headSize.constant();
  valueSize_ = *shape.vHeadSize.constant();
  rowVectors_ = geometry_.rowVectors;
  // Positions are compared in 32-bit lanes; a wider window is no window.
  window_ = attentionWindow(ctx, node);
  if (window_ > (int64_t(1) << 30))
    window_ = -1;
  causal_ = node.getInt("is_causal", 0) != 0;
  zeroMaskedRows_ = node.getInt("masked_rows_zero", 0) != 0;
  fill_ = attentionMaskFill(ctx, node);
  if (fill_ && std::isinf(*fill_))
    fill_.reset(); // -inf is the default meaning
  scale_ = node.hasAttr("scale") ? node.getFloat("scale", 1.0f)
                                 : float(1.0 / std::sqrt(double(headSize_)));
  q_ = readAttentionOperand(ctx, step_, node_, 0, shape_.q, qOffset_);
  key_ = readAttentionOperand(ctx, step_, node_, 1, shape_.k, keyOffset_);
  value_ = readAttentionOperand(ctx, step_, node_, 2, shape_.v, valueOffset_);
  if (node.operand(3))
    mask_ = int(step_.input(node.operand(3)));
  if (shape.hasPast) {
    pastKey_ = int(step_.input(node.operand(4)));
    pastValue_ = int(step_.input(node.operand(5)));
  }
  y_ = step_.output(node.result(0));
  // <16 x float> must stay whole zmm registers on CPUs tuned to prefer
  // 256-bit vectors (as the 16-lane GEMM kernels require).
  if (geometry_.width == 16)
    k_.function()->addFnAttr("min-legal-vector-width", "512");
}

/// The mask's broadcast strides (see MaskLayout); keys at or past its last
/// extent are masked out, so the kernel never visits them.
void FlashAttentionEmitter::prepareMask() {
  const onnxc::Value *mask = node_.operand(3);
  MaskLayout layout = attentionMaskLayout(k_, mask->shape());
  maskStrides_ = layout.strides;
  maskColumns_ = layout.columns;
  maskType_ = mask->dtype();
  rowBroadcast_ = layout.dims[2].provablyEqual(Dim(1));
  headBroadcast_ = layout.dims[1].provablyEqual(Dim(1));
}

Value *FlashAttentionEmitter::groupsHeads() {
  if (headGroup_ == 0)
    return ir().getFalse();
  return ir().CreateICmpEQ(dim(shape_.qSeq), ir().getInt64(1));
}

void FlashAttentionEmitter::emit() {
  if (mask_ >= 0)
    prepareMask();
  IRBuilder<> &entry = k_.hoisted();
  auto alignedArray = [&](int64_t count, const char *name) {
    AllocaInst *array =
        entry.CreateAlloca(ArrayType::get(ir().getFloatTy(), uint64_t(count)), nullptr, name);
    array->setAlignment(Align(64));
    return array;
  };
  queryT_ = alignedArray(headSize_ * rows(), "qt");
  scores_ = alignedArray(geometry_.tileKeys * rows(), "scores");
  output_ = alignedArray(valueSize_ * rows(), "ot");
  queryRow_ = alignedArray(chunksOf(headSize_) * int64_t(width()), "q");
  rowOutput_ = alignedArray(chunksOf(valueSize_) * int64_t(width()), "o");
  const AttentionShape &s = shape_;
  const int64_t blockRows = rows();
  const int64_t group = *s.qHeads.constant() / *s.kvHeads.constant();
  // One KV head (multi-query attention) would make a decode step one task for
  // all the threads: its heads stay blocks of their own.
  if (group > 1 && group <= blockRows && *s.kvHeads.constant() >= 2 &&
      (mask_ < 0 || headBroadcast_))
    headGroup_ = group;
  const bool grouping = headGroup_ != 0;
  if (canPairColumns())
    queryPairs_ = alignedArray(headSize_ / 2 * int64_t(width()), "qp");
  step_.setTaskCount([&s, blockRows, grouping](FunctionBuilder &f) {
    Value *heads = f.ir().CreateMul(f.dim(s.batch), f.dim(s.qHeads));
    Value *blocks = f.ir().CreateMul(heads, f.ceilDiv(f.dim(s.qSeq), f.i64(blockRows)));
    if (!grouping)
      return blocks;
    // A decode step: one block per KV head.
    Value *decode = f.ir().CreateICmpEQ(f.dim(s.qSeq), f.i64(1));
    return f.ir().CreateSelect(decode, f.ir().CreateMul(f.dim(s.batch), f.dim(s.kvHeads)), blocks);
  });
  v_.loop(k_.taskBegin(), k_.taskEnd(), 1, [&](Value *task) { emitTask(task); });
  step_.finish();
}

FlashBlock FlashAttentionEmitter::decodeTask(Value *task) {
  IRBuilder<> &b = ir();
  const AttentionShape &s = shape_;
  Value *blocksPerHead = k_.ceilDiv(dim(s.qSeq), b.getInt64(rows()));
  Value *blockIndex = b.CreateURem(task, blocksPerHead);
  Value *headIndex = b.CreateUDiv(task, blocksPerHead);
  if (causal_) {
    // Causal blocks grow with their index; interleaving short and long ones
    // (0, n-1, 1, n-2, ...) lets contiguous task ranges carry equal work.
    Value *half = b.CreateLShr(blockIndex, 1);
    Value *odd = b.CreateTrunc(blockIndex, b.getInt1Ty());
    Value *fromEnd = b.CreateSub(b.CreateSub(blocksPerHead, b.getInt64(1)), half);
    blockIndex = b.CreateSelect(odd, fromEnd, half);
  }
  Block block;
  block.head = b.CreateURem(headIndex, dim(s.qHeads));
  block.batch = b.CreateUDiv(headIndex, dim(s.qHeads));
  block.first = b.CreateMul(blockIndex, b.getInt64(rows()));
  block.rows = k_.min(b.CreateSub(dim(s.qSeq), block.first), b.getInt64(rows()));
  block.last = b.CreateSub(b.CreateAdd(block.first, block.rows), b.getInt64(1));
  block.qRowStride = dim(s.q.position);
  block.yRowStride = dim(s.y.position);
  int64_t group = *s.qHeads.constant() / *s.kvHeads.constant();
  Value *grouped = groupsHeads();
  if (headGroup_ != 0) {
    // A decode step's task is a KV head: its group of query heads at the one position.
    block.head = b.CreateSelect(
        grouped, b.CreateMul(b.CreateURem(headIndex, dim(s.kvHeads)), b.getInt64(group)),
        block.head);
    block.batch = b.CreateSelect(grouped, b.CreateUDiv(headIndex, dim(s.kvHeads)), block.batch);
    block.rows = b.CreateSelect(grouped, b.getInt64(group), block.rows);
    block.last = b.CreateSelect(grouped, block.first, block.last);
    block.qRowStride = b.CreateSelect(grouped, dim(s.q.head), block.qRowStride);
    block.yRowStride = b.CreateSelect(grouped, dim(s.y.head), block.yRowStride);
  }
  Value *kvHead = b.CreateUDiv(block.head, b.getInt64(group));
  block.keyBase = b.CreateAdd(k_.offset({block.batch, kvHead}, {dim(s.k.batch), dim(s.k.head)}),
                              b.getInt64(keyOffset_));
  block.valueBase = b.CreateAdd(k_.offset({block.batch, kvHead}, {dim(s.v.batch), dim(s.v.head)}),
                                b.getInt64(valueOffset_));
  block.maskBase = nullptr;
  if (pastKey_ >= 0) {
    // past_key / past_value are [batch, kvHeads, rows, size], contiguous;
    // rows is the past length, or the capacity of a cache updated in place.
    Value *heads = b.CreateAdd(b.CreateMul(block.batch, dim(s.kvHeads)), kvHead);
    block.pastKeyBase = b.CreateMul(b.CreateMul(heads, dim(s.pastKeyRows)), b.getInt64(headSize_));
    block.pastValueBase =
        b.CreateMul(b.CreateMul(heads, dim(s.pastValueRows)), b.getInt64(valueSize_));
  }

  const unsigned w = width();
  SmallVector<Constant *, 16> lanes32, lanes64;
  for (unsigned lane = 0; lane < w; ++lane) {
    lanes32.push_back(b.getInt32(lane));
    lanes64.push_back(b.getInt64(lane));
  }
  Value *lastQuery = b.CreateSub(dim(s.qSeq), b.getInt64(1));
  // Lane l of row vector v is position first + v * w + l, or, in a block of
  // grouped heads, position first for every lane.
  Value *laneStep = b.CreateZExt(b.CreateNot(grouped), b.getInt32Ty());
  Value *laneStep64 = b.CreateZExt(b.CreateNot(grouped), b.getInt64Ty());
  for (int64_t v = 0; v < geometry_.rowVectors; ++v) {
    Value *firstLane = b.CreateAdd(block.first, b.CreateMul(b.getInt64(v * w), laneStep64));
    // Band positions: the row's query index plus the past.
    Value *first32 = b.CreateTrunc(b.CreateAdd(firstLane, pastLength()), b.getInt32Ty());
    block.position.push_back(
        b.CreateAdd(b.CreateVectorSplat(w, first32),
                    b.CreateMul(ConstantVector::get(lanes32), b.CreateVectorSplat(w, laneStep))));
    block.maskRow.push_back(nullptr);
    if (mask_ >= 0 && !rowBroadcast_) {
      // Padding lanes past the last query read the last query's mask row.
      Value *row = b.CreateAdd(
          b.CreateVectorSplat(w, firstLane),
          b.CreateMul(ConstantVector::get(lanes64), b.CreateVectorSplat(w, laneStep64)));
      Value *lastVec = b.CreateVectorSplat(w, lastQuery);
      row = b.CreateSelect(b.CreateICmpSLT(row, lastVec), row, lastVec);
      block.maskRow.back() = b.CreateMul(row, b.CreateVectorSplat(w, maskStrides_[2]));
    }
  }
  if (mask_ >= 0)
    block.maskBase = k_.offset({block.batch, block.head}, {maskStrides_[0], maskStrides_[1]});

  // The block's visible keys end at the causal diagonal of its last row, the
  // window's far edge, the key count and the mask's last extent.
  Value *end = dim(s.total);
  Value *lastBand = b.CreateAdd(block.last, pastLength());
  if (causal_)
    end = k_.min(end, b.CreateAdd(lastBand, b.getInt64(1)));
  if (window_ >= 0)
    end = k_.min(end, b.CreateAdd(lastBand, b.getInt64(window_ + 1)));
  if (mask_ >= 0)
    end = k_.min(end, maskColumns_);
  block.keyEnd = end;
  return block;
}

Value *FlashAttentionEmitter::keyBegin(const Block &block) {
  if (block.keyStart)
    return block.keyStart; // at or after the window's beginning
  if (window_ < 0)
    return ir().getInt64(0);
  Value *firstBand = ir().CreateAdd(block.first, pastLength());
  return k_.max(ir().CreateSub(firstBand, ir().getInt64(window_)), ir().getInt64(0));
}

Value *FlashAttentionEmitter::cacheRow(Value *key, unsigned slot, Value *base, Value *stride,
                                       int pastSlot, Value *pastBase, int64_t rowSize,
                                       bool inCache) {
  IRBuilder<> &b = ir();
  Value *rows = k_.buffer(slot);
  if (pastSlot < 0)
    return b.CreateGEP(b.getFloatTy(), rows, b.CreateAdd(base, b.CreateMul(key, stride)));
  Value *past = pastLength();
  Value *cached = b.CreateGEP(b.getFloatTy(), k_.buffer(unsigned(pastSlot)),
                              b.CreateAdd(pastBase, b.CreateMul(key, b.getInt64(rowSize))));
  if (inCache)
    return cached;
  Value *fresh = b.CreateGEP(b.getFloatTy(), rows,
                             b.CreateAdd(base, b.CreateMul(b.CreateSub(key, past), stride)));
  return b.CreateSelect(b.CreateICmpSLT(key, past), cached, fresh);
}

Value *FlashAttentionEmitter::keyRow(const Block &block, Value *key, bool cached) {
  return cacheRow(key, key_, block.keyBase, dim(shape_.k.position), pastKey_, block.pastKeyBase,
                  headSize_, cached);
}

Value *FlashAttentionEmitter::valueRow(const Block &block, Value *key, bool cached) {
  return cacheRow(key, value_, block.valueBase, dim(shape_.v.position), pastValue_,
                  block.pastValueBase, valueSize_, cached);
}

/// Whether the full tile starting at `begin` needs no element-wise mask
/// (attn_mask, which is data, is applied in every tile).
Value *FlashAttentionEmitter::isInterior(const Block &block, Value *begin) {
  IRBuilder<> &b = ir();
  Value *lastKey = b.CreateAdd(begin, b.getInt64(geometry_.tileKeys - 1));
  Value *interior = b.CreateICmpSLT(lastKey, block.keyEnd);
  Value *firstBand = b.CreateAdd(block.first, pastLength());
  Value *lastBand = b.CreateAdd(block.last, pastLength());
  if (causal_)
    interior = b.CreateAnd(interior, b.CreateICmpSLE(lastKey, firstBand));
  if (window_ >= 0) {
    Value *low = b.CreateSub(lastBand, b.getInt64(window_));
    Value *high = b.CreateAdd(firstBand, b.getInt64(window_));
    interior = b.CreateAnd(interior, b.CreateICmpSGE(begin, low));
    interior = b.CreateAnd(interior, b.CreateICmpSLE(lastKey, high));
  }
  return interior;
}

void FlashAttentionEmitter::emitTask(Value *task) {
  IRBuilder<> &b = ir();
  Block block = decodeTask(task);
  // A last block of fewer rows runs on fewer row vectors (at S = 128 with 8
  // lanes its 8 rows would otherwise cost as much as 24).
  Value *vectors = k_.ceilDiv(block.rows, b.getInt64(width()));
  std::function<void(int64_t)> emitFrom = [&](int64_t rowVectors) {
    auto emitWith = [&, rowVectors] {
      rowVectors_ = rowVectors;
      emitBlock(block);
    };
    if (rowVectors == 1)
      return emitWith();
    k_.ifThenElse(b.CreateICmpEQ(vectors, b.getInt64(rowVectors)), emitWith,
                  [&, rowVectors] { emitFrom(rowVectors - 1); });
  };
  // One row (a decode step) runs with the lanes over its columns; every
  // lane of its row vector is that row.
  auto singleRow = [&] {
    Block one = block;
    one.position[0] = b.CreateVectorSplat(
        width(), b.CreateTrunc(b.CreateAdd(block.first, pastLength()), b.getInt32Ty()));
    rowVectors_ = 1;
    singleRow_ = true;
    emitBlock(one);
    singleRow_ = false;
  };
  auto general = [&] {
    k_.ifThenElse(b.CreateICmpEQ(block.rows, b.getInt64(1)), singleRow,
                  [&] { emitFrom(geometry_.rowVectors); });
  };
  // A decode step's grouped heads on paired lanes (FlashAttentionPairedColumns.cpp).
  auto paired = [&] {
    rowVectors_ = 1;
    pairedColumns_ = true;
    emitBlock(block);
    pairedColumns_ = false;
  };
  if (canPairColumns())
    k_.ifThenElse(groupsHeads(), paired, general);
  else
    general();
  rowVectors_ = geometry_.rowVectors;
}

/// The task's work on rowVectors_ vectors of rows.
void FlashAttentionEmitter::emitBlock(const Block &banded) {
  IRBuilder<> &b = ir();
  const Block block = withMaskedRange(banded);
  if (singleRow_) {
    beginSingleRow(block);
  } else if (pairedColumns_) {
    beginPairedColumns(block);
  } else {
    packQuery(block);
    v_.loop(b.getInt64(0), b.getInt64(valueSize_), 1, [&](Value *c) {
      for (int64_t v = 0; v < rowVectors_; ++v)
        v_.store(v_.splat(0.0f), output_, outputIndex(c, v));
    });
  }

  // Running max m and sum l of each row vector.
  Values state;
  for (int64_t v = 0; v < rowVectors_; ++v)
    state.push_back(minusInfinity());
  for (int64_t v = 0; v < rowVectors_; ++v)
    state.push_back(v_.splat(0.0f));
  const int64_t tileKeys = geometry_.tileKeys;
  state = v_.loop(keyBegin(block), block.keyEnd, tileKeys, state,
                  [&](Value *begin, ArrayRef<Value *> carried) {
                    Value *end = k_.min(b.CreateAdd(begin, b.getInt64(tileKeys)), block.keyEnd);
                    auto interior = [&] {
                      if (pastKey_ < 0 && pastValue_ < 0)
                        return emitTile(block, {begin, end, false}, carried);
                      // A decode step's tiles but the last read only the
                      // cache: one base and constant offsets per key group,
                      // where a choice of buffer per key spilled registers.
                      return v_.branch(
                          b.CreateICmpSLE(end, pastLength()),
                          [&] {
                            return emitTile(block, {begin, end, false, true}, carried);
                          },
                          [&] {
                            return emitTile(block, {begin, end, false}, carried);
                          });
                    };
                    return v_.branch(isInterior(block, begin), interior, [&] {
                      return emitTile(block, {begin, end, true}, carried);
                    });
                  });
  if (singleRow_)
    endSingleRow();
  if (pairedColumns_)
    state = endPairedColumns(state);
  if (fill_)
    state = emitSkippedKeys(block, state);
  ArrayRef<Value *> all(state);
  emitOutput(block, all.take_front(rowVectors_), all.drop_front(rowVectors_));
}

const Node *attentionReadingSplitInPlace(const LoweringContext &ctx, const Node &split) {
  const onnxc::Value *data = split.operand(0);
  if (split.kind() != OpKind::Split || !data || data->dtype() != DType::F32 ||
      data->shape().rank() != 3 || !data->shape()[2].isConstant() || split.numResults() == 0)
    return nullptr;
  int64_t axis = split.getInt("axis", 0);
  if (axis != 2 && axis != -1)
    return nullptr;
  const Node *attention = nullptr;
  std::array<bool, 3> seen{};
  for (const onnxc::Value *result : split.results()) {
    if (!result || result->numUses() != 1 || ctx.graph().isOutput(result) ||
        !result->shape().isRanked() || result->shape().rank() != 3 ||
        !result->shape()[2].isConstant())
      return nullptr;
    const Use &use = result->uses()[0];
    if (use.user->kind() != OpKind::Attention || use.operandIndex > 2 || seen[use.operandIndex] ||
        (attention && attention != use.user))
      return nullptr;
    attention = use.user;
    seen[use.operandIndex] = true;
  }
  if (!seen[0] || !seen[1] || !seen[2] || attention->getInt("seq_first", 0) != 0)
    return nullptr;
  for (size_t r = 1; r < 3; ++r)
    if (attention->numResults() > r && isNeeded(ctx, attention->result(r)))
      return nullptr;
  AttentionShape shape = attentionShape(ctx, *attention);
  return shape.is3d && canUseFlashAttention(ctx, *attention, shape) ? attention : nullptr;
}

unsigned readAttentionOperand(LoweringContext &ctx, StepBuilder &step, const Node &node,
                              unsigned index, HeadLayout &layout, int64_t &offset) {
  const onnxc::Value *operand = node.operand(index);
  const Node *split = operand->definingNode();
  offset = 0;
  if (!split || split->kind() != OpKind::Split ||
      attentionReadingSplitInPlace(ctx, *split) != &node)
    return step.input(operand);
  const onnxc::Value *packed = split->operand(0);
  for (unsigned r = 0; r < operand->resultIndex(); ++r)
    offset += *split->result(r)->shape()[2].constant();
  const Dim &columns = packed->shape()[2];
  layout.position = columns;
  layout.batch = packed->shape()[1] * columns;
  return step.input(packed);
}

bool canUseFlashAttention(const LoweringContext &ctx, const Node &node,
                          const AttentionShape &shape) {
  // A past is read in place (keys below its length from past_key/value,
  // which are 4-D in either form; K and V rows follow their own layout).
  if (shape.dtype != DType::F32 || !ctx.hasAvx2Fma())
    return false;
  if (node.getFloat("softcap", 0.0f) != 0.0f)
    return false;
  if (node.numResults() > 3 && isNeeded(ctx, node.result(3)))
    return false;
  std::optional<int64_t> headSize = shape.headSize.constant();
  std::optional<int64_t> valueSize = shape.vHeadSize.constant();
  return headSize && valueSize && *headSize > 0 && *valueSize > 0 &&
         *headSize <= kFlashMaxHeadSize && *valueSize <= kFlashMaxHeadSize;
}

void emitFlashAttention(LoweringContext &ctx, const Node &node, const AttentionShape &shape) {
  FlashAttentionEmitter emitter(ctx, node, shape);
  emitter.emit();
}

} // namespace onnxc::lower
