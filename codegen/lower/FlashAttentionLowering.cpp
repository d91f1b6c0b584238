//===- codegen/lower/FlashAttentionLowering.cpp - Fused f32 attention -----===//
//
// The fast path of Attention (see canUseFlashAttention): one task computes a
// block of kRows = 24 query rows of one (batch, head) against the keys, in
// tiles of kTileKeys, with an online softmax, so no score matrix exists:
//
//   Qt[c][r] = scale * Q[i0 + r][c]            packed once per task
//   for each key tile [j0, j1) of the block's visible key range:
//     S[t][r] = sum_c K[j0 + t][c] * Qt[c][r]  4 keys x 24 rows in registers
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
// tile's V rows during its exp pass). 24 rows rather than 16 read each K/V
// tile for 1.5 times the work: with [b, S, h*d] inputs, whose rows of one
// head are kilobytes apart and share few cache sets, that is 10% faster at
// S = 2048 (4-D inputs: the same). The exp is FlashVectorIR's softmax-only
// form. Key tiles outside the causal or window band are never visited:
// causal attention does about half the work, windowed O(S * window).
// A last block of 1 to 16 rows runs on one or two row vectors instead of
// three. Scratch is fixed-size stack (Qt, one tile of scores, Ot: 24 KiB at
// head size 64), whatever the sequence lengths.
//
// As in the reference, a row whose keys are all masked gives NaN (checked
// from its max at the end: masked keys get e^-60, not 0, see the exp).
//
// With a finite mask_fill (the exported Where(mask, scores, finfo.min)), a
// hidden key is not gone: it scores fill (+ the float mask), and a row
// hiding every key is uniform over all keys. Inside the visited tiles the
// boundary select writes the fill instead of -inf. The keys the band skips,
// [0, keyBegin) and [keyEnd, kvSeq), are hidden for every row of the block,
// so after the band pass one loop walks them (emitSkippedKeys): a key whose
// score t is below every lane's running max by more than kNegligibleGap
// (104: e^-104 is below the least f32 subnormal, so its exact weight is 0
// in f32) is passed over after one compare; any other key gets the online
// softmax update exactly like a visited one (its weight is floored at e^-60
// by the exp, as a visited key's is). So only (nearly) fully hidden rows pay
// for the skipped keys' V rows; the others pay one compare per skipped key
// (a scalar one, against the block's lowest max, unless the float mask
// varies per query row), and without a float mask, whose skipped scores are
// all the fill, one compare per block.
//
//===----------------------------------------------------------------------===//
#include "codegen/VectorTranspose.h"
#include "codegen/lower/AttentionLoweringInternal.h"
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/FlashVectorIR.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

constexpr unsigned kWidth = FlashVectorIR::kWidth;
/// Query rows per task: three vectors of lanes.
constexpr int64_t kRowVectors = 3;
constexpr int64_t kRows = kWidth * kRowVectors;
/// Keys (Q·Kᵀ) or value columns (P·V) per micro-kernel step: with
/// kRowVectors that is 12 accumulators, 3 row loads and 1 broadcast: all
/// 16 ymm registers, and 16 value-column groups at head size 64.
constexpr int64_t kGroup = 4;
/// 128 keys: a whole tile at S = 128 (3% faster there than 96 + 32 keys),
/// the same speed at S = 2048.
constexpr int64_t kTileKeys = 32 * kGroup;
/// Head sizes up to this keep Qt and Ot within a few tens of KiB of stack.
constexpr int64_t kMaxHeadSize = 512;
/// A skipped key scoring this far below a row's max has weight e^-104 or
/// less, which is 0 in f32 (the least subnormal is e^-103.3).
constexpr float kNegligibleGap = 104.0f;

using Values = FlashVectorIR::Values;

/// The task's block of query rows and the bases it reads from.
struct Block {
  Value *batch, *head, *first, *last; // first and last valid row
  Value *rows;                        // valid rows (1 to kRows)
  Value *keyBase, *valueBase, *maskBase;
  std::array<Value *, kRowVectors> position; // <8 x i32> row index per lane
  std::array<Value *, kRowVectors> maskRow;  // <8 x i64> mask offset per lane
  Value *keyEnd;                             // keys [.., keyEnd) may be visible
};

/// One key tile: keys [begin, end); a boundary tile applies causal, window
/// and key-end masks element-wise and clamps its key reads to keyEnd - 1.
struct Tile {
  Value *begin, *end;
  bool boundary;
};

class FlashAttentionEmitter {
public:
  FlashAttentionEmitter(LoweringContext &ctx, const Node &node, const AttentionShape &shape);
  void emit();

private:
  IRBuilder<> &ir() { return k_.ir(); }
  Value *dim(const Dim &d) { return k_.dim(d); }

