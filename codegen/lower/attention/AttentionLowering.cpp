//===- codegen/lower/attention/AttentionLowering.cpp - Opset-23 Attention -===//
//
// Attention as ir/eval/AttentionKernels.cpp computes it, one task per query
// row (batch x head x query position), with no scratch that grows with the
// key length: the scores are recomputed in each of two passes over the keys.
// The first finds the row maximum (and writes qk_matmul_output in modes 0-2),
// the second accumulates exp(score - max) * V into a stack chunk of at most
// kValueChunk values (one pass per chunk, so any value head size fits).
// Keys j < past come from past_key/past_value, the rest from K/V; the
// present_key/value outputs are filled by a separate copy step.
//
// Like the reference, a row whose keys are all masked gives NaN (zeros with
// masked_rows_zero, in Y and the mode-3 probabilities); with a mask_fill
// attribute the hidden keys' scores are the fill plus any float mask instead
// (a row hiding every key is then uniform, as in the reference). With
// softcap_first the qk_matmul_output modes follow the computation's order:
// 1 is the capped score, 2 the capped score with the masks.
//
// This is the general path; f32 attention without softcap or a read
// qk_matmul_output (a 4-D past included) takes the fused kernel of
// FlashAttentionLowering.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"

#include "llvm/IR/Intrinsics.h"

#include <array>
#include <optional>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// Values per pass of the V accumulation (a 1 KiB stack array in f32).
constexpr int64_t kValueChunk = 256;

/// What a query row's passes share.
struct QueryRow {
  Value *linear; // batch x head x position, the row of qk_matmul_output
  Value *batch, *head, *kvHead, *position;
  Value *qOffset; // element offset of Q[batch, head, position, 0]
};

/// A score in the three forms qk_matmul_output can expose.
struct Score {
  Value *scaled, *unmasked, *biased, *capped; // unmasked: scaled, capped if softcap_first
};

/// Mask strides and extents in the 4-D [batch, heads, qSeq, keys] view.
struct MaskView {
  std::array<Value *, 4> strides{};
  Value *columns = nullptr; // keys at or past this column are masked out
  DType dtype = DType::Bool;
};

class AttentionKernel {
public:
  AttentionKernel(LoweringContext &ctx, const Node &node, const AttentionShape &shape)
      : node_(node), shape_(shape), step_(ctx.beginStep(node, "attention")), k_(step_.kernel()) {
    real_ = realDType(shape.dtype);
    mode_ = node.getInt("qk_matmul_output_mode", 0);
    window_ = attentionWindow(ctx, node);
    fill_ = attentionMaskFill(ctx, node);
    capFirstOrder_ = node.getInt("softcap_first", 0) != 0;
    zeroMaskedRows_ = node.getInt("masked_rows_zero", 0) != 0;
    if (mode_ < 0 || mode_ > 3)
      ctx.unsupported(node, "qk_matmul_output_mode " + std::to_string(mode_) + " is not 0 to 3");
    q_ = step_.input(node.operand(0));
    key_ = step_.input(node.operand(1));
    value_ = step_.input(node.operand(2));
    if (const onnxc::Value *mask = node.operand(3)) {
      mask_ = step_.input(mask);
      maskValue_ = mask;
    }
    if (shape.hasPast) {
      pastKey_ = step_.input(node.operand(4));
      pastValue_ = step_.input(node.operand(5));
    }
    y_ = step_.output(node.result(0));
    if (node.numResults() > 3 && isNeeded(ctx, node.result(3)))
      qk_ = step_.output(node.result(3));
  }

  void emit();

private:
  Value *dim(const Dim &d) { return k_.dim(d); }
  Value *scaleValue();
  void prepareMask();
  /// The masks at `key`: whether they hide it and what they add.
  struct Masking {
    Value *hidden, *added;
  };
  Masking masking(const QueryRow &row, Value *key);
  Score score(const QueryRow &row, Value *key);
  /// Buffer and element offset of row `key` of K (or V) for `row`'s kv head.
  std::pair<Value *, Value *> keyRow(const QueryRow &row, Value *key, bool isValue);
  void emitRow(Value *linearRow);
  void emitValuePass(const QueryRow &row, Value *rowMax);
  void emitSoftmaxOutput(const QueryRow &row, Value *rowMax);
  /// `value`, or 0 where the row hides every key (its max is -inf) and
  /// masked_rows_zero asks for zeros there.
  Value *hiddenRowOr(Value *rowMax, Value *value) {
    if (!zeroMaskedRows_)
      return value;
    IRBuilder<> &b = k_.ir();
    Value *hidden = b.CreateFCmpOEQ(rowMax, minusInfinity(rowMax));
    return b.CreateSelect(hidden, k_.constant(real_, 0.0), value);
  }

