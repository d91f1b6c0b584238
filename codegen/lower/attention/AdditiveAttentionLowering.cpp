//===- codegen/lower/attention/AdditiveAttentionLowering.cpp - Bahdanau attention -===//
//
// AdditiveAttention (ir/eval/AdditiveAttentionKernels.cpp is its meaning)
// as one kernel: a task per (batch, query row), the keys in tiles of
// kTileKeys with an online softmax, so neither the [b, Sq, Sk, d] tanh
// tensor nor the [b, Sq, Sk] scores exist:
//
//   for each key tile [j0, j1):
//     S[t] = sum_c w[c] * tanh(q[c] + K[j0 + t][c])   (mask: select / add)
//     m' = max(m, max_t S)                            (a tile of -inf: skipped)
//     alpha = e^(m - m'); l = alpha * l + sum_t e^(S[t] - m')
//     acc = alpha * acc + sum_t e^(S[t] - m') * V[j0 + t]
//   y = acc / l
//
// f32 runs the size loops on <8 x float> (VectorMath's tanh, the same
// straight-line code as the Tanh op's kernel) with a scalar tail; other
// float types take the scalar loops alone, computing in realDType. A value
// size past kValueChunk is done in chunks, each a pass over the keys.
// Scratch is fixed-size stack whatever the lengths.
//
// As in the unfused graph, a row whose scores are all -inf gives NaN (0 / 0:
// every tile was skipped) and a row hiding every key behind a finite fill
// gives the mean of the values.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"
#include "codegen/lower/attention/FlashVectorIR.h"

#include <cmath>
#include <limits>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// Keys per tile: the scores of one tile live in a stack array.
constexpr int64_t kTileKeys = 64;
/// Value elements accumulated per pass over the keys (2 KiB in f32).
constexpr int64_t kValueChunk = 512;
constexpr int64_t kWidth = FlashVectorIR::kAvx2Width;

class AdditiveAttentionKernel {
public:
  AdditiveAttentionKernel(LoweringContext &ctx, const Node &node)
      : node_(node), step_(ctx.beginStep(node, "additive_attention")), k_(step_.kernel()),
        vec_(k_.ir()) {
    dtype_ = node.operand(0)->dtype();
    if (!isFloat(dtype_))
      ctx.unsupported(node, "additive attention needs floating point operands");
    real_ = realDType(dtype_);
    vectorized_ = dtype_ == DType::F32;
    const Shape &q = node.operand(0)->shape(), &key = node.operand(1)->shape(),
                &v = node.operand(2)->shape();
    if (!q.isRanked() || !key.isRanked() || !v.isRanked() || q.rank() != 3 || key.rank() != 3 ||
        v.rank() != 3)
      ctx.unsupported(node, "additive attention operands of unknown rank");
    batch_ = q[0], qSeq_ = q[1], size_ = q[2], kSeq_ = key[1], vSize_ = v[2];
    query_ = step_.input(node.operand(0));
    key_ = step_.input(node.operand(1));
    value_ = step_.input(node.operand(2));
    score_ = step_.input(node.operand(3));
    if (const onnxc::Value *mask = node.operand(4)) {
      mask_ = int(step_.input(mask));
      maskValue_ = mask;
    }
    y_ = step_.output(node.result(0));
  }

  void emit();

private:
  Value *dim(const Dim &d) { return k_.dim(d); }
  Value *real(double value) { return k_.constant(real_, value); }
  /// The masked score of key `j` for the row at `qOffset`.
  Value *score(Value *batch, Value *row, Value *qOffset, Value *j);
  Value *tanhDot(Value *qOffset, Value *kOffset);
  void emitRow(Value *linearRow);
  void emitChunk(Value *batch, Value *row, Value *qOffset, Value *yOffset, Value *chunkBegin);
  /// acc[c] = acc[c] * factor + p * V[vOffset + c] for c < chunk.
  void accumulate(Value *chunk, Value *factor, Value *p, Value *vOffset);

  const Node &node_;
  StepBuilder step_;
  KernelBuilder &k_;
  FlashVectorIR vec_;
  DType dtype_ = DType::F32, real_ = DType::F32;
  bool vectorized_ = false;
  Dim batch_, qSeq_, size_, kSeq_, vSize_;
  unsigned query_ = 0, key_ = 0, value_ = 0, score_ = 0, y_ = 0;
  int mask_ = -1;
  const onnxc::Value *maskValue_ = nullptr;
  std::vector<Value *> maskStrides_;
  Value *fill_ = nullptr;
  Value *scores_ = nullptr, *acc_ = nullptr;
};

