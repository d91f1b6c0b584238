//===- codegen/lower/attention/FlashAttentionTiles.cpp - One key tile of the fused attention -===//
//
// A tile of the block's keys (FlashAttentionLowering.cpp): the scores
// S = Qt·Kᵀ of `group` keys at a time into the scores scratch (K rows
// prefetched a group ahead), the masks, the online softmax update, the exp
// pass (which prefetches the V rows P·V reads next) and Ot = alpha Ot + Vᵀ P,
// `group` value columns at a time.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/FlashAttentionEmitter.h"

#include <algorithm>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;
using Values = FlashValues;

Value *FlashAttentionEmitter::keyIndex(const Block &block, const Tile &tile, Value *key) {
  return tile.boundary ? k_.min(key, ir().CreateSub(block.keyEnd, ir().getInt64(1))) : key;
}

Values FlashAttentionEmitter::emitTile(const Block &block, const Tile &tile,
                                       ArrayRef<Value *> state) {
  IRBuilder<> &b = ir();
  // A single row scores width() keys at a time (FlashAttentionSingleRow.cpp).
  const int64_t group = singleRow_ ? int64_t(width()) : keyGroup();
  Value *groups = b.getInt64(geometry_.tileKeys / group);
  if (tile.boundary)
    groups = k_.ceilDiv(b.CreateSub(tile.end, tile.begin), b.getInt64(group));
  Value *count = b.CreateMul(groups, b.getInt64(group));
  Values tileMax =
      singleRow_ ? emitSingleRowScores(block, tile, groups) : emitScores(block, tile, groups);
  Values shift, alpha, next(state.size());
  Value *minusInf = minusInfinity();
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
  if (singleRow_)
    emitSingleRowValues(block, tile, count, alpha[0]);
  else
    emitValues(block, tile, count, alpha);
  return next;
}

