//===- codegen/lower/reduction/ReductionVectorLoops.cpp - f32 Reduce* vector loops -===//
//
// The two shapes of f32 reduction transformers spend time on, in explicit
// <8 x float> vectors (the loop vectorizer will not reassociate float adds):
//
//   contiguous  [K, R] -> [K]: one row at a time, four independent
//               accumulators, then single vectors, then one masked vector.
//   columns     [R, N] -> [N]: 32 columns at a time (four vectors), walking
//               down the rows, so every load is a full contiguous vector.
//
// Sums follow the reference evaluator, which accumulates in double, closely:
// float partial sums cover at most 1024 elements of a row (32 per lane) or
// 64 rows of a column before they are added into a double total, so the
// error stays near 32 roundings however long the reduction is.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/reduction/ReductionSupport.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"

#include <limits>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

constexpr unsigned Width = 8;
constexpr unsigned Unroll = 4;
/// Elements of a row summed in float before the partial sums go to double.
constexpr int64_t RowFlush = 1024;
/// Rows of a column block summed in float before going to double.
constexpr int64_t ColumnFlush = 64;

bool isSum(ReduceKind kind) { return kind == ReduceKind::Sum || kind == ReduceKind::Mean; }

/// The vector operations of one reduction kind.
class VectorReducer {
public:
  VectorReducer(KernelBuilder &k, ReduceKind kind)
      : b_(k.ir()), kind_(kind), floatVec_(FixedVectorType::get(b_.getFloatTy(), Width)),
        doubleVec_(FixedVectorType::get(b_.getDoubleTy(), Width)) {
    assert(kind != ReduceKind::Prod && "products take the scalar path");
  }

  FixedVectorType *floatVec() const { return floatVec_; }
  float identity() const {
    if (kind_ == ReduceKind::Max)
      return -std::numeric_limits<float>::infinity();
    if (kind_ == ReduceKind::Min)
      return std::numeric_limits<float>::infinity();
    return 0.0f;
  }
  Value *identityVector() { return ConstantFP::get(floatVec_, identity()); }
  Value *zeroDoubles() { return ConstantFP::get(doubleVec_, 0.0); }

  /// Combines two accumulators (float scalars or vectors). Max/Min use the
  /// NaN-propagating intrinsics, as the evaluator lets any NaN win.
  Value *combine(Value *lhs, Value *rhs) {
    switch (kind_) {
    case ReduceKind::Max:
      return b_.CreateBinaryIntrinsic(Intrinsic::maximum, lhs, rhs);
    case ReduceKind::Min:
      return b_.CreateBinaryIntrinsic(Intrinsic::minimum, lhs, rhs);
    default:
      return b_.CreateFAdd(lhs, rhs);
    }
  }

  /// Eight floats at `base + index`; lanes off in `mask` (if any) read as the
  /// identity without touching memory.
  Value *load(Value *base, Value *index, Value *mask) {
    Value *address = b_.CreateInBoundsGEP(b_.getFloatTy(), base, index);
    if (!mask)
      return b_.CreateAlignedLoad(floatVec_, address, Align(4));
    return b_.CreateMaskedLoad(floatVec_, address, Align(4), mask, identityVector());
  }
  void store(Value *value, Value *base, Value *index, Value *mask) {
    Value *address = b_.CreateInBoundsGEP(b_.getFloatTy(), base, index);
    if (!mask)
      b_.CreateAlignedStore(value, address, Align(4));
    else
      b_.CreateMaskedStore(value, address, Align(4), mask);
  }

  /// Lanes [first, first + 8) that are below `limit`.
  Value *laneMask(Value *first, Value *limit) {
    SmallVector<Constant *, Width> lanes;
    for (unsigned lane = 0; lane < Width; ++lane)
      lanes.push_back(b_.getInt64(lane));
    Value *index = b_.CreateAdd(b_.CreateVectorSplat(Width, first), ConstantVector::get(lanes));
    return b_.CreateICmpSLT(index, b_.CreateVectorSplat(Width, limit));
  }

  /// Folds a vector to its first lane with `fold`, halving each time.
  Value *horizontal(Value *vector, function_ref<Value *(Value *, Value *)> fold) {
    for (unsigned width = Width; width > 1; width /= 2) {
      SmallVector<int, Width> lower, upper;
      for (unsigned lane = 0; lane < width / 2; ++lane) {
        lower.push_back(int(lane));
        upper.push_back(int(lane + width / 2));
      }
      vector = fold(b_.CreateShuffleVector(vector, lower), b_.CreateShuffleVector(vector, upper));
    }
    return b_.CreateExtractElement(vector, uint64_t(0));
  }

  /// Adds a float vector of partial results into the running total: a
  /// double for sums, the float extreme otherwise.
  Value *flush(Value *total, Value *partial) {
    if (!isSum(kind_))
      return combine(total, horizontal(partial, [&](Value *l, Value *r) { return combine(l, r); }));
    Value *wide = b_.CreateFPExt(partial, doubleVec_);
    Value *sum = horizontal(wide, [&](Value *l, Value *r) { return b_.CreateFAdd(l, r); });
    return b_.CreateFAdd(total, sum);
  }
  Value *initialTotal() {
    return isSum(kind_) ? ConstantFP::get(b_.getDoubleTy(), 0.0)
                        : ConstantFP::get(b_.getFloatTy(), identity());
  }

private:
  IRBuilder<> &b_;
  ReduceKind kind_;
  FixedVectorType *floatVec_;
  FixedVectorType *doubleVec_;
};

} // namespace