Value *AdditiveAttentionKernel::tanhDot(Value *qOffset, Value *kOffset) {
  IRBuilder<> &b = k_.ir();
  Value *q = k_.buffer(query_), *key = k_.buffer(key_), *w = k_.buffer(score_);
  Value *size = dim(size_);
  Value *sum = real(0.0);
  Value *vectorEnd = k_.i64(0);
  if (vectorized_) {
    vectorEnd = b.CreateAnd(size, k_.i64(~(kWidth - 1)));
    Value *lanes = k_.forRangeCarried(
        k_.i64(0), vectorEnd, {vec_.splat(0.0f)},
        [&](Value *c, ArrayRef<Value *> acc) -> std::vector<Value *> {
          Value *x = b.CreateFAdd(vec_.loadUnaligned(q, b.CreateAdd(qOffset, c)),
                                  vec_.loadUnaligned(key, b.CreateAdd(kOffset, c)));
          Value *t = vmath::emitTanh(b, x);
          return {vec_.fma(t, vec_.loadUnaligned(w, c), acc[0])};
        },
        kWidth, "c")[0];
    auto *reduce = cast<Instruction>(b.CreateFAddReduce(real(0.0), lanes));
    reduce->setHasAllowReassoc(true);
    sum = reduce;
  }
  return k_.forRangeCarried(
      vectorEnd, size, {sum},
      [&](Value *c, ArrayRef<Value *> acc) -> std::vector<Value *> {
        Value *x = b.CreateFAdd(loadReal(k_, dtype_, q, b.CreateAdd(qOffset, c)),
                                loadReal(k_, dtype_, key, b.CreateAdd(kOffset, c)));
        Value *t = emitRealMath(k_, vmath::MathFunction::Tanh, x);
        return {b.CreateFAdd(acc[0], b.CreateFMul(t, loadReal(k_, dtype_, w, c)))};
      },
      1, "c_tail")[0];
}

Value *AdditiveAttentionKernel::score(Value *batch, Value *row, Value *qOffset, Value *j) {
  IRBuilder<> &b = k_.ir();
  Value *kOffset = b.CreateMul(b.CreateAdd(b.CreateMul(batch, dim(kSeq_)), j), dim(size_));
  Value *s = tanhDot(qOffset, kOffset);
  if (mask_ < 0)
    return s;
  Value *index = k_.offset({batch, row, j}, maskStrides_);
  Value *m = k_.loadElement(maskValue_->dtype(), k_.buffer(unsigned(mask_)), index);
  if (maskValue_->dtype() == DType::Bool)
    return b.CreateSelect(m, s, fill_);
  return b.CreateFAdd(s, k_.convert(m, maskValue_->dtype(), real_));
}

void AdditiveAttentionKernel::accumulate(Value *chunk, Value *factor, Value *p, Value *vOffset) {
  IRBuilder<> &b = k_.ir();
  Value *v = k_.buffer(value_);
  Value *vectorEnd = k_.i64(0);
  if (vectorized_) {
    vectorEnd = b.CreateAnd(chunk, k_.i64(~(kWidth - 1)));
    Value *factors = b.CreateVectorSplat(kWidth, factor), *ps = b.CreateVectorSplat(kWidth, p);
    k_.forRange(
        k_.i64(0), vectorEnd,
        [&](Value *c) {
          Value *acc = b.CreateFMul(vec_.load(acc_, c), factors);
          vec_.store(vec_.fma(ps, vec_.loadUnaligned(v, b.CreateAdd(vOffset, c)), acc), acc_, c);
        },
        kWidth, "vc");
  }
  k_.forRange(
      vectorEnd, chunk,
      [&](Value *c) {
        Value *acc = b.CreateFMul(k_.loadElement(real_, acc_, c), factor);
        Value *value = loadReal(k_, dtype_, v, b.CreateAdd(vOffset, c));
        k_.storeElement(real_, b.CreateFAdd(acc, b.CreateFMul(p, value)), acc_, c);
      },
      1, "vc_tail");
}