  void prepareMask();
  void emitTask(Value *task);
  void emitBlock(const Block &block);
  Block decodeTask(Value *task);
  void packQuery(const Block &block);
  Value *keyBegin(const Block &block);
  Value *isInterior(const Block &block, Value *begin);
  Values emitTile(const Block &block, const Tile &tile, ArrayRef<Value *> state);
  Values emitScores(const Block &block, const Tile &tile, Value *groups);
  void applyMasks(const Block &block, const Tile &tile, Value *key, Value *clampedKey, Value **acc);
  /// The attn_mask element of `clampedKey` for each row vector.
  Values loadMask(const Block &block, Value *clampedKey);
  Values emitSkippedKeys(const Block &block, ArrayRef<Value *> state);
  Values skippedScores(const Block &block, Value *key);
  Values addSkippedKey(const Block &block, Value *key, ArrayRef<Value *> scores,
                       ArrayRef<Value *> state);
  Value *keyIndex(const Block &block, const Tile &tile, Value *key);
  Values emitExponentials(const Block &block, const Tile &tile, Value *count,
                          ArrayRef<Value *> shift);
  void emitValues(const Block &block, const Tile &tile, Value *count, ArrayRef<Value *> alpha);
  void emitValueGroup(const Block &block, const Tile &tile, Value *count, ArrayRef<Value *> alpha,
                      Value *firstColumn, int64_t columns);
  /// Index of row vector `v` of column (or key) `column` in Ot (or P).
  Value *outputIndex(Value *column, int64_t v) {
    return ir().CreateAdd(ir().CreateMul(column, ir().getInt64(kRows)), ir().getInt64(v * kWidth));
  }
  void emitOutput(const Block &block, ArrayRef<Value *> maxima, ArrayRef<Value *> sums);

  const Node &node_;
  const AttentionShape &shape_;
  StepBuilder step_;
  KernelBuilder &k_;
  FlashVectorIR v_;
  int64_t headSize_, valueSize_, window_;
  bool causal_;
  float scale_;
  /// mask_fill when finite: hidden keys score it (see the header).
  std::optional<float> fill_;
  unsigned q_, key_, value_, y_;
  int mask_ = -1;
  /// Row vectors of the block being emitted (1 to kRowVectors); the
  /// scratch layouts keep kRows lanes per column whatever it is.
  int64_t rowVectors_ = kRowVectors;
  // The mask in the [batch, heads, qSeq, keys] view (AttentionLowering.cpp's
  // MaskView); rowBroadcast_ when its qSeq axis is provably 1.
  std::array<Value *, 4> maskStrides_{};
  Value *maskColumns_ = nullptr;
  DType maskType_ = DType::Bool;
  bool rowBroadcast_ = true;
  Value *queryT_ = nullptr, *scores_ = nullptr, *output_ = nullptr; // stack scratch
};

FlashAttentionEmitter::FlashAttentionEmitter(LoweringContext &ctx, const Node &node,
                                             const AttentionShape &shape)
    : node_(node), shape_(shape), step_(ctx.beginStep(node, "flash_attention")), k_(step_.kernel()),
      v_(k_.ir()) {
  headSize_ = *shape.headSize.constant();
  valueSize_ = *shape.vHeadSize.constant();
  // Positions are compared in 32-bit lanes; a wider window is no window.
  window_ = attentionWindow(ctx, node);
  if (window_ > (int64_t(1) << 30))
    window_ = -1;
  causal_ = node.getInt("is_causal", 0) != 0;
  fill_ = attentionMaskFill(ctx, node);
  if (fill_ && std::isinf(*fill_))
    fill_.reset(); // -inf is the default meaning
  scale_ = node.hasAttr("scale") ? node.getFloat("scale", 1.0f)
                                 : float(1.0 / std::sqrt(double(headSize_)));
  q_ = step_.input(node.operand(0));
  key_ = step_.input(node.operand(1));
  value_ = step_.input(node.operand(2));
  if (node.operand(3))
    mask_ = int(step_.input(node.operand(3)));
  y_ = step_.output(node.result(0));
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
  queryT_ = alignedArray(headSize_ * kRows, "qt");
  scores_ = alignedArray(kTileKeys * kRows, "scores");
  output_ = alignedArray(valueSize_ * kRows, "ot");
  const AttentionShape &s = shape_;
  step_.setTaskCount([&s](FunctionBuilder &f) {
    Value *heads = f.ir().CreateMul(f.dim(s.batch), f.dim(s.qHeads));
    return f.ir().CreateMul(heads, f.ceilDiv(f.dim(s.qSeq), f.i64(kRows)));
  });
  v_.loop(k_.taskBegin(), k_.taskEnd(), 1, [&](Value *task) { emitTask(task); });
  step_.finish();
}

