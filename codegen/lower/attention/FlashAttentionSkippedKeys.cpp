//===- codegen/lower/attention/FlashAttentionSkippedKeys.cpp - Keys outside the band -===//
//
// With a finite mask_fill, the keys the causal or window band skips,
// [0, keyBegin) and [keyEnd, kvSeq), still score the fill (+ the float
// mask) for every row of the block. After the band pass one loop walks
// them: a key whose score t is below every lane's running max by more than
// kNegligibleGap (104: e^-104 is below the least f32 subnormal, so its
// exact weight is 0 in f32) is passed over after one compare; any other key
// gets the online softmax update exactly like a visited one (its weight is
// floored at e^-60 by the exp, as a visited key's is). So only (nearly)
// fully hidden rows pay for the skipped keys' V rows; the others pay one
// compare per skipped key (a scalar one, against the block's lowest max,
// unless the float mask varies per query row), and without a float mask,
// whose skipped scores are all the fill, one compare per block.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/FlashAttentionEmitter.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;
using Values = FlashValues;
namespace {

/// A skipped key scoring this far below a row's max has weight e^-104 or
/// less, which is 0 in f32 (the least subnormal is e^-103.3).
constexpr float kNegligibleGap = 104.0f;

} // namespace

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
  Value *minusInf = minusInfinity();
  Values next(state.size()), alpha, p;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *newMax = v_.max(state[size_t(v)], scores[size_t(v)]);
    Value *safe = b.CreateSelect(b.CreateFCmpOEQ(newMax, minusInf), v_.splat(0.0f), newMax);
    alpha.push_back(v_.expNonPositive(b.CreateFSub(state[size_t(v)], safe)));
    p.push_back(v_.expNonPositive(b.CreateFSub(scores[size_t(v)], safe)));
    next[size_t(v)] = newMax;
    next[size_t(rowVectors_ + v)] = v_.fma(state[size_t(rowVectors_ + v)], alpha.back(), p.back());
  }
  Value *rowBase = valueRow(block, key);
  v_.loop(b.getInt64(0), b.getInt64(valueSize_), 1, [&](Value *c) {
    Value *x = v_.broadcast(rowBase, c);
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
  Value *keys = dim(shape_.total);
  Value *begin = keyBegin(block);
  Value *lowEnd = k_.min(begin, keys), *highBegin = k_.max(block.keyEnd, begin);
  auto walkRange = [&](Value *from, Value *to, ArrayRef<Value *> init) {
    return v_.loop(from, to, 1, init, [&](Value *key, ArrayRef<Value *> carried) {
      Values scores = skippedScores(block, key);
      return v_.branch(
          matters(scores), [&] { return addSkippedKey(block, key, scores, carried); },
          [&] { return Values(carried.begin(), carried.end()); });
    });
  };
  auto walk = [&](ArrayRef<Value *> init) {
    return walkRange(highBegin, keys, walkRange(b.getInt64(0), lowEnd, init));
  };
  if (mask_ >= 0 && maskType_ != DType::Bool)
    return walk(state);
  // Every skipped key scores the fill: one test decides for all of them.
  return v_.branch(
      matters(Values(rowVectors_, v_.splat(*fill_))), [&] { return walk(state); },
      [&] { return Values(state.begin(), state.end()); });
}

} // namespace onnxc::lower
