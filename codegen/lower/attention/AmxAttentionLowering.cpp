//===- codegen/lower/attention/AmxAttentionLowering.cpp - Attention on AMX tiles -===//
//
// The fused attention of --precision=bf16 on a target with AMX-BF16, with
// both products on TDPBF16PS tiles. Two steps:
//
//   pack   per (batch, KV head): K and V rounded to bf16 in the packed
//          layout of Bf16Gemm.h, Kᵀ as a [headSize, keys] B operand and V as
//          a [keys, valueSize] one (keys zero-padded to whole 32-key tiles,
//          sizes to multiples of 32), into an arena scratch buffer
//   attend per (batch, head, block of 32 query rows):
//            Qb = bf16(scale * Q rows)                              [32, dP]
//            for each chunk of up to 512 keys:
//              S = Qb · Kᵀ, tile by tile, into a [32, 512] f32 scratch
//              per row: S += attn_mask, keys past the end -> -inf;
//                m' = max(m, rowmax S); a = e^(m - m'); P = e^(S - m')
//                l = a l + rowsum P; O = a O
//              O += bf16(P) · V   (32 value columns at a time)
//            Y = O / l
//
// The chunk is what makes the tiles pay: the softmax's per-row work (the
// reductions, rescaling O) runs once per 512 keys rather than per 32-key
// tile, and each product is a run of tile instructions with one store per
// 32 x 32 block. Scores, the softmax and O stay f32; Q, K, V and P are
// rounded to bf16 (docs/KERNEL_ACCURACY.md). A row whose keys are all
// masked gives NaN, as the reference does. Causal attention (no past:
// query i sees keys <= i) ends each block's keys at its last row's diagonal
// and hides the keys past each row's. A Q, K, V split from one packed
// projection is read in place, as the flash kernel reads it. The path takes
// what it covers (f32, no past or window band, no softcap or
// masked_rows_zero, a float mask or none, a mask_fill only without a mask,
// head sizes up to 256) and leaves the rest to the f32 kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/AmxAttentionIR.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"

#include "codegen/kernels/AmxTiles.h"
#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/lower/ComplexKernelSupport.h"

#include "llvm/IR/Intrinsics.h"

#include <cmath>

namespace onnxc::lower {
namespace {

constexpr int64_t kLanes = AmxAttentionIR::kLanes;
constexpr int64_t kRows = 32, kKeys = 32, kMaxHeadSize = 256;
constexpr int64_t kChunkKeys = 512;
// Row strides of the scores (f32) and probabilities (bf16) scratch: an odd
// number of cache lines, so a tile's 16 rows spread over the L1 sets.
constexpr int64_t kScoreStride = kChunkKeys + 16, kProbabilityStride = kChunkKeys + 32;

int64_t roundUp32(int64_t n) { return (n + 31) / 32 * 32; }

class AmxAttention {
public:
  AmxAttention(LoweringContext &ctx, const Node &node, const AttentionShape &shape)
      : ctx_(ctx), node_(node), s_(shape) {
    d_ = *shape.headSize.constant();
    dv_ = *shape.vHeadSize.constant();
    dP_ = roundUp32(d_);
    dvP_ = roundUp32(dv_);
    scale_ =
        node.hasAttr("scale") ? node.getFloat("scale", 1.0f) : float(1.0 / std::sqrt(double(d_)));
    causal_ = node.getInt("is_causal", 0) != 0;
  }

  void emit() {
    // keysP <= kvSeq + 31; each (batch, KV head) gets kvSeq + 32 keys of room.
    Dim keysRoom = s_.kvSeq + Dim(kKeys);
    headBytes_ = keysRoom * Dim((dP_ + dvP_) * 2);
    scratch_ = ctx_.addScratch(s_.batch * s_.kvHeads * headBytes_);
    emitPack();
    emitAttend();
    ctx_.requireCpuFeatures("avx512bf16,avx512bw,amx-tile,amx-bf16");
  }

private:
  /// Start of (batch, KV head)'s packed K (V follows it at keysP * dP values).
  llvm::Value *headBase(KernelBuilder &k, llvm::Value *base, llvm::Value *batch,
                        llvm::Value *kvHead) {
    llvm::IRBuilder<> &b = k.ir();
    llvm::Value *index = b.CreateAdd(b.CreateMul(batch, k.dim(s_.kvHeads)), kvHead);
    return b.CreateGEP(b.getInt8Ty(), base, b.CreateMul(index, k.dim(headBytes_)));
  }
  llvm::Value *keysPadded(KernelBuilder &k) {
    return k.ir().CreateMul(k.ceilDiv(k.dim(s_.kvSeq), k.i64(kKeys)), k.i64(kKeys));
  }