Block FlashAttentionEmitter::decodeTask(Value *task) {
  IRBuilder<> &b = ir();
  const AttentionShape &s = shape_;
  Value *blocksPerHead = k_.ceilDiv(dim(s.qSeq), b.getInt64(kRows));
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
  block.first = b.CreateMul(blockIndex, b.getInt64(kRows));
  block.rows = k_.min(b.CreateSub(dim(s.qSeq), block.first), b.getInt64(kRows));
  block.last = b.CreateSub(b.CreateAdd(block.first, block.rows), b.getInt64(1));
  int64_t group = *s.qHeads.constant() / *s.kvHeads.constant();
  Value *kvHead = b.CreateUDiv(block.head, b.getInt64(group));
  block.keyBase = k_.offset({block.batch, kvHead}, {dim(s.k.batch), dim(s.k.head)});
  block.valueBase = k_.offset({block.batch, kvHead}, {dim(s.v.batch), dim(s.v.head)});
  block.maskBase = nullptr;

  SmallVector<Constant *, kWidth> lanes32, lanes64;
  for (unsigned lane = 0; lane < kWidth; ++lane) {
    lanes32.push_back(b.getInt32(lane));
    lanes64.push_back(b.getInt64(lane));
  }
  Value *lastQuery = b.CreateSub(dim(s.qSeq), b.getInt64(1));
  for (int64_t v = 0; v < kRowVectors; ++v) {
    Value *firstLane = b.CreateAdd(block.first, b.getInt64(v * kWidth));
    Value *first32 = b.CreateTrunc(firstLane, b.getInt32Ty());
    block.position[size_t(v)] =
        b.CreateAdd(b.CreateVectorSplat(kWidth, first32), ConstantVector::get(lanes32));
    block.maskRow[size_t(v)] = nullptr;
    if (mask_ >= 0 && !rowBroadcast_) {
      // Padding lanes past the last query read the last query's mask row.
      Value *row =
          b.CreateAdd(b.CreateVectorSplat(kWidth, firstLane), ConstantVector::get(lanes64));
      Value *lastVec = b.CreateVectorSplat(kWidth, lastQuery);
      row = b.CreateSelect(b.CreateICmpSLT(row, lastVec), row, lastVec);
      block.maskRow[size_t(v)] = b.CreateMul(row, b.CreateVectorSplat(kWidth, maskStrides_[2]));
    }
  }
  if (mask_ >= 0)
    block.maskBase = k_.offset({block.batch, block.head}, {maskStrides_[0], maskStrides_[1]});

  // The block's visible keys end at the causal diagonal of its last row, the
  // window's far edge, the key count and the mask's last extent.
  Value *end = dim(s.kvSeq);
  if (causal_)
    end = k_.min(end, b.CreateAdd(block.last, b.getInt64(1)));
  if (window_ >= 0)
    end = k_.min(end, b.CreateAdd(block.last, b.getInt64(window_ + 1)));
  if (mask_ >= 0)
    end = k_.min(end, maskColumns_);
  block.keyEnd = end;
  return block;
}

/// Qt[c][r] = scale * Q[first + r][c]; padding rows repeat the last row.
/// Each row vector takes 8 columns at a time through a register
/// transposition (at head size 32 and 128 keys a scalar copy was a sixth of
/// the task); the last headSize mod 8 columns are copied one by one.
void FlashAttentionEmitter::packQuery(const Block &block) {
  IRBuilder<> &b = ir();
  const AttentionShape &s = shape_;
  Value *query = k_.buffer(q_);
  Value *headBase = k_.offset({block.batch, block.head}, {dim(s.q.batch), dim(s.q.head)});
  Value *lastRow = b.CreateSub(block.rows, b.getInt64(1));
  auto rowBase = [&](Value *r) {
    Value *row = b.CreateAdd(block.first, k_.min(r, lastRow));
    return b.CreateAdd(headBase, b.CreateMul(row, dim(s.q.position)));
  };
  const int64_t wholeColumns = headSize_ / kWidth * kWidth;
  Value *scale = v_.splat(scale_);
  for (int64_t v = 0; v < rowVectors_; ++v) {
    std::array<Value *, kWidth> base;
    for (int64_t i = 0; i < int64_t(kWidth); ++i)
      base[size_t(i)] = rowBase(b.getInt64(v * kWidth + i));
    v_.loop(b.getInt64(0), b.getInt64(wholeColumns), kWidth, [&](Value *c) {
      std::array<Value *, kWidth> rows;
      for (size_t i = 0; i < kWidth; ++i)
        rows[i] = v_.loadUnaligned(query, b.CreateAdd(base[i], c));
      std::array<Value *, kWidth> columns = transpose8x8(b, rows);
      for (int64_t j = 0; j < int64_t(kWidth); ++j)
        v_.store(b.CreateFMul(columns[size_t(j)], scale), queryT_,
                 outputIndex(b.CreateAdd(c, b.getInt64(j)), v));
    });
  }
  if (wholeColumns == headSize_)
    return;
  Value *scalarScale = ConstantFP::get(b.getFloatTy(), scale_);
  v_.loop(b.getInt64(0), b.getInt64(rowVectors_ * kWidth), 1, [&](Value *r) {
    Value *base = rowBase(r);
    v_.loop(b.getInt64(wholeColumns), b.getInt64(headSize_), 1, [&](Value *c) {
      Value *x = b.CreateAlignedLoad(
          b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), query, b.CreateAdd(base, c)),
          Align(4));
      Value *target = b.CreateAdd(b.CreateMul(c, b.getInt64(kRows)), r);
      b.CreateAlignedStore(b.CreateFMul(x, scalarScale),
                           b.CreateInBoundsGEP(b.getFloatTy(), queryT_, target), Align(4));
    });
  });
}

Value *FlashAttentionEmitter::keyBegin(const Block &block) {
  if (window_ < 0)
    return ir().getInt64(0);
  return k_.max(ir().CreateSub(block.first, ir().getInt64(window_)), ir().getInt64(0));
}

