//===- codegen/lower/attention/FlashAttentionSingleRow.cpp - One query row, lanes over d -===//
//
// A block of one query row (a decode step, or the last row of a sequence of
// R*n + 1 rows) on the row-lane kernel would fill one lane of each vector
// and waste the others: at 16 lanes, 15/16 of every Q·Kᵀ and P·V FMA. Here
// the two products run with the lanes over the head's columns instead:
//
//   s_j = sum over column vectors c of K[j][c] * q[c]   (w keys, w partial
//         vectors, folded into one vector of w scores by a shuffle tree)
//   o[c] = alpha * o[c] + sum_t p_t * V[t][c]           (o in registers)
//
// so each key costs about d/w loads and FMAs per product and the step is
// bound by reading the cache, as it must be. Everything else is the
// row-lane kernel's, one row vector wide with every lane holding the same
// row (its band position is splat): the masks, the online softmax and the
// exp pass run on the scores scratch as usual, and at the end o is spread
// into Ot, so the skipped keys of a finite fill and the output store are
// shared too.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/FlashAttentionEmitter.h"

#include <algorithm>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;
using Values = FlashValues;

namespace {

/// A vector whose lanes hold partial sums: lane l belongs to key keyOf[l],
/// each key's lanes in one contiguous segment.
struct PartialSums {
  Value *vector;
  std::vector<int> keyOf;
};

/// Folds two vectors of segments of `length` lanes into one of segments
/// of length / 2: x's keys in the low half, y's in the high half.
PartialSums foldPair(IRBuilder<> &b, const PartialSums &x, const PartialSums &y, int length) {
  const int lanes = int(x.keyOf.size()), half = lanes / 2, step = length / 2;
  SmallVector<int, 16> first, second;
  std::vector<int> keyOf;
  for (int lane = 0; lane < lanes; ++lane) {
    bool fromY = lane >= half;
    int j = fromY ? lane - half : lane;
    int index = (j / step) * length + j % step;
    first.push_back((fromY ? lanes : 0) + index);
    second.push_back((fromY ? lanes : 0) + index + step);
    keyOf.push_back((fromY ? y : x).keyOf[size_t(index)]);
  }
  Value *sum = b.CreateFAdd(b.CreateShuffleVector(x.vector, y.vector, first),
                            b.CreateShuffleVector(x.vector, y.vector, second));
  return {sum, std::move(keyOf)};
}

} // namespace

Value *FlashAttentionEmitter::rowChunk(Value *row, int64_t chunk, int64_t size) {
  IRBuilder<> &b = ir();
  const int64_t w = int64_t(width());
  Value *index = b.getInt64(chunk * w);
  if ((chunk + 1) * w <= size)
    return v_.loadUnaligned(row, index);
  // The row's last size mod w columns: lanes past the row are not read.
  SmallVector<Constant *, 16> live;
  for (int64_t lane = 0; lane < w; ++lane)
    live.push_back(b.getInt1(chunk * w + lane < size));
  return b.CreateMaskedLoad(v_.type(), b.CreateInBoundsGEP(b.getFloatTy(), row, index), Align(4),
                            ConstantVector::get(live), v_.splat(0.0f));
}

/// q (scaled, zero past the head size) from Qt, and o = 0.
void FlashAttentionEmitter::beginSingleRow(const Block &block) {
  IRBuilder<> &b = ir();
  packQuery(block);
  const int64_t paddedHead = chunksOf(headSize_) * int64_t(width());
  v_.loop(b.getInt64(0), b.getInt64(paddedHead), 1, [&](Value *c) {
    Value *inside = b.CreateICmpSLT(c, b.getInt64(headSize_));
    Value *from = b.CreateSelect(inside, b.CreateMul(c, b.getInt64(rows())), b.getInt64(0));
    Value *x = b.CreateAlignedLoad(b.getFloatTy(),
                                   b.CreateInBoundsGEP(b.getFloatTy(), queryT_, from), Align(4));
    x = b.CreateSelect(inside, x, ConstantFP::get(b.getFloatTy(), 0.0));
    b.CreateAlignedStore(x, b.CreateInBoundsGEP(b.getFloatTy(), queryRow_, c), Align(4));
  });
  const int64_t valueChunks = chunksOf(valueSize_);
  for (int64_t chunk = 0; chunk < valueChunks; ++chunk)
    v_.store(v_.splat(0.0f), rowOutput_, b.getInt64(chunk * int64_t(width())));
}