void AdditiveAttentionKernel::emitChunk(Value *batch, Value *row, Value *qOffset, Value *yOffset,
                                        Value *chunkBegin) {
  IRBuilder<> &b = k_.ir();
  Value *chunk = k_.min(b.CreateSub(dim(vSize_), chunkBegin), k_.i64(kValueChunk));
  k_.forRange(k_.i64(0), chunk, [&](Value *c) { k_.storeElement(real_, real(0.0), acc_, c); });
  Type *realType = k_.computeType(real_);
  Value *maxSlot = stackSlot(k_, realType, "row_max");
  Value *sumSlot = stackSlot(k_, realType, "row_sum");
  b.CreateStore(minusInfinity(real(0.0)), maxSlot);
  b.CreateStore(real(0.0), sumSlot);
  Value *keys = dim(kSeq_);
  Value *valueRows = b.CreateMul(batch, keys);
  k_.forRange(
      k_.i64(0), keys,
      [&](Value *tile) {
        Value *count = k_.min(b.CreateSub(keys, tile), k_.i64(kTileKeys));
        Value *tileMax = k_.forRangeCarried(
            k_.i64(0), count, {minusInfinity(real(0.0))},
            [&](Value *t, ArrayRef<Value *> carried) -> std::vector<Value *> {
              Value *s = score(batch, row, qOffset, b.CreateAdd(tile, t));
              k_.storeElement(real_, s, scores_, t);
              return {referenceMax(k_, carried[0], s)};
            },
            1, "key")[0];
        Value *oldMax = b.CreateLoad(realType, maxSlot);
        Value *newMax = referenceMax(k_, oldMax, tileMax);
        // Keys at -inf weigh nothing; a tile of them only would make
        // e^(-inf - -inf) = NaN of the running sums.
        k_.ifThen(b.CreateFCmpUNE(newMax, minusInfinity(newMax)), [&] {
          Value *factor = emitRealMath(k_, vmath::MathFunction::Exp, b.CreateFSub(oldMax, newMax));
          b.CreateStore(newMax, maxSlot);
          b.CreateStore(b.CreateFMul(b.CreateLoad(realType, sumSlot), factor), sumSlot);
          Value *sum = k_.forRangeCarried(
              k_.i64(0), count, {b.CreateLoad(realType, sumSlot)},
              [&](Value *t, ArrayRef<Value *> carried) -> std::vector<Value *> {
                Value *p = emitRealMath(k_, vmath::MathFunction::Exp,
                                        b.CreateFSub(k_.loadElement(real_, scores_, t), newMax));
                Value *j = b.CreateAdd(tile, t);
                Value *vOffset =
                    b.CreateAdd(b.CreateMul(b.CreateAdd(valueRows, j), dim(vSize_)), chunkBegin);
                // The first key of the tile rescales the accumulator.
                Value *scale = b.CreateSelect(b.CreateICmpEQ(t, k_.i64(0)), factor, real(1.0));
                accumulate(chunk, scale, p, vOffset);
                return {b.CreateFAdd(carried[0], p)};
              },
              1, "key")[0];
          b.CreateStore(sum, sumSlot);
        });
      },
      kTileKeys, "tile");
  // No keys at all: the unfused MatMul over an empty axis gives zeros.
  Value *sum = b.CreateSelect(b.CreateICmpEQ(keys, k_.i64(0)), real(INFINITY),
                              b.CreateLoad(realType, sumSlot));
  Value *y = k_.buffer(y_);
  Value *first = b.CreateAdd(yOffset, chunkBegin);
  k_.forRange(k_.i64(0), chunk, [&](Value *c) {
    Value *out = b.CreateFDiv(k_.loadElement(real_, acc_, c), sum);
    storeReal(k_, dtype_, out, y, b.CreateAdd(first, c));
  });
}

void AdditiveAttentionKernel::emitRow(Value *linearRow) {
  IRBuilder<> &b = k_.ir();
  std::vector<Value *> index = k_.unflatten(linearRow, {dim(batch_), dim(qSeq_)});
  Value *qOffset = b.CreateMul(linearRow, dim(size_));
  Value *yOffset = b.CreateMul(linearRow, dim(vSize_));
  k_.forRange(
      k_.i64(0), dim(vSize_),
      [&](Value *chunkBegin) { emitChunk(index[0], index[1], qOffset, yOffset, chunkBegin); },
      kValueChunk, "chunk");
}

void AdditiveAttentionKernel::emit() {
  if (mask_ >= 0) {
    maskStrides_ = k_.broadcastStrides(maskValue_->shape(), Shape({batch_, qSeq_, kSeq_}));
    if (maskValue_->dtype() == DType::Bool)
      fill_ =
          k_.constant(real_, node_.getFloat("mask_fill", -std::numeric_limits<float>::infinity()));
  }
  scores_ = stackArray(k_, k_.storageType(real_), kTileKeys, "tile_scores");
  acc_ = stackArray(k_, k_.storageType(real_), kValueChunk, "value_acc");
  Dim rows = batch_ * qSeq_;
  auto [begin, end] = step_.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, 1);
  k_.forRange(
      begin, end, [&](Value *row) { emitRow(row); }, 1, "row");
  step_.finish();
}

} // namespace

void lowerAdditiveAttention(LoweringContext &ctx, const Node &node) {
  AdditiveAttentionKernel kernel(ctx, node);
  kernel.emit();
}

} // namespace onnxc::lower