/// Whether the full tile starting at `begin` needs no element-wise mask
/// (attn_mask, which is data, is applied in every tile).
Value *FlashAttentionEmitter::isInterior(const Block &block, Value *begin) {
  IRBuilder<> &b = ir();
  Value *lastKey = b.CreateAdd(begin, b.getInt64(kTileKeys - 1));
  Value *interior = b.CreateICmpSLT(lastKey, block.keyEnd);
  if (causal_)
    interior = b.CreateAnd(interior, b.CreateICmpSLE(lastKey, block.first));
  if (window_ >= 0) {
    Value *low = b.CreateSub(block.last, b.getInt64(window_));
    Value *high = b.CreateAdd(block.first, b.getInt64(window_));
    interior = b.CreateAnd(interior, b.CreateICmpSGE(begin, low));
    interior = b.CreateAnd(interior, b.CreateICmpSLE(lastKey, high));
  }
  return interior;
}

void FlashAttentionEmitter::emitTask(Value *task) {
  IRBuilder<> &b = ir();
  Block block = decodeTask(task);
  // A last block of 1 to 16 rows runs on fewer row vectors (at S = 128 its
  // 8 rows would otherwise cost as much as 24).
  Value *vectors = k_.ceilDiv(block.rows, b.getInt64(kWidth));
  auto emitWith = [&](int64_t rowVectors) {
    return [&, rowVectors] {
      rowVectors_ = rowVectors;
      emitBlock(block);
    };
  };
  k_.ifThenElse(b.CreateICmpEQ(vectors, b.getInt64(kRowVectors)), emitWith(kRowVectors), [&] {
    k_.ifThenElse(b.CreateICmpEQ(vectors, b.getInt64(2)), emitWith(2), emitWith(1));
  });
  rowVectors_ = kRowVectors;
}

/// The task's work on rowVectors_ vectors of rows.
void FlashAttentionEmitter::emitBlock(const Block &block) {
  IRBuilder<> &b = ir();
  packQuery(block);
  v_.loop(b.getInt64(0), b.getInt64(valueSize_), 1, [&](Value *c) {
    for (int64_t v = 0; v < rowVectors_; ++v)
      v_.store(v_.splat(0.0f), output_, outputIndex(c, v));
  });

  // Running max m and sum l of each row vector.
  Values state;
  for (int64_t v = 0; v < rowVectors_; ++v)
    state.push_back(v_.splat(-std::numeric_limits<float>::infinity()));
  for (int64_t v = 0; v < rowVectors_; ++v)
    state.push_back(v_.splat(0.0f));
  state = v_.loop(keyBegin(block), block.keyEnd, kTileKeys, state,
                  [&](Value *begin, ArrayRef<Value *> carried) {
                    Value *end = k_.min(b.CreateAdd(begin, b.getInt64(kTileKeys)), block.keyEnd);
                    return v_.branch(
                        isInterior(block, begin),
                        [&] {
                          return emitTile(block, {begin, end, false}, carried);
                        },
                        [&] {
                          return emitTile(block, {begin, end, true}, carried);
                        });
                  });
  if (fill_)
    state = emitSkippedKeys(block, state);
  ArrayRef<Value *> all(state);
  emitOutput(block, all.take_front(rowVectors_), all.drop_front(rowVectors_));
}

Value *FlashAttentionEmitter::keyIndex(const Block &block, const Tile &tile, Value *key) {
  return tile.boundary ? k_.min(key, ir().CreateSub(block.keyEnd, ir().getInt64(1))) : key;
}

Values FlashAttentionEmitter::emitTile(const Block &block, const Tile &tile,
                                       ArrayRef<Value *> state) {
  IRBuilder<> &b = ir();
  Value *groups = b.getInt64(kTileKeys / kGroup);
  if (tile.boundary)
    groups = k_.ceilDiv(b.CreateSub(tile.end, tile.begin), b.getInt64(kGroup));
  Value *count = b.CreateMul(groups, b.getInt64(kGroup));
  Values tileMax = emitScores(block, tile, groups);
  Values shift, alpha, next(state.size());
  Value *minusInf = v_.splat(-std::numeric_limits<float>::infinity());
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *newMax = v_.max(state[size_t(v)], tileMax[size_t(v)]);
    // While a row has seen only masked keys its max is -inf; shifting by 0
    // keeps e^(S - shift) at 0 instead of NaN.
    Value *safe = b.CreateSelect(b.CreateFCmpOEQ(newMax, minusInf), v_.splat(0.0f), newMax);
    shift.push_back(safe);
    alpha.push_back(v_.expNonPositive(b.CreateFSub(state[size_t(v)], safe)));
    next[size_t(v)] = newMax;
  }
  Values sums = emitExponentials(block, tile, count, shift);
  for (int64_t v = 0; v < rowVectors_; ++v)
    next[size_t(rowVectors_ + v)] =
        v_.fma(state[size_t(rowVectors_ + v)], alpha[size_t(v)], sums[size_t(v)]);
  emitValues(block, tile, count, alpha);
  return next;
}