  const Node &node_;
  const AttentionShape &shape_;
  StepBuilder step_;
  KernelBuilder &k_;
  DType real_;
  int64_t mode_, window_;
  bool capFirstOrder_ = false, zeroMaskedRows_ = false;
  unsigned q_, key_, value_, y_;
  int mask_ = -1, pastKey_ = -1, pastValue_ = -1, qk_ = -1;
  const onnxc::Value *maskValue_ = nullptr;
  Value *scale_ = nullptr;
  std::optional<float> fill_; // mask_fill; hidden keys are -inf without it
  MaskView maskView_;
};

Value *AttentionKernel::scaleValue() {
  if (node_.hasAttr("scale"))
    return k_.constant(real_, double(node_.getFloat("scale", 1.0f)));
  IRBuilder<> &b = k_.hoisted();
  Value *size = b.CreateSIToFP(dim(shape_.headSize), k_.computeType(real_));
  Value *root = b.CreateUnaryIntrinsic(Intrinsic::sqrt, size);
  return b.CreateFDiv(ConstantFP::get(size->getType(), 1.0), root);
}

void AttentionKernel::prepareMask() {
  MaskLayout layout = attentionMaskLayout(k_, maskValue_->shape());
  maskView_.strides = layout.strides;
  maskView_.columns = layout.columns;
  maskView_.dtype = maskValue_->dtype();
}

AttentionKernel::Masking AttentionKernel::masking(const QueryRow &row, Value *key) {
  IRBuilder<> &b = k_.ir();
  Value *zero = k_.constant(real_, 0.0);
  Masking result{b.getFalse(), zero};
  if (mask_ >= 0) {
    Value *index = k_.offset({row.batch, row.head, row.position, key}, maskView_.strides);
    Value *inside = b.CreateICmpSLT(key, maskView_.columns);
    // Keys outside a short mask read column 0 (always in bounds) and are discarded.
    index = b.CreateSelect(
        inside, index,
        k_.offset({row.batch, row.head, row.position},
                  {maskView_.strides[0], maskView_.strides[1], maskView_.strides[2]}));
    Value *m = k_.loadElement(maskView_.dtype, k_.buffer(unsigned(mask_)), index);
    result.hidden = b.CreateNot(inside);
    if (maskView_.dtype == DType::Bool)
      result.hidden = b.CreateOr(result.hidden, b.CreateNot(m));
    else
      result.added = b.CreateSelect(inside, k_.convert(m, maskView_.dtype, real_), zero);
  }
  Value *diagonal = b.CreateAdd(row.position, dim(shape_.past));
  if (node_.getInt("is_causal", 0) != 0)
    result.hidden = b.CreateOr(result.hidden, b.CreateICmpSGT(key, diagonal));
  if (window_ >= 0) {
    // |key - diagonal| > window, as one unsigned compare of the shifted distance.
    Value *shifted = b.CreateAdd(b.CreateSub(key, diagonal), k_.i64(window_));
    result.hidden = b.CreateOr(result.hidden, b.CreateICmpUGT(shifted, k_.i64(2 * window_)));
  }
  return result;
}

std::pair<Value *, Value *> AttentionKernel::keyRow(const QueryRow &row, Value *key, bool isValue) {
  IRBuilder<> &b = k_.ir();
  const HeadLayout &layout = isValue ? shape_.v : shape_.k;
  Value *current = k_.buffer(isValue ? value_ : key_);
  Value *headBase = k_.offset({row.batch, row.kvHead}, {dim(layout.batch), dim(layout.head)});
  if (!shape_.hasPast)
    return {current, b.CreateAdd(headBase, b.CreateMul(key, dim(layout.position)))};
  Value *past = dim(shape_.past);
  Value *inPast = b.CreateICmpSLT(key, past);
  Value *currentOffset =
      b.CreateAdd(headBase, b.CreateMul(b.CreateSub(key, past), dim(layout.position)));
  // past_key/past_value are 4-D [batch, kvHeads, rows, size], rows >= past.
  Value *size = dim(isValue ? shape_.vHeadSize : shape_.headSize);
  Value *pastRows = dim(isValue ? shape_.pastValueRows : shape_.pastKeyRows);
  Value *pastRow = b.CreateAdd(
      b.CreateMul(b.CreateAdd(b.CreateMul(row.batch, dim(shape_.kvHeads)), row.kvHead), pastRows),
      key);
  Value *pastBuffer = k_.buffer(unsigned(isValue ? pastValue_ : pastKey_));
  return {b.CreateSelect(inPast, pastBuffer, current),
          b.CreateSelect(inPast, b.CreateMul(pastRow, size), currentOffset)};
}