/// Ot[c][lanes] = o[c]: the row-lane layout the skipped keys and the output
/// store read.
void FlashAttentionEmitter::endSingleRow() {
  IRBuilder<> &b = ir();
  v_.loop(b.getInt64(0), b.getInt64(valueSize_), 1,
          [&](Value *c) { v_.store(v_.broadcast(rowOutput_, c), output_, outputIndex(c, 0)); });
}

/// S[t][lanes] of the tile's `groups` groups of w keys into scores_; the
/// tile's max.
Values FlashAttentionEmitter::emitSingleRowScores(const Block &block, const Tile &tile,
                                                  Value *groups) {
  IRBuilder<> &b = ir();
  const int64_t w = int64_t(width());
  const int64_t chunks = chunksOf(headSize_);
  Values init{minusInfinity()};
  return v_.loop(b.getInt64(0), groups, 1, init, [&](Value *g, ArrayRef<Value *> tileMax) {
    Value *firstKey = b.CreateAdd(tile.begin, b.CreateMul(g, b.getInt64(w)));
    Values key(static_cast<size_t>(w)), clamped(key.size()), row(key.size());
    for (int64_t i = 0; i < w; ++i) {
      key[size_t(i)] = b.CreateAdd(firstKey, b.getInt64(i));
      clamped[size_t(i)] = keyIndex(block, tile, key[size_t(i)]);
      row[size_t(i)] = keyRow(block, clamped[size_t(i)], tile.cached);
      v_.prefetch(keyRow(block, b.CreateAdd(key[size_t(i)], b.getInt64(w)), tile.cached),
                  b.getInt64(0), headSize_);
    }
    std::vector<PartialSums> parts;
    for (int64_t i = 0; i < w; ++i) {
      Value *acc = v_.splat(0.0f);
      for (int64_t chunk = 0; chunk < chunks; ++chunk)
        acc = v_.fma(rowChunk(row[size_t(i)], chunk, headSize_),
                     v_.load(queryRow_, b.getInt64(chunk * w)), acc);
      parts.push_back({acc, std::vector<int>(size_t(w), int(i))});
    }
    for (int length = int(w); length > 1; length /= 2) {
      std::vector<PartialSums> folded;
      for (size_t i = 0; i < parts.size(); i += 2)
        folded.push_back(foldPair(b, parts[i], parts[i + 1], length));
      parts = std::move(folded);
    }
    const PartialSums &scores = parts[0];
    Value *nextMax = tileMax[0];
    for (int64_t i = 0; i < w; ++i) {
      int lane =
          int(std::find(scores.keyOf.begin(), scores.keyOf.end(), int(i)) - scores.keyOf.begin());
      Value *score = b.CreateShuffleVector(scores.vector, SmallVector<int, 16>(size_t(w), lane));
      applyMasks(block, tile, key[size_t(i)], clamped[size_t(i)], &score);
      Value *t = b.CreateSub(key[size_t(i)], tile.begin);
      v_.store(score, scores_, b.CreateMul(t, b.getInt64(rows())));
      nextMax = v_.max(nextMax, score);
    }
    return Values{nextMax};
  });
}

/// o = alpha * o + sum_t P[t] V[t] over the tile's first `count` keys, up to
/// kSingleRowChunks column vectors at a time.
void FlashAttentionEmitter::emitSingleRowValues(const Block &block, const Tile &tile, Value *count,
                                                Value *alpha) {
  IRBuilder<> &b = ir();
  const int64_t w = int64_t(width());
  const int64_t chunks = chunksOf(valueSize_);
  for (int64_t first = 0; first < chunks; first += kSingleRowChunks) {
    const int64_t last = std::min(chunks, first + kSingleRowChunks);
    Values acc;
    for (int64_t chunk = first; chunk < last; ++chunk)
      acc.push_back(b.CreateFMul(v_.load(rowOutput_, b.getInt64(chunk * w)), alpha));
    acc = v_.loop(b.getInt64(0), count, 1, acc, [&](Value *t, ArrayRef<Value *> carried) {
      Value *row = valueRow(block, keyIndex(block, tile, b.CreateAdd(tile.begin, t)), tile.cached);
      Value *p = v_.broadcast(scores_, b.CreateMul(t, b.getInt64(rows())));
      Values next;
      for (int64_t chunk = first; chunk < last; ++chunk)
        next.push_back(v_.fma(rowChunk(row, chunk, valueSize_), p, carried[size_t(chunk - first)]));
      return next;
    });
    for (int64_t chunk = first; chunk < last; ++chunk)
      v_.store(acc[size_t(chunk - first)], rowOutput_, b.getInt64(chunk * w));
  }
}

} // namespace onnxc::lower