/// S[t][r] of the tile into scores_, returning the tile's max per row.
Values FlashAttentionEmitter::emitScores(const Block &block, const Tile &tile, Value *groups) {
  IRBuilder<> &b = ir();
  Value *keys = k_.buffer(key_);
  Value *keyStride = dim(shape_.k.position);
  Values init(rowVectors_, v_.splat(-std::numeric_limits<float>::infinity()));
  return v_.loop(b.getInt64(0), groups, 1, init, [&](Value *g, ArrayRef<Value *> tileMax) {
    Value *firstKey = b.CreateAdd(tile.begin, b.CreateMul(g, b.getInt64(kGroup)));
    std::array<Value *, kGroup> key, clamped, rowBase;
    for (int64_t i = 0; i < kGroup; ++i) {
      key[size_t(i)] = b.CreateAdd(firstKey, b.getInt64(i));
      clamped[size_t(i)] = keyIndex(block, tile, key[size_t(i)]);
      rowBase[size_t(i)] = b.CreateAdd(block.keyBase, b.CreateMul(clamped[size_t(i)], keyStride));
      // The next group's K rows: rows far apart (the 3-D layout, one page
      // or more between rows) defeat the hardware prefetchers.
      Value *next = b.CreateAdd(key[size_t(i)], b.getInt64(kGroup));
      v_.prefetch(keys, b.CreateAdd(block.keyBase, b.CreateMul(next, keyStride)), headSize_);
    }
    Values zero(kGroup * rowVectors_, v_.splat(0.0f));
    Values acc = v_.loop(
        b.getInt64(0), b.getInt64(headSize_), 1, zero, [&](Value *c, ArrayRef<Value *> carried) {
          std::array<Value *, kRowVectors> q;
          Value *row = b.CreateMul(c, b.getInt64(kRows));
          for (int64_t v = 0; v < rowVectors_; ++v)
            q[size_t(v)] = v_.load(queryT_, b.CreateAdd(row, b.getInt64(v * kWidth)));
          Values next(carried.begin(), carried.end());
          for (int64_t i = 0; i < kGroup; ++i) {
            Value *k = v_.broadcast(keys, b.CreateAdd(rowBase[size_t(i)], c));
            for (int64_t v = 0; v < rowVectors_; ++v) {
              Value *&a = next[size_t(i * rowVectors_ + v)];
              a = v_.fma(k, q[size_t(v)], a);
            }
          }
          return next;
        });
    Values nextMax(tileMax.begin(), tileMax.end());
    for (int64_t i = 0; i < kGroup; ++i) {
      Value **row = &acc[size_t(i * rowVectors_)];
      applyMasks(block, tile, key[size_t(i)], clamped[size_t(i)], row);
      Value *t = b.CreateSub(key[size_t(i)], tile.begin);
      for (int64_t v = 0; v < rowVectors_; ++v) {
        Value *index = b.CreateAdd(b.CreateMul(t, b.getInt64(kRows)), b.getInt64(v * kWidth));
        v_.store(row[v], scores_, index);
        nextMax[size_t(v)] = v_.max(nextMax[size_t(v)], row[v]);
      }
    }
    return nextMax;
  });
}

Values FlashAttentionEmitter::loadMask(const Block &block, Value *clampedKey) {
  IRBuilder<> &b = ir();
  Value *mask = k_.buffer(unsigned(mask_));
  Value *offset = b.CreateAdd(block.maskBase, b.CreateMul(clampedKey, maskStrides_[3]));
  Type *element = k_.storageType(maskType_);
  Values result;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    if (rowBroadcast_) {
      Value *scalar = b.CreateLoad(element, b.CreateInBoundsGEP(element, mask, offset));
      result.push_back(b.CreateVectorSplat(kWidth, scalar));
    } else {
      Value *indices = b.CreateAdd(block.maskRow[size_t(v)], b.CreateVectorSplat(kWidth, offset));
      Value *pointers = b.CreateInBoundsGEP(element, mask, indices);
      result.push_back(
          b.CreateMaskedGather(FixedVectorType::get(element, kWidth), pointers, Align(1)));
    }
  }
  return result;
}

/// Adds attn_mask to the scores of `key` (all row vectors), then in a
/// boundary tile sets the scores of keys past the tile, past the causal
/// diagonal or outside the window to -inf. With a finite fill, a key the
/// band or a bool mask hides scores the fill and the float mask is added
/// after that (the unfused Where-then-Add); only keys past the tile are -inf.
void FlashAttentionEmitter::applyMasks(const Block &block, const Tile &tile, Value *key,
                                       Value *clampedKey, Value **acc) {
  IRBuilder<> &b = ir();
  Value *minusInf = v_.splat(-std::numeric_limits<float>::infinity());
  Value *hiddenScore = fill_ ? v_.splat(*fill_) : minusInf;
  Value *key32 = b.CreateVectorSplat(kWidth, b.CreateTrunc(key, b.getInt32Ty()));
  auto inBand = [&](int64_t v) {
    Value *visible = ConstantInt::getTrue(FixedVectorType::get(b.getInt1Ty(), kWidth));
    Value *position = block.position[size_t(v)];
    if (causal_)
      visible = b.CreateAnd(visible, b.CreateICmpSLE(key32, position));
    if (window_ >= 0) {
      Value *distance = b.CreateSub(key32, position);
      Value *radius = ConstantInt::get(distance->getType(), uint64_t(window_));
      Value *negRadius = ConstantInt::get(distance->getType(), uint64_t(-window_), true);
      visible = b.CreateAnd(visible, b.CreateICmpSLE(distance, radius));
      visible = b.CreateAnd(visible, b.CreateICmpSGE(distance, negRadius));
    }
    return visible;
  };
  if (fill_ && tile.boundary && (causal_ || window_ >= 0))
    for (int64_t v = 0; v < rowVectors_; ++v)
      acc[v] = b.CreateSelect(inBand(v), acc[v], hiddenScore);
  if (mask_ >= 0) {
    Values m = loadMask(block, clampedKey);
    for (int64_t v = 0; v < rowVectors_; ++v) {
      if (maskType_ == DType::Bool)
        acc[v] = b.CreateSelect(
            b.CreateICmpNE(m[size_t(v)], Constant::getNullValue(m[size_t(v)]->getType())), acc[v],
            hiddenScore);
      else
        acc[v] = b.CreateFAdd(acc[v], m[size_t(v)]);
    }
  }
  if (!tile.boundary)
    return;
  Value *inTile = b.CreateICmpSLT(key, tile.end);
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *visible = b.CreateVectorSplat(kWidth, inTile);
    if (!fill_)
      visible = b.CreateAnd(visible, inBand(v));
    acc[v] = b.CreateSelect(visible, acc[v], minusInf);
  }
}