Score AttentionKernel::score(const QueryRow &row, Value *key) {
  IRBuilder<> &b = k_.ir();
  // Plain variables, not a structured binding: clang-tidy's clang 14 refuses
  // the lambda below capturing one.
  std::pair<Value *, Value *> keyAt = keyRow(row, key, /*isValue=*/false);
  Value *keyBuffer = keyAt.first, *keyOffset = keyAt.second;
  Value *q = k_.buffer(q_);
  DType dtype = shape_.dtype;
  Value *dot = k_.forRangeCarried(
      k_.i64(0), dim(shape_.headSize), {k_.constant(real_, 0.0)},
      [&](Value *d, ArrayRef<Value *> acc) -> std::vector<Value *> {
        Value *qd = loadReal(k_, dtype, q, b.CreateAdd(row.qOffset, d));
        Value *kd = loadReal(k_, dtype, keyBuffer, b.CreateAdd(keyOffset, d));
        return {b.CreateFAdd(acc[0], b.CreateFMul(qd, kd))};
      },
      1, "d")[0];
  Score s;
  s.scaled = b.CreateFMul(dot, scale_);
  double cap = node_.getFloat("softcap", 0.0f);
  auto softcapped = [&](Value *x) {
    Value *capValue = k_.constant(real_, cap);
    return b.CreateFMul(capValue,
                        emitRealMath(k_, vmath::MathFunction::Tanh, b.CreateFDiv(x, capValue)));
  };
  // softcap_first (onnxc's): cap before the masks, so hidden keys stay hidden.
  bool capFirst = cap > 0 && node_.getInt("softcap_first", 0) != 0;
  Value *score = capFirst ? softcapped(s.scaled) : s.scaled;
  s.unmasked = score;
  Masking masks = masking(row, key);
  if (fill_) {
    // The exported Where replaces a hidden score, then a float mask adds.
    Value *replaced = b.CreateSelect(masks.hidden, k_.constant(real_, double(*fill_)), score);
    s.biased = b.CreateFAdd(replaced, masks.added);
  } else {
    // As the reference: scaled + (mask + -inf for hidden keys).
    Value *bias = b.CreateSelect(
        masks.hidden, b.CreateFAdd(masks.added, minusInfinity(masks.added)), masks.added);
    s.biased = b.CreateFAdd(score, bias);
  }
  s.capped = cap > 0 && !capFirst ? softcapped(s.biased) : s.biased;
  return s;
}

void AttentionKernel::emit() {
  scale_ = scaleValue();
  if (mask_ >= 0)
    prepareMask();
  const AttentionShape &s = shape_;
  Dim rows = s.batch * s.qHeads * s.qSeq;
  auto [begin, end] = step_.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, 1);
  k_.forRange(
      begin, end, [&](Value *row) { emitRow(row); }, 1, "row");
  step_.finish();
}