/// S[t][r] of the tile into scores_, returning the tile's max per row.
Values FlashAttentionEmitter::emitScores(const Block &block, const Tile &tile, Value *groups) {
  IRBuilder<> &b = ir();
  const int64_t group = keyGroup();
  Values init(rowVectors_, minusInfinity());
  return v_.loop(b.getInt64(0), groups, 1, init, [&](Value *g, ArrayRef<Value *> tileMax) {
    Value *firstKey = b.CreateAdd(tile.begin, b.CreateMul(g, b.getInt64(group)));
    Values key(static_cast<size_t>(group)), clamped(key.size()), rowBase(key.size());
    for (int64_t i = 0; i < group; ++i) {
      key[size_t(i)] = b.CreateAdd(firstKey, b.getInt64(i));
      clamped[size_t(i)] = keyIndex(block, tile, key[size_t(i)]);
      rowBase[size_t(i)] = keyRow(block, clamped[size_t(i)], tile.cached);
      // The next group's K rows: rows far apart (the 3-D layout, one page
      // or more between rows) defeat the hardware prefetchers.
      Value *next = b.CreateAdd(key[size_t(i)], b.getInt64(group));
      v_.prefetch(keyRow(block, next, tile.cached), b.getInt64(0), headSize_);
    }
    // Columns, or column pairs on paired lanes (FlashAttentionPairedColumns.cpp).
    const int64_t columns = pairedColumns_ ? headSize_ / 2 : headSize_;
    Values zero(group * rowVectors_, v_.splat(0.0f));
    Values acc = v_.loop(
        b.getInt64(0), b.getInt64(columns), 1, zero, [&](Value *c, ArrayRef<Value *> carried) {
          Values q(static_cast<size_t>(rowVectors_));
          Value *row = b.CreateMul(c, b.getInt64(rows()));
          for (int64_t v = 0; v < rowVectors_; ++v)
            q[size_t(v)] =
                pairedColumns_
                    ? v_.load(queryPairs_, b.CreateMul(c, b.getInt64(width())))
                    : v_.load(queryT_, b.CreateAdd(row, b.getInt64(v * int64_t(width()))));
          Values next(carried.begin(), carried.end());
          for (int64_t i = 0; i < group; ++i) {
            Value *k = pairedColumns_
                           ? v_.broadcastPair(rowBase[size_t(i)], b.CreateMul(c, b.getInt64(2)))
                           : v_.broadcast(rowBase[size_t(i)], c);
            for (int64_t v = 0; v < rowVectors_; ++v) {
              Value *&a = next[size_t(i * rowVectors_ + v)];
              a = v_.fma(k, q[size_t(v)], a);
            }
          }
          return next;
        });
    if (pairedColumns_)
      for (Value *&sum : acc)
        sum = addLanePairs(sum);
    Values nextMax(tileMax.begin(), tileMax.end());
    for (int64_t i = 0; i < group; ++i) {
      Value **row = &acc[size_t(i * rowVectors_)];
      applyMasks(block, tile, key[size_t(i)], clamped[size_t(i)], row);
      Value *t = b.CreateSub(key[size_t(i)], tile.begin);
      for (int64_t v = 0; v < rowVectors_; ++v) {
        Value *index =
            b.CreateAdd(b.CreateMul(t, b.getInt64(rows())), b.getInt64(v * int64_t(width())));
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
      result.push_back(b.CreateVectorSplat(width(), scalar));
    } else {
      Value *indices = b.CreateAdd(block.maskRow[size_t(v)], b.CreateVectorSplat(width(), offset));
      Value *pointers = b.CreateInBoundsGEP(element, mask, indices);
      result.push_back(
          b.CreateMaskedGather(FixedVectorType::get(element, width()), pointers, Align(1)));
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
  Value *minusInf = minusInfinity();
  Value *hiddenScore = fill_ ? v_.splat(*fill_) : minusInf;
  Value *key32 = b.CreateVectorSplat(width(), b.CreateTrunc(key, b.getInt32Ty()));
  auto inBand = [&](int64_t v) {
    Value *visible = ConstantInt::getTrue(FixedVectorType::get(b.getInt1Ty(), width()));
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
    Value *visible = b.CreateVectorSplat(width(), inTile);
    if (!fill_)
      visible = b.CreateAnd(visible, inBand(v));
    acc[v] = b.CreateSelect(visible, acc[v], minusInf);
  }
}

/// The scores of a key no row of the block sees: the fill, plus the float

/// P = e^(S - shift) in place over the first `count` keys; returns the sums.
Values FlashAttentionEmitter::emitExponentials(const Block &block, const Tile &tile, Value *count,
                                               ArrayRef<Value *> shift) {
  IRBuilder<> &b = ir();
  Values zero(rowVectors_, v_.splat(0.0f));
  return v_.loop(b.getInt64(0), count, 1, zero, [&](Value *t, ArrayRef<Value *> sums) {
    // V row t, which P·V reads next: the exp leaves the load ports idle,
    // and P·V walks V across rows, a new cache line at every step (5 ms of
    // 155 at S = 2048). Up to 64 floats a row, so the tile fits L1.
    Value *key = keyIndex(block, tile, b.CreateAdd(tile.begin, t));
    v_.prefetch(valueRow(block, key, tile.cached), b.getInt64(0),
                std::min<int64_t>(valueSize_, 64));
    Values next;
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *index =
          b.CreateAdd(b.CreateMul(t, b.getInt64(rows())), b.getInt64(v * int64_t(width())));
      Value *x = b.CreateFSub(v_.load(scores_, index), shift[size_t(v)]);
      Value *p = v_.expNonPositive(x);
      v_.store(p, scores_, index);
      next.push_back(b.CreateFAdd(sums[size_t(v)], p));
    }
    return next;
  });
}

/// Ot[c][r] = alpha[r] * Ot[c][r] + sum_t V[t][c] * P[t][r] for `columns`
/// (up to keyGroup()) value columns from `firstColumn`, over the tile's keys.
void FlashAttentionEmitter::emitValueGroup(const Block &block, const Tile &tile, Value *count,
                                           ArrayRef<Value *> alpha, Value *firstColumn,
                                           int64_t columns) {
  IRBuilder<> &b = ir();
  Values acc;
  for (int64_t i = 0; i < columns; ++i)
    for (int64_t v = 0; v < rowVectors_; ++v) {
      Value *index = outputIndex(b.CreateAdd(firstColumn, b.getInt64(i)), v);
      acc.push_back(b.CreateFMul(v_.load(output_, index), alpha[size_t(v)]));
    }
  acc = v_.loop(b.getInt64(0), count, 1, acc, [&](Value *t, ArrayRef<Value *> carried) {
    Value *key = keyIndex(block, tile, b.CreateAdd(tile.begin, t));
    Value *rowBase = valueRow(block, key, tile.cached);
    Values p(static_cast<size_t>(rowVectors_));
    for (int64_t v = 0; v < rowVectors_; ++v)
      p[size_t(v)] = v_.load(scores_, outputIndex(t, v));
    Values next(carried.begin(), carried.end());
    for (int64_t i = 0; i < columns; ++i) {
      Value *column = b.CreateAdd(firstColumn, b.getInt64(i));
      Value *x = pairedColumns_ ? v_.broadcastPair(rowBase, b.CreateMul(column, b.getInt64(2)))
                                : v_.broadcast(rowBase, column);
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

/// Ot = alpha * Ot + Vᵀ P over the tile: keyGroup() columns at a time, then the
/// last valueSize_ mod keyGroup() columns (column pairs on paired lanes: Op).
void FlashAttentionEmitter::emitValues(const Block &block, const Tile &tile, Value *count,
                                       ArrayRef<Value *> alpha) {
  IRBuilder<> &b = ir();
  const int64_t group = keyGroup(), columns = pairedColumns_ ? valueSize_ / 2 : valueSize_;
  int64_t fullGroups = columns / group, rest = columns % group;
  v_.loop(b.getInt64(0), b.getInt64(fullGroups), 1, [&](Value *g) {
    emitValueGroup(block, tile, count, alpha, b.CreateMul(g, b.getInt64(group)), group);
  });
  if (rest)
    emitValueGroup(block, tile, count, alpha, b.getInt64(fullGroups * group), rest);
}

} // namespace onnxc::lower