/// The scores of a key no row of the block sees: the fill, plus the float
/// mask inside its extent.
Values FlashAttentionEmitter::skippedScores(const Block &block, Value *key) {
  IRBuilder<> &b = ir();
  Value *fill = v_.splat(*fill_);
  if (mask_ < 0 || maskType_ == DType::Bool)
    return Values(rowVectors_, fill);
  Value *inside = b.CreateICmpSLT(key, maskColumns_);
  Values m = loadMask(block, b.CreateSelect(inside, key, b.getInt64(0)));
  Values scores;
  for (int64_t v = 0; v < rowVectors_; ++v)
    scores.push_back(b.CreateSelect(inside, b.CreateFAdd(fill, m[size_t(v)]), fill));
  return scores;
}

/// The online softmax update for one skipped key (as emitTile does for a
/// tile): m' = max(m, t), l = e^(m - m') l + e^(t - m'), and
/// Ot[c] = e^(m - m') Ot[c] + e^(t - m') V[key][c].
Values FlashAttentionEmitter::addSkippedKey(const Block &block, Value *key,
                                            ArrayRef<Value *> scores, ArrayRef<Value *> state) {
  IRBuilder<> &b = ir();
  Value *minusInf = v_.splat(-std::numeric_limits<float>::infinity());
  Values next(state.size()), alpha, p;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *newMax = v_.max(state[size_t(v)], scores[size_t(v)]);
    Value *safe = b.CreateSelect(b.CreateFCmpOEQ(newMax, minusInf), v_.splat(0.0f), newMax);
    alpha.push_back(v_.expNonPositive(b.CreateFSub(state[size_t(v)], safe)));
    p.push_back(v_.expNonPositive(b.CreateFSub(scores[size_t(v)], safe)));
    next[size_t(v)] = newMax;
    next[size_t(rowVectors_ + v)] = v_.fma(state[size_t(rowVectors_ + v)], alpha.back(), p.back());
  }
  Value *values = k_.buffer(value_);
  Value *rowBase = b.CreateAdd(block.valueBase, b.CreateMul(key, dim(shape_.v.position)));
  v_.loop(b.getInt64(0), b.getInt64(valueSize_), 1, [&](Value *c) {
    Value *x = v_.broadcast(values, b.CreateAdd(rowBase, c));
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *index = outputIndex(c, v);
      Value *scaled = b.CreateFMul(v_.load(output_, index), alpha[size_t(v)]);
      v_.store(v_.fma(x, p[size_t(v)], scaled), output_, index);
    }
  });
  return next;
}

/// Folds the keys outside [keyBegin, keyEnd) into the state (see the
/// header); `state` is the band pass's maxima then sums.
Values FlashAttentionEmitter::emitSkippedKeys(const Block &block, ArrayRef<Value *> state) {
  IRBuilder<> &b = ir();
  // Keys scoring at most (a lane's max - gap) weigh 0 in f32 whatever
  // comes later: the max only grows. (t - max is compared, not t with
  // max - gap: next to finfo.min the gap would round away.)
  Value *minusGap = v_.splat(-kNegligibleGap);
  // Without a per-row mask every lane's skipped score is the same: compare
  // it, as a scalar, with the lowest max (NaN lanes ignored) instead.
  bool sameForAllRows = mask_ < 0 || maskType_ == DType::Bool || rowBroadcast_;
  Value *lowestMax = nullptr;
  if (sameForAllRows) {
    Value *lowest = state[0];
    for (int64_t v = 1; v < rowVectors_; ++v)
      lowest = b.CreateMinNum(lowest, state[size_t(v)]);
    lowestMax = b.CreateFPMinReduce(lowest);
  }
  auto matters = [&](ArrayRef<Value *> scores) {
    if (sameForAllRows) {
      Value *score = b.CreateExtractElement(scores[0], uint64_t(0));
      Value *gap = ConstantFP::get(b.getFloatTy(), -kNegligibleGap);
      return b.CreateFCmpOGT(b.CreateFSub(score, lowestMax), gap);
    }
    Value *any = b.getFalse();
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *below = b.CreateFSub(scores[size_t(v)], state[size_t(v)]);
      any = b.CreateOr(any, b.CreateOrReduce(b.CreateFCmpOGT(below, minusGap)));
    }
    return any;
  };
  Value *kvSeq = dim(shape_.kvSeq);
  Value *begin = keyBegin(block);
  Value *lowEnd = k_.min(begin, kvSeq), *highBegin = k_.max(block.keyEnd, begin);
  auto walkRange = [&](Value *from, Value *to, ArrayRef<Value *> init) {
    return v_.loop(from, to, 1, init, [&](Value *key, ArrayRef<Value *> carried) {
      Values scores = skippedScores(block, key);
      return v_.branch(
          matters(scores), [&] { return addSkippedKey(block, key, scores, carried); },
          [&] { return Values(carried.begin(), carried.end()); });
    });
  };
  auto walk = [&](ArrayRef<Value *> init) {
    return walkRange(highBegin, kvSeq, walkRange(b.getInt64(0), lowEnd, init));
  };
  if (mask_ >= 0 && maskType_ != DType::Bool)
    return walk(state);
  // Every skipped key scores the fill: one test decides for all of them.
  return v_.branch(
      matters(Values(rowVectors_, v_.splat(*fill_))), [&] { return walk(state); },
      [&] { return Values(state.begin(), state.end()); });
}