Value *emitContiguousReduce(KernelBuilder &k, ReduceKind kind, Value *base, Value *length) {
  IRBuilder<> &b = k.ir();
  VectorReducer reducer(k, kind);
  const int64_t block = int64_t(Width * Unroll);
  Value *blockedEnd = b.CreateAnd(length, k.i64(-block));
  Value *vectorEnd = b.CreateAnd(length, k.i64(-int64_t(Width)));

  // Whole blocks of 32, in stretches of RowFlush elements.
  Value *total = k.forRangeCarried(
      k.i64(0), blockedEnd, {reducer.initialTotal()},
      [&](Value *stretch, ArrayRef<Value *> carried) -> std::vector<Value *> {
        Value *stretchEnd = k.min(b.CreateAdd(stretch, k.i64(RowFlush)), blockedEnd);
        std::vector<Value *> init(Unroll, reducer.identityVector());
        std::vector<Value *> accs = k.forRangeCarried(
            stretch, stretchEnd, init,
            [&](Value *i, ArrayRef<Value *> acc) {
              std::vector<Value *> next;
              for (unsigned u = 0; u < Unroll; ++u) {
                Value *index = b.CreateAdd(i, k.i64(int64_t(u * Width)));
                next.push_back(reducer.combine(acc[u], reducer.load(base, index, nullptr)));
              }
              return next;
            },
            block, "r32");
        Value *partial =
            reducer.combine(reducer.combine(accs[0], accs[1]), reducer.combine(accs[2], accs[3]));
        return {reducer.flush(carried[0], partial)};
      },
      RowFlush, "stretch")[0];

  // Fewer than 32 left: single vectors, then the last length mod 8 masked.
  Value *acc = k.forRangeCarried(
      blockedEnd, vectorEnd, {reducer.identityVector()},
      [&](Value *i, ArrayRef<Value *> carried) -> std::vector<Value *> {
        return {reducer.combine(carried[0], reducer.load(base, i, nullptr))};
      },
      int64_t(Width), "r8")[0];
  auto *constantLength = dyn_cast<ConstantInt>(length);
  if (!constantLength || constantLength->getSExtValue() % int64_t(Width) != 0) {
    Value *mask = reducer.laneMask(vectorEnd, length);
    acc = reducer.combine(acc, reducer.load(base, vectorEnd, mask));
  }
  return reducer.flush(total, acc);
}

void emitColumnBlockReduce(KernelBuilder &k, ReduceKind kind, Value *base, Value *out, Value *rows,
                           Value *rowStride, Value *column, Value *columns) {
  IRBuilder<> &b = k.ir();
  VectorReducer reducer(k, kind);

  // Emitted twice: for a full block without masks, for the last one with.
  auto emitBlock = [&](bool masked) {
    std::vector<Value *> masks(Unroll, nullptr);
    std::vector<Value *> offsets;
    for (unsigned u = 0; u < Unroll; ++u) {
      offsets.push_back(b.CreateAdd(column, k.i64(int64_t(u * Width))));
      if (masked)
        masks[u] = reducer.laneMask(offsets[u], columns);
    }
    auto accumulateRows = [&](Value *first, Value *last, ArrayRef<Value *> init) {
      return k.forRangeCarried(
          first, last, init,
          [&](Value *row, ArrayRef<Value *> acc) {
            Value *rowBase = b.CreateInBoundsGEP(b.getFloatTy(), base, b.CreateMul(row, rowStride));
            std::vector<Value *> next;
            for (unsigned u = 0; u < Unroll; ++u)
              next.push_back(reducer.combine(acc[u], reducer.load(rowBase, offsets[u], masks[u])));
            return next;
          },
          1, "row");
    };
    std::vector<Value *> results;
    if (isSum(kind)) {
      std::vector<Value *> zeros(Unroll, reducer.zeroDoubles());
      std::vector<Value *> totals = k.forRangeCarried(
          k.i64(0), rows, zeros,
          [&](Value *first, ArrayRef<Value *> carried) {
            Value *last = k.min(b.CreateAdd(first, k.i64(ColumnFlush)), rows);
            std::vector<Value *> init(Unroll, reducer.identityVector());
            std::vector<Value *> partial = accumulateRows(first, last, init);
            std::vector<Value *> next;
            for (unsigned u = 0; u < Unroll; ++u)
              next.push_back(
                  b.CreateFAdd(carried[u], b.CreateFPExt(partial[u], carried[u]->getType())));
            return next;
          },
          ColumnFlush, "rows64");
      Value *count = b.CreateSIToFP(rows, b.getDoubleTy());
      for (Value *total : totals) {
        if (kind == ReduceKind::Mean)
          total = b.CreateFDiv(total, b.CreateVectorSplat(Width, count));
        results.push_back(b.CreateFPTrunc(total, reducer.floatVec()));
      }
    } else {
      std::vector<Value *> init(Unroll, reducer.identityVector());
      results = accumulateRows(k.i64(0), rows, init);
    }
    for (unsigned u = 0; u < Unroll; ++u)
      reducer.store(results[u], out, offsets[u], masks[u]);
  };

  Value *full = b.CreateICmpSLE(b.CreateAdd(column, k.i64(kColumnBlock)), columns);
  k.ifThenElse(
      full, [&] { emitBlock(false); }, [&] { emitBlock(true); });
}

} // namespace onnxc::lower