void AttentionKernel::emitRow(Value *linearRow) {
  IRBuilder<> &b = k_.ir();
  const AttentionShape &s = shape_;
  std::vector<Value *> index = k_.unflatten(linearRow, {dim(s.batch), dim(s.qHeads), dim(s.qSeq)});
  QueryRow row;
  row.linear = linearRow;
  row.batch = index[0];
  row.head = index[1];
  row.position = index[2];
  row.kvHead = b.CreateUDiv(row.head, b.CreateUDiv(dim(s.qHeads), dim(s.kvHeads)));
  row.qOffset = k_.offset(index, {dim(s.q.batch), dim(s.q.head), dim(s.q.position)});
  Value *total = dim(s.total);
  Value *qkRow = b.CreateMul(linearRow, total);

  Value *rowMax = k_.forRangeCarried(
      k_.i64(0), total, {minusInfinity(k_.constant(real_, 0.0))},
      [&](Value *key, ArrayRef<Value *> carried) -> std::vector<Value *> {
        Score sc = score(row, key);
        if (qk_ >= 0 && mode_ < 3) {
          Value *stage1 = capFirstOrder_ ? sc.unmasked : sc.biased;
          Value *stage2 = capFirstOrder_ ? sc.biased : sc.capped;
          Value *out = mode_ == 0 ? sc.scaled : mode_ == 1 ? stage1 : stage2;
          storeReal(k_, s.dtype, out, k_.buffer(unsigned(qk_)), b.CreateAdd(qkRow, key));
        }
        return {referenceMax(k_, carried[0], sc.capped)};
      },
      1, "key")[0];
  emitValuePass(row, rowMax);
  if (qk_ >= 0 && mode_ == 3)
    emitSoftmaxOutput(row, rowMax);
}

void AttentionKernel::emitValuePass(const QueryRow &row, Value *rowMax) {
  IRBuilder<> &b = k_.ir();
  const AttentionShape &s = shape_;
  Value *accumulator = stackArray(k_, k_.storageType(real_), kValueChunk, "value_chunk");
  Value *valueSize = dim(s.vHeadSize);
  Value *yOffset = k_.offset({row.batch, row.head, row.position},
                             {dim(s.y.batch), dim(s.y.head), dim(s.y.position)});
  k_.forRange(
      k_.i64(0), valueSize,
      [&](Value *chunkBegin) {
        Value *chunk = k_.min(b.CreateSub(valueSize, chunkBegin), k_.i64(kValueChunk));
        k_.forRange(k_.i64(0), chunk, [&](Value *d) {
          k_.storeElement(real_, k_.constant(real_, 0.0), accumulator, d);
        });
        Value *sum = k_.forRangeCarried(
            k_.i64(0), dim(s.total), {k_.constant(real_, 0.0)},
            [&](Value *key, ArrayRef<Value *> carried) -> std::vector<Value *> {
              Value *p = emitRealMath(k_, vmath::MathFunction::Exp,
                                      b.CreateFSub(score(row, key).capped, rowMax));
              std::pair<Value *, Value *> valueAt = keyRow(row, key, /*isValue=*/true);
              Value *valueBuffer = valueAt.first, *valueOffset = valueAt.second;
              Value *first = b.CreateAdd(valueOffset, chunkBegin);
              k_.forRange(k_.i64(0), chunk, [&](Value *d) {
                Value *v = loadReal(k_, s.dtype, valueBuffer, b.CreateAdd(first, d));
                Value *acc = k_.loadElement(real_, accumulator, d);
                k_.storeElement(real_, b.CreateFAdd(acc, b.CreateFMul(p, v)), accumulator, d);
              });
              return {b.CreateFAdd(carried[0], p)};
            },
            1, "key")[0];
        Value *first = b.CreateAdd(yOffset, chunkBegin);
        k_.forRange(k_.i64(0), chunk, [&](Value *d) {
          Value *acc = k_.loadElement(real_, accumulator, d);
          storeReal(k_, s.dtype, hiddenRowOr(rowMax, b.CreateFDiv(acc, sum)), k_.buffer(y_),
                    b.CreateAdd(first, d));
        });
      },
      kValueChunk, "chunk");
}

/// qk_matmul_output_mode 3: the softmax itself, which needs the row's sum.
void AttentionKernel::emitSoftmaxOutput(const QueryRow &row, Value *rowMax) {
  IRBuilder<> &b = k_.ir();
  Value *total = dim(shape_.total);
  auto exponent = [&](Value *key) {
    return emitRealMath(k_, vmath::MathFunction::Exp, b.CreateFSub(score(row, key).capped, rowMax));
  };
  Value *sum = k_.forRangeCarried(
      k_.i64(0), total, {k_.constant(real_, 0.0)},
      [&](Value *key, ArrayRef<Value *> carried) -> std::vector<Value *> {
        return {b.CreateFAdd(carried[0], exponent(key))};
      },
      1, "key")[0];
  Value *qkRow = b.CreateMul(row.linear, total);
  k_.forRange(k_.i64(0), total, [&](Value *key) {
    storeReal(k_, shape_.dtype, hiddenRowOr(rowMax, b.CreateFDiv(exponent(key), sum)),
              k_.buffer(unsigned(qk_)), b.CreateAdd(qkRow, key));
  });
}