/// P = e^(S - shift) in place over the first `count` keys; returns the sums.
Values FlashAttentionEmitter::emitExponentials(const Block &block, const Tile &tile, Value *count,
                                               ArrayRef<Value *> shift) {
  IRBuilder<> &b = ir();
  Values zero(rowVectors_, v_.splat(0.0f));
  Value *values = k_.buffer(value_);
  Value *valueStride = dim(shape_.v.position);
  return v_.loop(b.getInt64(0), count, 1, zero, [&](Value *t, ArrayRef<Value *> sums) {
    // V row t, which P·V reads next: the exp leaves the load ports idle,
    // and P·V walks V across rows, a new cache line at every step (5 ms of
    // 155 at S = 2048). Up to 64 floats a row, so the tile fits L1.
    Value *key = keyIndex(block, tile, b.CreateAdd(tile.begin, t));
    v_.prefetch(values, b.CreateAdd(block.valueBase, b.CreateMul(key, valueStride)),
                std::min<int64_t>(valueSize_, 64));
    Values next;
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *index = b.CreateAdd(b.CreateMul(t, b.getInt64(kRows)), b.getInt64(v * kWidth));
      Value *x = b.CreateFSub(v_.load(scores_, index), shift[size_t(v)]);
      Value *p = v_.expNonPositive(x);
      v_.store(p, scores_, index);
      next.push_back(b.CreateFAdd(sums[size_t(v)], p));
    }
    return next;
  });
}

/// Ot[c][r] = alpha[r] * Ot[c][r] + sum_t V[t][c] * P[t][r] for `columns`
/// (up to kGroup) value columns from `firstColumn`, over the tile's keys.
void FlashAttentionEmitter::emitValueGroup(const Block &block, const Tile &tile, Value *count,
                                           ArrayRef<Value *> alpha, Value *firstColumn,
                                           int64_t columns) {
  IRBuilder<> &b = ir();
  Value *values = k_.buffer(value_);
  Value *valueStride = dim(shape_.v.position);
  Values acc;
  for (int64_t i = 0; i < columns; ++i)
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *index = outputIndex(b.CreateAdd(firstColumn, b.getInt64(i)), v);
      acc.push_back(b.CreateFMul(v_.load(output_, index), alpha[size_t(v)]));
    }
  acc = v_.loop(b.getInt64(0), count, 1, acc, [&](Value *t, ArrayRef<Value *> carried) {
    Value *key = keyIndex(block, tile, b.CreateAdd(tile.begin, t));
    Value *rowBase = b.CreateAdd(block.valueBase, b.CreateMul(key, valueStride));
    std::array<Value *, kRowVectors> p;
    for (int64_t v = 0; v < rowVectors_; ++v)
      p[size_t(v)] = v_.load(scores_, outputIndex(t, v));
    Values next(carried.begin(), carried.end());
    for (int64_t i = 0; i < columns; ++i) {
      Value *x =
          v_.broadcast(values, b.CreateAdd(rowBase, b.CreateAdd(firstColumn, b.getInt64(i))));
      for (int64_t v = 0; v < rowVectors_; ++v) {
        Value *&a = next[size_t(i * rowVectors_ + v)];
        a = v_.fma(x, p[size_t(v)], a);
      }
    }
    return next;
  });
  for (int64_t i = 0; i < columns; ++i)
    for (int64_t v = 0; v < rowVectors_; ++v)
      v_.store(acc[size_t(i * rowVectors_ + v)], output_,
               outputIndex(b.CreateAdd(firstColumn, b.getInt64(i)), v));
}

/// Ot = alpha * Ot + Vᵀ P over the tile: kGroup columns at a time, then the
/// last valueSize_ mod kGroup columns.
void FlashAttentionEmitter::emitValues(const Block &block, const Tile &tile, Value *count,
                                       ArrayRef<Value *> alpha) {
  IRBuilder<> &b = ir();
  int64_t fullGroups = valueSize_ / kGroup, rest = valueSize_ % kGroup;
  v_.loop(b.getInt64(0), b.getInt64(fullGroups), 1, [&](Value *g) {
    emitValueGroup(block, tile, count, alpha, b.CreateMul(g, b.getInt64(kGroup)), kGroup);
  });
  if (rest)
    emitValueGroup(block, tile, count, alpha, b.getInt64(fullGroups * kGroup), rest);
}

