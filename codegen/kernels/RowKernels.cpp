//===- codegen/kernels/RowKernels.cpp - Softmax, LogSoftmax, LayerNorm, RMSNorm rows -===//
//
// Accuracy choices: sums use 4 x 8 float partial sums (32-way pairwise-ish
// accumulation, good to ~L/32 roundings), LayerNorm's variance is a second
// pass over (x - mean)^2 rather than E[x^2] - mean^2, which cancels badly
// when |mean| >> stddev, and softmax subtracts the row maximum so exp never
// overflows. See docs/KERNEL_ACCURACY.md.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/RowKernels.h"

#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/VectorMath.h"
#include "ir/Error.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"

#include <cmath>
#include <limits>
#include <vector>

using namespace llvm;

namespace onnxc {
namespace {

constexpr unsigned Width = 8;
/// Independent accumulators in the main loop: enough to cover the add and
/// max latency (4 cycles) at one vector per cycle.
constexpr unsigned Unroll = 4;

using LoopBody = function_ref<std::vector<Value *>(Value *iv, ArrayRef<Value *> carried)>;

/// Emits `for (iv = begin; iv < end; iv += step)` carrying `init` through the
/// iterations; returns the carried values after the loop. `body` may emit
/// nested control flow.
std::vector<Value *> emitLoop(IRBuilderBase &b, Value *begin, Value *end, int64_t step,
                              std::vector<Value *> init, LoopBody body) {
  // Guarded and tested at the bottom, nothing for a constant empty range.
  CountedLoopShape shape;
  shape.header = "loop";
  shape.exit = "loop.exit";
  shape.iv = "iv";
  shape.noUnsignedWrap = true;
  shape.guarded = true;
  return emitCountedLoop(b, shape, begin, end, step, init, body);
}

/// A lane mask (null: all lanes) and the element index of lane 0.
struct Chunk {
  Value *index;
  Value *mask;
};

/// Per-vector work of a pass: given the chunk and its accumulator, returns
/// the new accumulator. Masked-off lanes must leave the accumulator alone.
using ChunkVisitor = function_ref<Value *(Chunk chunk, Value *acc)>;
using Combiner = function_ref<Value *(Value *lhs, Value *rhs)>;

/// Emits the passes of one row kernel; lives for one emitted function.
class RowEmitter {
public:
  RowEmitter(IRBuilderBase &b, const RowKernelSpec &spec, Value *rowLength)
      : b_(b), spec_(spec), rowLength_(rowLength),
        vecTy_(FixedVectorType::get(b.getFloatTy(), Width)) {}

  void emitRow(Value *in, Value *out, Value *gamma, Value *beta);

private:
  Value *splat(float value) { return ConstantFP::get(vecTy_, value); }
  Value *load(Value *base, Chunk chunk, float passthrough = 0.0f);
  void store(Value *value, Value *base, Chunk chunk);
  /// Visits [0, L) chunk by chunk and combines the accumulators into one
  /// vector, starting from `identity` in every accumulator.
  Value *forEachChunk(float identity, ChunkVisitor visit, Combiner combine);
  /// A pass without accumulators (the output passes).
  void mapChunks(function_ref<void(Chunk chunk)> body) {
    forEachChunk(
        0.0f,
        [&](Chunk chunk, Value *acc) {
          body(chunk);
          return acc;
        },
        [](Value *lhs, Value *) { return lhs; });
  }
  /// The accumulated vector folded to a scalar with `combine`.
  Value *horizontal(Value *vector, Combiner combine);
  Value *reduce(float identity, ChunkVisitor visit, Combiner combine) {
    return horizontal(forEachChunk(identity, visit, combine), combine);
  }
  /// A chunk's contribution with masked-off lanes replaced by `identity`.
  Value *masked(Chunk chunk, Value *contribution, float identity) {
    return chunk.mask ? b_.CreateSelect(chunk.mask, contribution, splat(identity)) : contribution;
  }
  Value *addValues(Value *lhs, Value *rhs) { return b_.CreateFAdd(lhs, rhs); }
  /// max without NaN fix-ups: compiles to one vmaxps. A NaN in the row still
  /// reaches the output through the exp pass.
  Value *maxValues(Value *lhs, Value *rhs) {
    return b_.CreateSelect(b_.CreateFCmpOGT(lhs, rhs), lhs, rhs);
  }
  /// Sum over the row of (x - shift) or of ((x - shift) * factor)^2 (shift
  /// and factor may be null).
  Value *rowSum(Value *base, bool squares, Value *shift = nullptr, Value *factor = nullptr);
  /// `mean` when finite; otherwise (the sum overflowed: |x| near FLT_MAX)
  /// the sum of x / L, whose partial sums stay within the largest |x|.
  Value *meanWithoutOverflow(Value *base, Value *mean);
  /// max |x - shift| over the row (shift may be null).
  Value *rowPeak(Value *base, Value *shift);
  /// 1 / sqrt(mean((x - shift)^2) + epsilon), computed after scaling by the
  /// row's peak when the plain sum of squares overflows.
  Value *normalizationScale(Value *base, Value *shift);
  /// The row's first element, or 0 for an empty row (read without touching
  /// memory past the row).
  Value *firstElement(Value *base);
  Value *rowLengthAsFloat() { return b_.CreateSIToFP(rowLength_, b_.getFloatTy()); }
  Value *inverseRootMeanPlusEpsilon(Value *sumOfSquares);