  void emitPack();
  void packKeys(AmxAttentionIR &x, llvm::Value *base,
                llvm::function_ref<llvm::Value *(llvm::Value *)> keyRow);
  void packValues(AmxAttentionIR &x, llvm::Value *vBase,
                  llvm::function_ref<llvm::Value *(llvm::Value *)> valueRow);
  void emitAttend();
  void attendBlock(AmxAttentionIR &x, llvm::Value *batch, llvm::Value *head, llvm::Value *first,
                   llvm::Value *rows);
  void attendChunk(AmxAttentionIR &x, llvm::Value *kBase, llvm::Value *vBase, llvm::Value *chunkKey,
                   llvm::Value *keys, llvm::Value *maskBase, llvm::Value *first);
  /// Scores of row r with the mask added and invisible keys at -inf, stored
  /// back; returns their maximum.
  llvm::Value *maskedRowMax(AmxAttentionIR &x, llvm::Value *row, llvm::Value *tiles,
                            llvm::Value *chunkKey, llvm::Value *keys, llvm::Value *rowKeys,
                            llvm::Value *maskRow);
  void softmaxRow(AmxAttentionIR &x, llvm::Value *r, llvm::Value *chunkKey, llvm::Value *keys,
                  llvm::Value *tiles, llvm::Value *first, llvm::Value *maskRow);