/// present_key / present_value [batch, kvHeads, total, size]: the past rows
/// followed by the current K / V rows (in either layout). A present the
/// runtime may bind to its past's buffer (CachePairs.h) is laid out for the
/// capacity; bound so, the past rows are already in place and only the
/// current ones are written.
void emitPresentCopy(LoweringContext &ctx, const Node &node, const AttentionShape &s,
                     bool isValue) {
  const onnxc::Value *present = node.result(isValue ? 2 : 1);
  StepBuilder step =
      ctx.beginStep(node, isValue ? "attention_present_value" : "attention_present_key");
  unsigned current = step.input(node.operand(isValue ? 2 : 1));
  int past = s.hasPast ? int(step.input(node.operand(isValue ? 5 : 4))) : -1;
  unsigned out = step.output(present);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  const HeadLayout &layout = isValue ? s.v : s.k;
  Dim size = isValue ? s.vHeadSize : s.headSize;
  Dim pastRows = isValue ? s.pastValueRows : s.pastKeyRows;
  Dim presentRows = ctx.layoutOf(present)[2];
  Dim rows = s.batch * s.kvHeads * s.total;
  auto [begin, end] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, 16);
  Type *storage = k.storageType(s.dtype);
  Value *samePointer = past >= 0 && ctx.hasCacheLayout(present)
                           ? b.CreateICmpEQ(k.buffer(unsigned(past)), k.buffer(out))
                           : b.getFalse();
  k.forRange(begin, end, [&](Value *row) {
    std::vector<Value *> index =
        k.unflatten(row, {k.dim(s.batch), k.dim(s.kvHeads), k.dim(s.total)});
    Value *pastLength = k.dim(s.past);
    Value *position = b.CreateSub(index[2], pastLength);
    Value *source = k.buffer(current);
    Value *sourceRow = k.offset({index[0], index[1], position},
                                {k.dim(layout.batch), k.dim(layout.head), k.dim(layout.position)});
    Value *inPast = b.getFalse();
    if (past >= 0) {
      // The past cache has the present's layout with `pastRows` rows per head.
      inPast = b.CreateICmpSLT(index[2], pastLength);
      Value *pastRow =
          b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(index[0], k.dim(s.kvHeads)), index[1]),
                                  k.dim(pastRows)),
                      index[2]);
      source = b.CreateSelect(inPast, k.buffer(unsigned(past)), source);
      sourceRow = b.CreateSelect(inPast, b.CreateMul(pastRow, k.dim(size)), sourceRow);
    }
    Value *targetRow = b.CreateMul(
        b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(index[0], k.dim(s.kvHeads)), index[1]),
                                k.dim(presentRows)),
                    index[2]),
        k.dim(size));
    k.ifThen(b.CreateNot(b.CreateAnd(inPast, samePointer)), [&] {
      k.forRange(k.i64(0), k.dim(size), [&](Value *d) {
        Value *element =
            b.CreateLoad(storage, k.elementAddress(s.dtype, source, b.CreateAdd(sourceRow, d)));
        b.CreateStore(element, k.elementAddress(s.dtype, k.buffer(out), b.CreateAdd(targetRow, d)));
      });
    });
  });
  step.finish();
}

void lowerAttention(LoweringContext &ctx, const Node &node) {
  AttentionShape shape = attentionShape(ctx, node);
  if (canUseAmxAttention(ctx, node, shape)) {
    emitAmxAttention(ctx, node, shape);
  } else if (canUseFlashAttention(ctx, node, shape)) {
    emitFlashAttention(ctx, node, shape);
  } else {
    AttentionKernel kernel(ctx, node, shape);
    kernel.emit();
  }
  for (bool isValue : {false, true}) {
    size_t result = isValue ? 2 : 1;
    if (node.numResults() > result && isNeeded(ctx, node.result(result)))
      emitPresentCopy(ctx, node, shape, isValue);
  }
}

} // namespace

void registerAttentionLowerings(LoweringTable &table) {
  table.add(OpKind::Attention, lowerAttention);
  table.add(OpKind::RotaryEmbedding, lowerRotaryEmbedding);
  table.add(OpKind::AdditiveAttention, lowerAdditiveAttention);
  table.add(OpKind::LinearAttention, lowerLinearAttention);
}

} // namespace onnxc::lower