/// Y[first + r][c] = Ot[c][r] / l[r] for the valid rows: 8 columns at a
/// time through a register transposition, then the last valueSize mod 8
/// columns one by one.
void FlashAttentionEmitter::emitOutput(const Block &block, ArrayRef<Value *> maxima,
                                       ArrayRef<Value *> sums) {
  IRBuilder<> &b = ir();
  const AttentionShape &s = shape_;
  // No keys at all (an empty K) gives 0 as in the reference; a row whose
  // keys are all masked (its max is still -inf) gives NaN, as 0 / 0 does
  // there (the exp gives e^-60, not 0, for masked keys).
  Value *noKeys = b.CreateICmpEQ(dim(s.kvSeq), b.getInt64(0));
  Value *minusInf = v_.splat(-std::numeric_limits<float>::infinity());
  Value *nan = v_.splat(std::numeric_limits<float>::quiet_NaN());
  std::array<Value *, kRowVectors> inverse;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *masked = b.CreateFCmpOEQ(maxima[size_t(v)], minusInf);
    Value *scale = b.CreateSelect(masked, nan, b.CreateFDiv(v_.splat(1.0f), sums[size_t(v)]));
    inverse[size_t(v)] = b.CreateSelect(noKeys, v_.splat(0.0f), scale);
  }
  Value *y = k_.buffer(y_);
  Value *headBase = k_.offset({block.batch, block.head}, {dim(s.y.batch), dim(s.y.head)});
  auto rowBase = [&](Value *r) {
    return b.CreateAdd(headBase, b.CreateMul(b.CreateAdd(block.first, r), dim(s.y.position)));
  };
  const int64_t wholeColumns = valueSize_ / kWidth * kWidth;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *validRows = b.CreateSub(block.rows, b.getInt64(v * kWidth));
    std::array<Value *, kWidth> base;
    for (int64_t i = 0; i < int64_t(kWidth); ++i)
      base[size_t(i)] = rowBase(b.getInt64(v * kWidth + i));
    // Rows [0, rows) of this vector's 8, for 8 columns from c.
    auto storeColumns = [&](int64_t rows) {
      v_.loop(b.getInt64(0), b.getInt64(wholeColumns), kWidth, [&](Value *c) {
        std::array<Value *, kWidth> columns;
        for (int64_t j = 0; j < int64_t(kWidth); ++j)
          columns[size_t(j)] = b.CreateFMul(
              v_.load(output_, outputIndex(b.CreateAdd(c, b.getInt64(j)), v)), inverse[size_t(v)]);
        std::array<Value *, kWidth> out = transpose8x8(b, columns);
        for (int64_t i = 0; i < int64_t(kWidth); ++i) {
          auto store = [&] {
            v_.storeUnaligned(out[size_t(i)], y, b.CreateAdd(base[size_t(i)], c));
          };
          if (i < rows)
            store();
          else
            k_.ifThen(b.CreateICmpSLT(b.getInt64(i), validRows), store);
        }
      });
    };
    if (wholeColumns > 0)
      k_.ifThen(b.CreateICmpSGT(validRows, b.getInt64(0)), [&] {
        k_.ifThenElse(
            b.CreateICmpSGE(validRows, b.getInt64(kWidth)), [&] { storeColumns(kWidth); },
            [&] { storeColumns(1); });
      });
  }
  if (wholeColumns == valueSize_)
    return;
  v_.loop(b.getInt64(wholeColumns), b.getInt64(valueSize_), 1, [&](Value *c) {
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *index = outputIndex(c, v);
      v_.store(b.CreateFMul(v_.load(output_, index), inverse[size_t(v)]), output_, index);
    }
  });
  v_.loop(b.getInt64(0), block.rows, 1, [&](Value *r) {
    Value *base = rowBase(r);
    v_.loop(b.getInt64(wholeColumns), b.getInt64(valueSize_), 1, [&](Value *c) {
      Value *x = b.CreateAlignedLoad(
          b.getFloatTy(),
          b.CreateInBoundsGEP(b.getFloatTy(), output_,
                              b.CreateAdd(b.CreateMul(c, b.getInt64(kRows)), r)),
          Align(4));
      b.CreateAlignedStore(x, b.CreateInBoundsGEP(b.getFloatTy(), y, b.CreateAdd(base, c)),
                           Align(4));
    });
  });
}

} // namespace

bool canUseFlashAttention(const LoweringContext &ctx, const Node &node,
                          const AttentionShape &shape) {
  if (shape.dtype != DType::F32 || !ctx.hasAvx2Fma() || shape.hasPast)
    return false;
  if (node.getFloat("softcap", 0.0f) != 0.0f)
    return false;
  if (node.numResults() > 3 && isNeeded(ctx, node.result(3)))
    return false;
  std::optional<int64_t> headSize = shape.headSize.constant();
  std::optional<int64_t> valueSize = shape.vHeadSize.constant();
  return headSize && valueSize && *headSize > 0 && *valueSize > 0 && *headSize <= kMaxHeadSize &&
         *valueSize <= kMaxHeadSize;
}

void emitFlashAttention(LoweringContext &ctx, const Node &node, const AttentionShape &shape) {
  FlashAttentionEmitter emitter(ctx, node, shape);
  emitter.emit();
}

} // namespace onnxc::lower