  LoweringContext &ctx_;
  const Node &node_;
  AttentionShape s_;
  int64_t d_, dv_, dP_, dvP_;
  float scale_;
  Dim headBytes_;
  int32_t scratch_ = 0;
  // The attend step's state (set while emitting it).
  KernelBuilder *k_ = nullptr;
  unsigned q_ = 0, y_ = 0, kv_ = 0;
  int64_t qOffset_ = 0;
  bool causal_ = false;
  int mask_ = -1;
  MaskLayout maskLayout_;
  llvm::Value *qBlock_ = nullptr, *scores_ = nullptr, *probabilities_ = nullptr, *output_ = nullptr,
              *maxima_ = nullptr, *sums_ = nullptr, *product_ = nullptr, *config_ = nullptr,
              *keysP_ = nullptr, *rowMax_ = nullptr;
};

void AmxAttention::emitPack() {
  StepBuilder step = ctx_.beginStep(node_, "amx_attention_pack");
  step.setName(std::string(node_.opName()) + " (K, V to bf16)" +
               (node_.name().empty() ? "" : " " + node_.name()));
  int64_t keyOffset = 0, valueOffset = 0;
  unsigned key = readAttentionOperand(ctx_, step, node_, 1, s_.k, keyOffset);
  unsigned value = readAttentionOperand(ctx_, step, node_, 2, s_.v, valueOffset);
  unsigned out = step.bufferSlot(scratch_);
  Dim batch = s_.batch, kvHeads = s_.kvHeads;
  step.setTaskCount([batch, kvHeads](FunctionBuilder &f) {
    return f.ir().CreateMul(f.dim(batch), f.dim(kvHeads));
  });
  KernelBuilder &k = step.kernel();
  k.function()->addFnAttr("min-legal-vector-width", "512");
  llvm::IRBuilder<> &b = k.ir();
  AmxAttentionIR x(k);
  keysP_ = keysPadded(k);
  k.forRange(k.taskBegin(), k.taskEnd(), [&](llvm::Value *task) {
    llvm::Value *n = b.CreateSDiv(task, k.dim(s_.kvHeads));
    llvm::Value *h = b.CreateSRem(task, k.dim(s_.kvHeads));
    llvm::Value *base = headBase(k, k.buffer(out), n, h);
    auto rowOf = [&](unsigned slot, const HeadLayout &layout, int64_t columns,
                     llvm::Value *position) {
      llvm::Value *offset = b.CreateAdd(
          b.CreateAdd(b.CreateMul(n, k.dim(layout.batch)), b.CreateMul(h, k.dim(layout.head))),
          b.CreateAdd(b.CreateMul(position, k.dim(layout.position)), k.i64(columns)));
      return x.f32At(k.buffer(slot), offset);
    };
    packKeys(x, base, [&](llvm::Value *j) { return rowOf(key, s_.k, keyOffset, j); });
    packValues(x, x.i16At(base, b.CreateMul(keysP_, k.i64(dP_))),
               [&](llvm::Value *j) { return rowOf(value, s_.v, valueOffset, j); });
  });
  step.finish();
}

void AmxAttention::packKeys(AmxAttentionIR &x, llvm::Value *base,
                            llvm::function_ref<llvm::Value *(llvm::Value *)> keyRow) {
  KernelBuilder &k = x.k_;
  llvm::IRBuilder<> &b = k.ir();
  llvm::Value *keys = k.dim(s_.kvSeq);
  // Kᵀ: pair q of key j of panel p at ((p * dP/2 + q) * 32 + j) * 2 values.
  k.forRange(k.i64(0), keysP_, [&](llvm::Value *j) {
    llvm::Value *valid = b.CreateICmpSLT(j, keys);
    llvm::Value *row = keyRow(b.CreateSelect(valid, j, k.i64(0)));
    llvm::Value *panel = b.CreateSDiv(j, k.i64(kKeys)), *lane = b.CreateSRem(j, k.i64(kKeys));
    llvm::Value *panelBase = b.CreateMul(panel, k.i64(dP_ / 2 * 64));
    for (int64_t c = 0; c < dP_; c += kLanes) {
      llvm::Value *mask =
          b.CreateAnd(x.lanesBelow(k.i64(d_), c), b.CreateVectorSplat(kLanes, valid));
      llvm::Value *halves = x.round(x.load(x.f32At(row, k.i64(c)), mask));
      llvm::Value *pairs =
          b.CreateBitCast(halves, llvm::FixedVectorType::get(b.getInt32Ty(), kLanes / 2));
      for (int64_t q = 0; q < kLanes / 2; ++q) {
        llvm::Value *at = b.CreateAdd(
            panelBase, b.CreateAdd(k.i64((c / 2 + q) * 64), b.CreateMul(lane, k.i64(2))));
        b.CreateAlignedStore(b.CreateExtractElement(pairs, uint64_t(q)), x.i16At(base, at),
                             llvm::Align(4));
      }
    }
  });
}

void AmxAttention::packValues(AmxAttentionIR &x, llvm::Value *vBase,
                              llvm::function_ref<llvm::Value *(llvm::Value *)> valueRow) {
  KernelBuilder &k = x.k_;
  llvm::IRBuilder<> &b = k.ir();
  llvm::Value *keys = k.dim(s_.kvSeq);
  std::vector<int> interleave;
  for (int lane = 0; lane < kLanes; ++lane) {
    interleave.push_back(lane);
    interleave.push_back(lane + int(kLanes));
  }
  // V: pair q (keys 2q, 2q + 1) of column j of panel p at ((p * keysP/2 + q) * 32 + j) * 2.
  k.forRange(k.i64(0), b.CreateSDiv(keysP_, k.i64(2)), [&](llvm::Value *q) {
    llvm::Value *first = b.CreateMul(q, k.i64(2)), *second = b.CreateAdd(first, k.i64(1));
    llvm::Value *validFirst = b.CreateICmpSLT(first, keys);
    llvm::Value *validSecond = b.CreateICmpSLT(second, keys);
    llvm::Value *row0 = valueRow(b.CreateSelect(validFirst, first, k.i64(0)));
    llvm::Value *row1 = valueRow(b.CreateSelect(validSecond, second, k.i64(0)));
    for (int64_t c = 0; c < dvP_; c += kLanes) {
      llvm::Value *columns = x.lanesBelow(k.i64(dv_), c);
      llvm::Value *even = x.round(x.load(
          x.f32At(row0, k.i64(c)), b.CreateAnd(columns, b.CreateVectorSplat(kLanes, validFirst))));
      llvm::Value *odd = x.round(x.load(
          x.f32At(row1, k.i64(c)), b.CreateAnd(columns, b.CreateVectorSplat(kLanes, validSecond))));
      llvm::Value *panelPairs = b.CreateMul(k.i64(c / kKeys), b.CreateSDiv(keysP_, k.i64(2)));
      llvm::Value *at = b.CreateMul(
          b.CreateAdd(b.CreateMul(b.CreateAdd(panelPairs, q), k.i64(kKeys)), k.i64(c % kKeys)),
          k.i64(2));
      b.CreateAlignedStore(b.CreateShuffleVector(even, odd, interleave), x.i16At(vBase, at),
                           llvm::Align(4));
    }
  });
}

void AmxAttention::emitAttend() {
  StepBuilder step = ctx_.beginStep(node_, "amx_attention");
  q_ = readAttentionOperand(ctx_, step, node_, 0, s_.q, qOffset_);
  kv_ = step.bufferSlot(scratch_);
  if (node_.operand(3))
    mask_ = int(step.input(node_.operand(3)));
  y_ = step.output(node_.result(0));
  Dim batch = s_.batch, heads = s_.qHeads, seq = s_.qSeq;
  step.setTaskCount([batch, heads, seq](FunctionBuilder &f) {
    llvm::Value *blocks = f.ceilDiv(f.dim(seq), f.i64(kRows));
    return f.ir().CreateMul(f.ir().CreateMul(f.dim(batch), f.dim(heads)), blocks);
  });
  KernelBuilder &k = step.kernel();
  k_ = &k;
  k.function()->addFnAttr("min-legal-vector-width", "512");
  llvm::IRBuilder<> &b = k.ir();
  AmxAttentionIR x(k);
  auto buffer = [&](llvm::Type *type, int64_t count, const char *name) {
    auto *alloca =
        k.hoisted().CreateAlloca(llvm::ArrayType::get(type, uint64_t(count)), nullptr, name);
    alloca->setAlignment(llvm::Align(64));
    return alloca;
  };
  qBlock_ = buffer(b.getInt16Ty(), kRows * dP_, "qBlock");
  scores_ = buffer(b.getFloatTy(), kRows * kScoreStride, "scores");
  probabilities_ = buffer(b.getInt16Ty(), kRows * kProbabilityStride, "probabilities");
  product_ = buffer(b.getFloatTy(), kRows * kKeys, "product");
  output_ = buffer(b.getFloatTy(), kRows * dvP_, "output");
  maxima_ = buffer(b.getFloatTy(), kRows, "maxima");
  sums_ = buffer(b.getFloatTy(), kRows, "sums");
  config_ = buffer(b.getInt8Ty(), 64, "tileConfig");
  rowMax_ = buffer(b.getFloatTy(), 1, "rowMax");
  if (mask_ >= 0)
    maskLayout_ = attentionMaskLayout(k, node_.operand(3)->shape());
  keysP_ = keysPadded(k);
  emitAmxTileConfig(b, config_);
  llvm::Value *blocks = k.ceilDiv(k.dim(s_.qSeq), k.i64(kRows));
  k.forRange(k.taskBegin(), k.taskEnd(), [&](llvm::Value *task) {
    llvm::Value *block = b.CreateSRem(task, blocks);
    if (causal_) {
      // Causal blocks grow with their index; interleaving short and long ones
      // (0, n-1, 1, n-2, ...) lets contiguous task ranges carry equal work.
      llvm::Value *half = b.CreateLShr(block, 1);
      llvm::Value *fromEnd = b.CreateSub(b.CreateSub(blocks, k.i64(1)), half);
      block = b.CreateSelect(b.CreateTrunc(block, b.getInt1Ty()), fromEnd, half);
    }
    llvm::Value *batchHead = b.CreateSDiv(task, blocks);
    llvm::Value *n = b.CreateSDiv(batchHead, k.dim(s_.qHeads));
    llvm::Value *h = b.CreateSRem(batchHead, k.dim(s_.qHeads));
    llvm::Value *first = b.CreateMul(block, k.i64(kRows));
    attendBlock(x, n, h, first, k.min(k.i64(kRows), b.CreateSub(k.dim(s_.qSeq), first)));
  });
  x.call(llvm::Intrinsic::x86_tilerelease, {});
  step.finish();
}

void AmxAttention::attendBlock(AmxAttentionIR &x, llvm::Value *n, llvm::Value *h,
                               llvm::Value *first, llvm::Value *rows) {
  KernelBuilder &k = *k_;
  llvm::IRBuilder<> &b = k.ir();
  auto rowOffset = [&](const HeadLayout &layout, llvm::Value *head, llvm::Value *position,
                       int64_t columns = 0) {
    return b.CreateAdd(
        b.CreateAdd(b.CreateMul(n, k.dim(layout.batch)), b.CreateMul(head, k.dim(layout.head))),
        b.CreateAdd(b.CreateMul(position, k.dim(layout.position)), k.i64(columns)));
  };
  // Qb: the block's rows scaled and rounded; rows past `rows` zero.
  llvm::Value *scale = b.CreateVectorSplat(kLanes, llvm::ConstantFP::get(x.f32_, scale_));
  k.forRange(k.i64(0), k.i64(kRows), [&](llvm::Value *r) {
    llvm::Value *valid = b.CreateICmpSLT(r, rows);
    llvm::Value *q =
        x.f32At(k.buffer(q_),
                rowOffset(s_.q, h, b.CreateSelect(valid, b.CreateAdd(first, r), first), qOffset_));
    for (int64_t c = 0; c < dP_; c += kLanes) {
      llvm::Value *mask =
          b.CreateAnd(x.lanesBelow(k.i64(d_), c), b.CreateVectorSplat(kLanes, valid));
      llvm::Value *scaled = b.CreateFMul(x.load(x.f32At(q, k.i64(c)), mask), scale);
      b.CreateAlignedStore(x.round(scaled),
                           x.i16At(qBlock_, b.CreateAdd(b.CreateMul(r, k.i64(dP_)), k.i64(c))),
                           llvm::Align(32));
    }
    b.CreateStore(llvm::ConstantFP::getInfinity(x.f32_, true), x.f32At(maxima_, r));
    b.CreateStore(llvm::ConstantFP::get(x.f32_, 0.0), x.f32At(sums_, r));
  });
  b.CreateMemSet(output_, b.getInt8(0), uint64_t(kRows * dvP_ * 4), llvm::Align(64));
  llvm::Value *kvHead = b.CreateSDiv(h, b.CreateSDiv(k.dim(s_.qHeads), k.dim(s_.kvHeads)));
  llvm::Value *kBase = headBase(k, k.buffer(kv_), n, kvHead);
  llvm::Value *vBase = x.i16At(kBase, b.CreateMul(keysP_, k.i64(dP_)));
  llvm::Value *keyEnd = k.dim(s_.kvSeq);
  if (mask_ >= 0)
    keyEnd = k.min(keyEnd, maskLayout_.columns);
  if (causal_) // the diagonal of the block's last row (no past: query i sees keys <= i)
    keyEnd = k.min(keyEnd, b.CreateAdd(first, rows));
  llvm::Value *maskBase = nullptr;
  if (mask_ >= 0)
    maskBase =
        b.CreateAdd(b.CreateMul(n, maskLayout_.strides[0]), b.CreateMul(h, maskLayout_.strides[1]));
  k.forRange(k.i64(0), k.ceilDiv(keyEnd, k.i64(kChunkKeys)), [&](llvm::Value *chunk) {
    llvm::Value *chunkKey = b.CreateMul(chunk, k.i64(kChunkKeys));
    llvm::Value *keys = k.min(k.i64(kChunkKeys), b.CreateSub(keyEnd, chunkKey));
    attendChunk(x, kBase, vBase, chunkKey, keys, maskBase, first);
  });
  // Y = O / l for the valid rows; NaN, as the reference gives, where every key was masked.
  k.forRange(k.i64(0), rows, [&](llvm::Value *r) {
    llvm::Value *y = x.f32At(k.buffer(y_), rowOffset(s_.y, h, b.CreateAdd(first, r)));
    llvm::Value *sawNoKey = b.CreateFCmpOEQ(b.CreateLoad(x.f32_, x.f32At(maxima_, r)),
                                            llvm::ConstantFP::getInfinity(x.f32_, true));
    llvm::Value *l = b.CreateSelect(sawNoKey, llvm::ConstantFP::getNaN(x.f32_),
                                    b.CreateLoad(x.f32_, x.f32At(sums_, r)));
    llvm::Value *sum = b.CreateVectorSplat(kLanes, l);
    for (int64_t c = 0; c < dvP_; c += kLanes) {
      llvm::Value *o = x.load(x.f32At(output_, b.CreateAdd(b.CreateMul(r, k.i64(dvP_)), k.i64(c))));
      b.CreateMaskedStore(b.CreateFDiv(o, sum), x.f32At(y, k.i64(c)), llvm::Align(4),
                          x.lanesBelow(k.i64(dv_), c));
    }
  });
}

void AmxAttention::attendChunk(AmxAttentionIR &x, llvm::Value *kBase, llvm::Value *vBase,
                               llvm::Value *chunkKey, llvm::Value *keys, llvm::Value *maskBase,
                               llvm::Value *first) {
  KernelBuilder &k = *k_;
  llvm::IRBuilder<> &b = k.ir();
  llvm::Value *tiles = k.ceilDiv(keys, k.i64(kKeys));
  llvm::Value *firstTile = b.CreateSDiv(chunkKey, k.i64(kKeys));
  // S = Qb · Kᵀ, one 32 x 32 block per key tile.
  k.forRange(k.i64(0), tiles, [&](llvm::Value *t) {
    llvm::Value *panel =
        x.i16At(kBase, b.CreateMul(b.CreateAdd(firstTile, t), k.i64(dP_ / 2 * 64)));
    x.zeroBlock();
    for (int64_t s = 0; s < dP_ / 32; ++s)
      x.productStep(x.i16At(qBlock_, k.i64(s * 32)), dP_ * 2, x.i16At(panel, k.i64(s * 1024)));
    x.storeBlock(x.f32At(scores_, b.CreateMul(t, k.i64(kKeys))), kScoreStride);
  });
  k.forRange(k.i64(0), k.i64(kRows), [&](llvm::Value *r) {
    llvm::Value *maskRow = nullptr;
    if (mask_ >= 0)
      // Padding rows (past the block's) read the last row's mask; their results are dropped.
      maskRow = b.CreateAdd(
          maskBase, b.CreateMul(k.min(b.CreateAdd(first, r), b.CreateSub(k.dim(s_.qSeq), k.i64(1))),
                                maskLayout_.strides[2]));
    softmaxRow(x, r, chunkKey, keys, tiles, first, maskRow);
  });
  // O += P · V, 32 value columns at a time over the chunk's key tiles.
  for (int64_t panel = 0; panel < dvP_ / kKeys; ++panel) {
    llvm::Value *bPanel =
        x.i16At(vBase, b.CreateAdd(b.CreateMul(k.i64(panel), b.CreateMul(keysP_, k.i64(kKeys))),
                                   b.CreateMul(chunkKey, k.i64(kKeys))));
    x.zeroBlock();
    k.forRange(k.i64(0), tiles, [&](llvm::Value *t) {
      x.productStep(x.i16At(probabilities_, b.CreateMul(t, k.i64(kKeys))), kProbabilityStride * 2,
                    x.i16At(bPanel, b.CreateMul(t, k.i64(1024))));
    });
    x.storeBlock(product_, kKeys);
    k.forRange(k.i64(0), k.i64(kRows), [&](llvm::Value *r) {
      for (int half = 0; half < 2; ++half) {
        llvm::Value *o = x.f32At(output_, b.CreateAdd(b.CreateMul(r, k.i64(dvP_)),
                                                      k.i64(panel * kKeys + half * kLanes)));
        llvm::Value *add = x.load(
            x.f32At(product_, b.CreateAdd(b.CreateMul(r, k.i64(kKeys)), k.i64(half * kLanes))));
        b.CreateAlignedStore(b.CreateFAdd(x.load(o), add), o, llvm::Align(4));
      }
    });
  }
}

llvm::Value *AmxAttention::maskedRowMax(AmxAttentionIR &x, llvm::Value *row, llvm::Value *tiles,
                                        llvm::Value *chunkKey, llvm::Value *keys,
                                        llvm::Value *rowKeys, llvm::Value *maskRow) {
  KernelBuilder &k = *k_;
  llvm::IRBuilder<> &b = k.ir();
  llvm::Value *minusInf = llvm::ConstantFP::getInfinity(x.floats_, true);
  // The keys of the chunk's last tile this row does not see to -inf: those
  // past the chunk's last (the zero rows of K) and, causal, those past the
  // row's diagonal. Blocks, tiles and chunks start at multiples of 32 and the
  // block's keys end at its last row's diagonal, so these all lie in the last
  // tile (a row that sees none of the chunk's keys sees a chunk of one tile).
  for (int half = 0; half < 2; ++half) {
    llvm::Value *offset =
        b.CreateAdd(b.CreateMul(b.CreateSub(tiles, k.i64(1)), k.i64(kKeys)), k.i64(half * kLanes));
    b.CreateMaskedStore(minusInf, x.f32At(row, offset), llvm::Align(4),
                        b.CreateNot(x.lanesBelow(rowKeys, offset)));
  }
  // Two maxima (one per half tile), so consecutive vmaxps do not wait on each other.
  auto pass = [&](llvm::function_ref<llvm::Value *(llvm::Value *, llvm::Value *)> score) {
    std::vector<llvm::Value *> maxima = k.forRangeCarried(
        k.i64(0), tiles, {minusInf, minusInf},
        [&](llvm::Value *t, llvm::ArrayRef<llvm::Value *> carried) -> std::vector<llvm::Value *> {
          std::vector<llvm::Value *> next;
          for (int half = 0; half < 2; ++half) {
            llvm::Value *offset = b.CreateAdd(b.CreateMul(t, k.i64(kKeys)), k.i64(half * kLanes));
            llvm::Value *s = score(x.f32At(row, offset), offset);
            next.push_back(x.vector_.max(s, carried[size_t(half)]));
          }
          return next;
        });
    return b.CreateFPMaxReduce(x.vector_.max(maxima[0], maxima[1]));
  };
  if (!maskRow)
    return pass([&](llvm::Value *at, llvm::Value *) { return x.load(at); });
  // With a mask, the masked scores are stored back for the exponentials.
  auto masked = [&](bool gather) {
    return pass([&](llvm::Value *at, llvm::Value *offset) {
      llvm::Value *lanes = x.lanesBelow(keys, offset);
      llvm::Value *stride = maskLayout_.strides[3];
      llvm::Value *start = b.CreateAdd(maskRow, b.CreateMul(b.CreateAdd(chunkKey, offset), stride));
      llvm::Value *mask = nullptr;
      if (gather) {
        std::vector<llvm::Constant *> steps;
        for (int64_t lane = 0; lane < kLanes; ++lane)
          steps.push_back(b.getInt64(uint64_t(lane)));
        llvm::Value *index = b.CreateAdd(
            b.CreateVectorSplat(kLanes, start),
            b.CreateMul(llvm::ConstantVector::get(steps), b.CreateVectorSplat(kLanes, stride)));
        mask =
            b.CreateMaskedGather(x.floats_, b.CreateGEP(x.f32_, k.buffer(unsigned(mask_)), index),
                                 llvm::Align(4), lanes, llvm::Constant::getNullValue(x.floats_));
      } else {
        mask = x.load(x.f32At(k.buffer(unsigned(mask_)), start), lanes);
      }
      llvm::Value *s = b.CreateFAdd(x.load(at), mask);
      b.CreateAlignedStore(s, at, llvm::Align(4));
      return s;
    });
  };
  // A mask read along the keys (its last stride 1) loads; a one-column mask (stride 0) gathers.
  k.ifThenElse(
      b.CreateICmpEQ(maskLayout_.strides[3], k.i64(1)),
      [&] { b.CreateStore(masked(false), rowMax_); },
      [&] { b.CreateStore(masked(true), rowMax_); });
  return b.CreateLoad(x.f32_, rowMax_);
}

void AmxAttention::softmaxRow(AmxAttentionIR &x, llvm::Value *r, llvm::Value *chunkKey,
                              llvm::Value *keys, llvm::Value *tiles, llvm::Value *first,
                              llvm::Value *maskRow) {
  KernelBuilder &k = *k_;
  llvm::IRBuilder<> &b = k.ir();
  llvm::Value *row = x.f32At(scores_, b.CreateMul(r, k.i64(kScoreStride)));
  // Keys of the chunk the row sees: all, or causal, those up to its diagonal (maybe none).
  llvm::Value *rowKeys = keys;
  if (causal_)
    rowKeys = k.min(keys, b.CreateSub(b.CreateAdd(b.CreateAdd(first, r), k.i64(1)), chunkKey));
  llvm::Value *chunkMax = maskedRowMax(x, row, tiles, chunkKey, keys, rowKeys, maskRow);
  llvm::Value *maxPointer = x.f32At(maxima_, r), *sumPointer = x.f32At(sums_, r);
  llvm::Value *old = b.CreateLoad(x.f32_, maxPointer);
  llvm::Value *newMax = b.CreateSelect(b.CreateFCmpOGT(chunkMax, old), chunkMax, old);
  // Every key so far masked: shift by 0 (the row's result is NaN in the end).
  llvm::Value *minusInf = llvm::ConstantFP::getInfinity(x.f32_, true);
  llvm::Value *shift =
      b.CreateSelect(b.CreateFCmpOEQ(newMax, minusInf), llvm::ConstantFP::get(x.f32_, 0.0), newMax);
  // The sum and O so far, rescaled to the new maximum (nothing before the first key).
  llvm::Value *alpha = b.CreateExtractElement(
      x.vector_.expNonPositive(b.CreateVectorSplat(kLanes, b.CreateFSub(old, shift))), uint64_t(0));
  alpha = b.CreateSelect(b.CreateFCmpOEQ(old, minusInf), llvm::ConstantFP::get(x.f32_, 0.0), alpha);
  llvm::Value *shifts = b.CreateVectorSplat(kLanes, shift);
  llvm::Value *probabilityRow = x.i16At(probabilities_, b.CreateMul(r, k.i64(kProbabilityStride)));
  llvm::Value *zero = llvm::Constant::getNullValue(x.floats_);
  std::vector<llvm::Value *> sums = k.forRangeCarried(
      k.i64(0), tiles, {zero, zero},
      [&](llvm::Value *t, llvm::ArrayRef<llvm::Value *> carried) -> std::vector<llvm::Value *> {
        std::vector<llvm::Value *> next;
        for (int half = 0; half < 2; ++half) {
          llvm::Value *offset = b.CreateAdd(b.CreateMul(t, k.i64(kKeys)), k.i64(half * kLanes));
          llvm::Value *p =
              x.vector_.expNonPositive(b.CreateFSub(x.load(x.f32At(row, offset)), shifts));
          b.CreateAlignedStore(x.round(p), x.i16At(probabilityRow, offset), llvm::Align(32));
          next.push_back(b.CreateFAdd(carried[size_t(half)], p));
        }
        return next;
      });
  llvm::Value *sum =
      b.CreateFAddReduce(llvm::ConstantFP::get(x.f32_, 0.0), b.CreateFAdd(sums[0], sums[1]));
  llvm::cast<llvm::CallInst>(sum)->setHasAllowReassoc(true);
  b.CreateStore(b.CreateFAdd(b.CreateFMul(b.CreateLoad(x.f32_, sumPointer), alpha), sum),
                sumPointer);
  b.CreateStore(newMax, maxPointer);
  llvm::Value *alphas = b.CreateVectorSplat(kLanes, alpha);
  for (int64_t c = 0; c < dvP_; c += kLanes) {
    llvm::Value *o = x.f32At(output_, b.CreateAdd(b.CreateMul(r, k.i64(dvP_)), k.i64(c)));
    b.CreateAlignedStore(b.CreateFMul(x.load(o), alphas), o, llvm::Align(4));
  }
}

} // namespace

bool canUseAmxAttention(const LoweringContext &ctx, const Node &node, const AttentionShape &shape) {
  if (ctx.bf16GemmIsa() != Bf16GemmIsa::Amx || shape.dtype != DType::F32 || shape.hasPast)
    return false;
  if (attentionWindow(ctx, node) >= 0)
    return false;
  if (node.getFloat("softcap", 0.0f) != 0.0f || node.getInt("masked_rows_zero", 0) != 0)
    return false;
  // A finite mask_fill (HF GPT-2's finfo.min) differs from -inf only in a
  // row that sees no key: with no mask, none (causal rows see key 0).
  if (attentionMaskFill(ctx, node) && node.operand(3))
    return false;
  if (node.numResults() > 3 && isNeeded(ctx, node.result(3)))
    return false;
  if (node.operand(3) && node.operand(3)->dtype() != DType::F32)
    return false;
  std::optional<int64_t> headSize = shape.headSize.constant();
  std::optional<int64_t> valueSize = shape.vHeadSize.constant();
  return headSize && valueSize && *headSize > 0 && *valueSize > 0 && *headSize <= kMaxHeadSize &&
         *valueSize <= kMaxHeadSize;
}

void emitAmxAttention(LoweringContext &ctx, const Node &node, const AttentionShape &shape) {
  AmxAttention(ctx, node, shape).emit();
}

} // namespace onnxc::lower