  void emitSoftmax(Value *in, Value *out, bool logarithm);
  void emitNormalization(Value *in, Value *out, Value *gamma, Value *beta);

  IRBuilderBase &b_;
  const RowKernelSpec &spec_;
  Value *rowLength_;
  FixedVectorType *vecTy_;
};

Value *RowEmitter::load(Value *base, Chunk chunk, float passthrough) {
  Value *ptr = b_.CreateInBoundsGEP(b_.getFloatTy(), base, chunk.index);
  if (!chunk.mask)
    return b_.CreateAlignedLoad(vecTy_, ptr, Align(4));
  return b_.CreateMaskedLoad(vecTy_, ptr, Align(4), chunk.mask, splat(passthrough));
}

void RowEmitter::store(Value *value, Value *base, Chunk chunk) {
  Value *ptr = b_.CreateInBoundsGEP(b_.getFloatTy(), base, chunk.index);
  if (!chunk.mask)
    b_.CreateAlignedStore(value, ptr, Align(4));
  else
    b_.CreateMaskedStore(value, ptr, Align(4), chunk.mask);
}

Value *RowEmitter::forEachChunk(float identity, ChunkVisitor visit, Combiner combine) {
  const int64_t block = int64_t(Width) * Unroll;
  Value *zero = b_.getInt64(0);
  Value *blockedEnd = b_.CreateAnd(rowLength_, b_.getInt64(-block));
  Value *vectorEnd = b_.CreateAnd(rowLength_, b_.getInt64(-int64_t(Width)));
  std::vector<Value *> accs(Unroll, splat(identity));
  accs = emitLoop(b_, zero, blockedEnd, block, accs, [&](Value *iv, ArrayRef<Value *> carried) {
    std::vector<Value *> next;
    for (unsigned k = 0; k < Unroll; ++k)
      next.push_back(visit({b_.CreateAdd(iv, b_.getInt64(k * Width)), nullptr}, carried[k]));
    return next;
  });
  for (unsigned width = Unroll; width > 1; width /= 2)
    for (unsigned k = 0; k < width / 2; ++k)
      accs[k] = combine(accs[k], accs[k + width / 2]);
  Value *acc = emitLoop(b_, blockedEnd, vectorEnd, Width, {accs[0]},
                        [&](Value *iv, ArrayRef<Value *> carried) {
                          return std::vector<Value *>{visit({iv, nullptr}, carried[0])};
                        })[0];
  // The last L mod 8 elements: one masked chunk. With L known and a multiple
  // of 8 it is left out; with L at run time its mask may be all-false, which
  // touches no memory.
  auto *lengthConst = dyn_cast<ConstantInt>(rowLength_);
  if (lengthConst && lengthConst->getSExtValue() % Width == 0)
    return acc;
  SmallVector<Constant *, Width> lanes;
  for (unsigned k = 0; k < Width; ++k)
    lanes.push_back(b_.getInt64(k));
  Value *laneIndex =
      b_.CreateAdd(b_.CreateVectorSplat(Width, vectorEnd), ConstantVector::get(lanes));
  Value *mask = b_.CreateICmpSLT(laneIndex, b_.CreateVectorSplat(Width, rowLength_));
  return visit({vectorEnd, mask}, acc);
}

Value *RowEmitter::horizontal(Value *vector, Combiner combine) {
  for (unsigned width = Width; width > 1; width /= 2) {
    SmallVector<int, Width> upper, lower;
    for (unsigned k = 0; k < width / 2; ++k) {
      lower.push_back(int(k));
      upper.push_back(int(k + width / 2));
    }
    vector = combine(b_.CreateShuffleVector(vector, lower), b_.CreateShuffleVector(vector, upper));
  }
  return b_.CreateExtractElement(vector, uint64_t(0));
}

Value *RowEmitter::rowSum(Value *base, bool squares, Value *shift, Value *factor) {
  Value *shiftVec = shift ? b_.CreateVectorSplat(Width, shift) : nullptr;
  Value *factorVec = factor ? b_.CreateVectorSplat(Width, factor) : nullptr;
  auto visit = [&](Chunk chunk, Value *acc) -> Value * {
    Value *x = load(base, chunk);
    if (shiftVec)
      x = b_.CreateFSub(x, shiftVec);
    if (factorVec)
      x = b_.CreateFMul(x, factorVec);
    x = masked(chunk, x, 0.0f);
    if (squares)
      return b_.CreateIntrinsic(Intrinsic::fmuladd, {vecTy_}, {x, x, acc});
    return b_.CreateFAdd(acc, x);
  };
  return reduce(0.0f, visit, [&](Value *l, Value *r) { return addValues(l, r); });
}

Value *RowEmitter::rowPeak(Value *base, Value *shift) {
  Value *shiftVec = shift ? b_.CreateVectorSplat(Width, shift) : nullptr;
  auto visit = [&](Chunk chunk, Value *acc) -> Value * {
    Value *x = load(base, chunk);
    if (shiftVec)
      x = b_.CreateFSub(x, shiftVec);
    x = masked(chunk, b_.CreateUnaryIntrinsic(Intrinsic::fabs, x), 0.0f);
    return maxValues(acc, x);
  };
  return reduce(0.0f, visit, [&](Value *l, Value *r) { return maxValues(l, r); });
}

Value *RowEmitter::meanWithoutOverflow(Value *base, Value *mean) {
  BasicBlock *fastEnd = b_.GetInsertBlock();
  Function *function = fastEnd->getParent();
  BasicBlock *rescale = BasicBlock::Create(b_.getContext(), "mean_rescale", function);
  BasicBlock *join = BasicBlock::Create(b_.getContext(), "mean", function);
  Value *magnitude = b_.CreateUnaryIntrinsic(Intrinsic::fabs, mean);
  b_.CreateCondBr(b_.CreateFCmpOEQ(magnitude, ConstantFP::getInfinity(b_.getFloatTy())), rescale,
                  join);
  b_.SetInsertPoint(rescale);
  Value *inverseLength = b_.CreateFDiv(ConstantFP::get(b_.getFloatTy(), 1.0), rowLengthAsFloat());
  Value *slow = rowSum(base, false, nullptr, inverseLength);
  BasicBlock *rescaleEnd = b_.GetInsertBlock();
  b_.CreateBr(join);
  b_.SetInsertPoint(join);
  PHINode *result = b_.CreatePHI(b_.getFloatTy(), 2, "mean");
  result->addIncoming(mean, fastEnd);
  result->addIncoming(slow, rescaleEnd);
  return result;
}

Value *RowEmitter::normalizationScale(Value *base, Value *shift) {
  Value *sumOfSquares = rowSum(base, true, shift);
  Value *fast = inverseRootMeanPlusEpsilon(sumOfSquares);
  // Squares of |x| above ~1.8e19 overflow float, and the plain formula
  // would give a scale of 0 (outputs 0) where the evaluator, in double,
  // gives the right value. Such rows take one more pass: with p the row's
  // peak, 1 / sqrt(mean(x^2) + eps) = (1/p) / sqrt(mean((x/p)^2) + eps/p^2).
  BasicBlock *fastEnd = b_.GetInsertBlock();
  Function *function = fastEnd->getParent();
  BasicBlock *rescale = BasicBlock::Create(b_.getContext(), "norm_rescale", function);
  BasicBlock *join = BasicBlock::Create(b_.getContext(), "norm_scale", function);
  Value *overflow = b_.CreateFCmpOEQ(sumOfSquares, ConstantFP::getInfinity(b_.getFloatTy()));
  b_.CreateCondBr(overflow, rescale, join);

  b_.SetInsertPoint(rescale);
  Value *peak = rowPeak(base, shift);
  Value *inverse = b_.CreateFDiv(ConstantFP::get(b_.getFloatTy(), 1.0), peak);
  Value *scaledMean = b_.CreateFDiv(rowSum(base, true, shift, inverse), rowLengthAsFloat());
  Value *scaledEpsilon = b_.CreateFMul(
      b_.CreateFMul(ConstantFP::get(b_.getFloatTy(), spec_.epsilon), inverse), inverse);
  Value *slow = b_.CreateFDiv(
      inverse, b_.CreateUnaryIntrinsic(Intrinsic::sqrt, b_.CreateFAdd(scaledMean, scaledEpsilon)));
  // A row holding inf keeps the scale 0 the evaluator's division by an
  // infinite rms gives (finite elements 0, infinite ones NaN).
  slow =
      b_.CreateSelect(b_.CreateFCmpOLT(peak, ConstantFP::getInfinity(b_.getFloatTy())), slow, fast);
  BasicBlock *rescaleEnd = b_.GetInsertBlock();
  b_.CreateBr(join);

  b_.SetInsertPoint(join);
  PHINode *scale = b_.CreatePHI(b_.getFloatTy(), 2, "norm_scale");
  scale->addIncoming(fast, fastEnd);
  scale->addIncoming(slow, rescaleEnd);
  return scale;
}

Value *RowEmitter::firstElement(Value *base) {
  Value *mask =
      b_.CreateInsertElement(Constant::getNullValue(FixedVectorType::get(b_.getInt1Ty(), Width)),
                             b_.CreateICmpSGT(rowLength_, b_.getInt64(0)), uint64_t(0));
  return b_.CreateExtractElement(load(base, {b_.getInt64(0), mask}), uint64_t(0));
}

Value *RowEmitter::inverseRootMeanPlusEpsilon(Value *sumOfSquares) {
  Value *meanSquare = b_.CreateFDiv(sumOfSquares, rowLengthAsFloat());
  Value *root = b_.CreateUnaryIntrinsic(
      Intrinsic::sqrt, b_.CreateFAdd(meanSquare, ConstantFP::get(b_.getFloatTy(), spec_.epsilon)));
  return b_.CreateFDiv(ConstantFP::get(b_.getFloatTy(), 1.0), root);
}

void RowEmitter::emitSoftmax(Value *in, Value *out, bool logarithm) {
  constexpr float NegInf = -std::numeric_limits<float>::infinity();
  Value *max = reduce(
      NegInf, [&](Chunk chunk, Value *acc) { return maxValues(acc, load(in, chunk, NegInf)); },
      [&](Value *l, Value *r) { return maxValues(l, r); });
  Value *maxVec = b_.CreateVectorSplat(Width, max);
  // Softmax stores exp(x - max) now and rescales it in place; log-softmax
  // only needs the sum and recomputes x - max in its last pass.
  auto expVisit = [&](Chunk chunk, Value *acc) -> Value * {
    Value *e = vmath::emitExp(b_, b_.CreateFSub(load(in, chunk, NegInf), maxVec));
    if (!logarithm)
      store(e, out, chunk);
    return b_.CreateFAdd(acc, masked(chunk, e, 0.0f));
  };
  Value *sum = reduce(0.0f, expVisit, [&](Value *l, Value *r) { return addValues(l, r); });
  if (logarithm) {
    Value *logSumVec = b_.CreateVectorSplat(Width, vmath::emitLog(b_, sum));
    mapChunks([&](Chunk chunk) {
      Value *shifted = b_.CreateFSub(load(in, chunk), maxVec);
      store(b_.CreateFSub(shifted, logSumVec), out, chunk);
    });
    return;
  }
  Value *inverseVec =
      b_.CreateVectorSplat(Width, b_.CreateFDiv(ConstantFP::get(b_.getFloatTy(), 1.0), sum));
  mapChunks([&](Chunk chunk) { store(b_.CreateFMul(load(out, chunk), inverseVec), out, chunk); });
}

void RowEmitter::emitNormalization(Value *in, Value *out, Value *gamma, Value *beta) {
  bool isLayerNorm = spec_.kind == RowKernelKind::LayerNorm;
  Value *mean = nullptr;
  if (isLayerNorm) {
    // Summing x - x[0] instead of x keeps the partial sums small when the
    // row's mean is large compared with its spread.
    Value *pivot = firstElement(in);
    mean = b_.CreateFAdd(pivot, b_.CreateFDiv(rowSum(in, false, pivot), rowLengthAsFloat()));
    mean = meanWithoutOverflow(in, mean);
  }
  Value *scale = normalizationScale(in, mean);
  Value *meanVec = mean ? b_.CreateVectorSplat(Width, mean) : nullptr;
  Value *scaleVec = b_.CreateVectorSplat(Width, scale);
  bool useBeta = isLayerNorm && spec_.hasBeta;
  mapChunks([&](Chunk chunk) {
    Value *x = load(in, chunk);
    if (meanVec)
      x = b_.CreateFSub(x, meanVec);
    Value *normalized = b_.CreateFMul(x, scaleVec);
    Value *y = useBeta ? b_.CreateIntrinsic(Intrinsic::fmuladd, {vecTy_},
                                            {normalized, load(gamma, chunk), load(beta, chunk)})
                       : b_.CreateFMul(normalized, load(gamma, chunk));
    store(y, out, chunk);
  });
}

void RowEmitter::emitRow(Value *in, Value *out, Value *gamma, Value *beta) {
  switch (spec_.kind) {
  case RowKernelKind::Softmax:
    return emitSoftmax(in, out, /*logarithm=*/false);
  case RowKernelKind::LogSoftmax:
    return emitSoftmax(in, out, /*logarithm=*/true);
  case RowKernelKind::LayerNorm:
  case RowKernelKind::RmsNorm:
    return emitNormalization(in, out, gamma, beta);
  }
}

void checkSpec(const RowKernelSpec &spec, const std::string &name) {
  if (spec.rowLength < 0)
    fail("row kernel '", name, "': row length ", spec.rowLength, " is negative");
  if (!std::isfinite(spec.epsilon) || spec.epsilon < 0)
    fail("row kernel '", name, "': epsilon ", spec.epsilon, " must be finite and non-negative");
  if (spec.hasBeta && spec.kind != RowKernelKind::LayerNorm)
    fail("row kernel '", name, "': ", rowKernelKindName(spec.kind), " takes no beta");
}

} // namespace

Function *emitRowKernel(Module &module, const RowKernelSpec &spec, const std::string &name) {
  checkSpec(spec, name);
  LLVMContext &context = module.getContext();
  IRBuilder<> b(context);
  Type *i64 = b.getInt64Ty();
  Type *ptr = b.getPtrTy();
  std::vector<Type *> params = {ptr, ptr, ptr, ptr, i64, i64};
  bool runtimeLength = spec.rowLength == 0;
  if (runtimeLength)
    params.push_back(i64);
  auto *fnTy = FunctionType::get(b.getVoidTy(), params, false);
  Function *fn = Function::Create(fnTy, Function::ExternalLinkage, name, module);
  fn->addFnAttr(Attribute::NoUnwind);
  const char *argNames[] = {"in", "out", "gamma", "beta", "rowBegin", "rowEnd", "rowLength"};
  for (unsigned k = 0; k < fn->arg_size(); ++k)
    fn->getArg(k)->setName(argNames[k]);

  b.SetInsertPoint(BasicBlock::Create(context, "entry", fn));
  Value *rowLength =
      runtimeLength ? static_cast<Value *>(fn->getArg(6)) : b.getInt64(spec.rowLength);
  RowEmitter rows(b, spec, rowLength);
  emitLoop(b, fn->getArg(4), fn->getArg(5), 1, {}, [&](Value *row, ArrayRef<Value *>) {
    Value *offset = b.CreateMul(row, rowLength, "", /*HasNUW=*/true, /*HasNSW=*/true);
    Value *in = b.CreateInBoundsGEP(b.getFloatTy(), fn->getArg(0), offset);
    Value *out = b.CreateInBoundsGEP(b.getFloatTy(), fn->getArg(1), offset);
    rows.emitRow(in, out, fn->getArg(2), fn->getArg(3));
    return std::vector<Value *>{};
  });
  b.CreateRetVoid();
  return fn;
}

std::string_view rowKernelKindName(RowKernelKind kind) {
  switch (kind) {
  case RowKernelKind::Softmax:
    return "softmax";
  case RowKernelKind::LogSoftmax:
    return "log_softmax";
  case RowKernelKind::LayerNorm:
    return "layer_norm";
  case RowKernelKind::RmsNorm:
    return "rms_norm";
  }
  return "unknown";
}

} // namespace onnxc
