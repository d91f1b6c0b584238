//===- codegen/lower/attention/FlashAttentionPairedColumns.cpp - Grouped heads, paired lanes -===//
//
// A decode step of grouped-query attention puts the G query heads of a KV
// head on one row vector (FlashAttentionLowering.cpp). With G <= w / 2
// (TinyLlama, LLaMA-2-70B, Mistral: 8 heads in 16 lanes) the row-lane
// products would leave half of every FMA's lanes idle. Here lane 2r + p
// holds head r's column 2c + p of the pair c instead:
//
//   Qp[c][2r + p] = Qt[2c + p][r]
//   acc_t[2r + p] += K[t][2c + p] * Qp[c][2r + p]  (K[t][2c], K[t][2c + 1]
//                    broadcast as one 64-bit element: a load, like a float)
//   S[t][2r] = S[t][2r + 1] = acc_t[2r] + acc_t[2r + 1]
//   Op[c][2r + p] = alpha Op[c][2r + p] + sum_t V[t][2c + p] * P[t][2r + p]
//
// so a key costs d / 2 FMAs and loads per product instead of d. Each head's
// scores, masks, softmax statistics and exps are the row-lane kernel's,
// held twice (in its two lanes); at the end Op is spread back into Ot and
// the statistics into one lane per head, and the output is stored as for
// any block. The pair's sum adds the even columns' and the odd columns'
// partial sums, a different order of the same f32 additions.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/FlashAttentionEmitter.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;
using Values = FlashValues;

bool FlashAttentionEmitter::canPairColumns() const {
  return headGroup_ != 0 && 2 * headGroup_ <= int64_t(width()) && headSize_ % 2 == 0 &&
         valueSize_ % 2 == 0 && !fill_;
}

/// Qp from Qt (rows r < w / 2), and Op = 0.
void FlashAttentionEmitter::beginPairedColumns(const Block &block) {
  IRBuilder<> &b = ir();
  packQuery(block);
  const int64_t w = int64_t(width());
  SmallVector<int, 16> interleave;
  for (int64_t lane = 0; lane < w; ++lane)
    interleave.push_back(int((lane % 2 ? w : 0) + lane / 2));
  v_.loop(b.getInt64(0), b.getInt64(headSize_ / 2), 1, [&](Value *c) {
    Value *even = b.CreateMul(c, b.getInt64(2));
    Value *odd = b.CreateAdd(even, b.getInt64(1));
    Value *pair = b.CreateShuffleVector(v_.load(queryT_, outputIndex(even, 0)),
                                        v_.load(queryT_, outputIndex(odd, 0)), interleave);
    v_.store(pair, queryPairs_, b.CreateMul(c, b.getInt64(w)));
  });
  v_.loop(b.getInt64(0), b.getInt64(valueSize_ / 2), 1,
          [&](Value *c) { v_.store(v_.splat(0.0f), output_, outputIndex(c, 0)); });
}

Value *FlashAttentionEmitter::addLanePairs(Value *acc) {
  SmallVector<int, 16> swapped;
  for (int lane = 0; lane < int(width()); ++lane)
    swapped.push_back(lane ^ 1);
  return ir().CreateFAdd(acc, ir().CreateShuffleVector(acc, swapped));
}

/// Ot from Op, and the max and sum of head r in lane r.
Values FlashAttentionEmitter::endPairedColumns(ArrayRef<Value *> state) {
  IRBuilder<> &b = ir();
  const int64_t w = int64_t(width()), pairs = valueSize_ / 2;
  SmallVector<int, 16> evens, odds;
  for (int64_t lane = 0; lane < w; ++lane) {
    evens.push_back(int(2 * (lane % (w / 2))));
    odds.push_back(int(2 * (lane % (w / 2)) + 1));
  }
  // From the last pair down: Ot's rows 2c and 2c + 1 are Op's rows c and up,
  // already read.
  v_.loop(b.getInt64(0), b.getInt64(pairs), 1, [&](Value *i) {
    Value *c = b.CreateSub(b.getInt64(pairs - 1), i);
    Value *pair = v_.load(output_, outputIndex(c, 0));
    Value *even = b.CreateMul(c, b.getInt64(2));
    v_.store(b.CreateShuffleVector(pair, evens), output_, outputIndex(even, 0));
    v_.store(b.CreateShuffleVector(pair, odds), output_,
             outputIndex(b.CreateAdd(even, b.getInt64(1)), 0));
  });
  Values compact;
  for (Value *vector : state)
    compact.push_back(b.CreateShuffleVector(vector, evens));
  return compact;
}

} // namespace onnxc::lower
