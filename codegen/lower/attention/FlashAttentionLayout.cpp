//===- codegen/lower/attention/FlashAttentionLayout.cpp - Q in, Y out, transposed -===//
//
// The fused attention keeps Q and the output with query rows in the lanes
// (Qt[c][r], Ot[c][r]); Q and Y are row-major. Both conversions go through
// 8x8 register transpositions (codegen/kernels/VectorTranspose.h), 8 columns at a
// time: with 16 lanes a row vector is two 8-row halves, transposed apart and
// joined (Q) or split (Y). The last head size mod 8 columns are copied one
// by one.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/VectorTranspose.h"
#include "codegen/lower/attention/FlashAttentionEmitter.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;
using Values = FlashValues;

namespace {

constexpr int64_t kColumns = kFlashTransposeColumns;

/// 8 floats at float `index` of `base` (4-byte alignment), or a store of them.
Value *loadEight(IRBuilder<> &b, Value *base, Value *index) {
  return b.CreateAlignedLoad(FixedVectorType::get(b.getFloatTy(), kColumns),
                             b.CreateInBoundsGEP(b.getFloatTy(), base, index), Align(4));
}

void storeEight(IRBuilder<> &b, Value *value, Value *base, Value *index) {
  b.CreateAlignedStore(value, b.CreateInBoundsGEP(b.getFloatTy(), base, index), Align(4));
}

/// Lanes [first, first + count) of `vector`.
Value *lanes(IRBuilder<> &b, Value *vector, int first, int count) {
  SmallVector<int, 16> mask;
  for (int i = 0; i < count; ++i)
    mask.push_back(first + i);
  return b.CreateShuffleVector(vector, vector, mask);
}

} // namespace

/// Qt[c][r] = scale * Q[block row r][c]; padding rows repeat the last row.
/// Each 8-row half of a row vector takes 8 columns at a time through a
/// register transposition (at head size 32 and 128 keys a scalar copy was a
/// sixth of the task); the last headSize mod 8 columns are copied one by one.
void FlashAttentionEmitter::packQuery(const Block &block) {
  IRBuilder<> &b = ir();
  const AttentionShape &s = shape_;
  const int64_t w = int64_t(width()), halves = w / kColumns;
  Value *query = k_.buffer(q_);
  Value *headBase = b.CreateAdd(
      k_.offset({block.batch, block.head}, {dim(s.q.batch), dim(s.q.head)}), b.getInt64(qOffset_));
  Value *lastRow = b.CreateSub(block.rows, b.getInt64(1));
  headBase = b.CreateAdd(headBase, b.CreateMul(block.first, dim(s.q.position)));
  auto rowBase = [&](Value *r) {
    return b.CreateAdd(headBase, b.CreateMul(k_.min(r, lastRow), block.qRowStride));
  };
  const int64_t wholeColumns = headSize_ / kColumns * kColumns;
  Value *scale = v_.splat(scale_);
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Values base;
    for (int64_t i = 0; i < w; ++i)
      base.push_back(rowBase(b.getInt64(v * w + i)));
    v_.loop(b.getInt64(0), b.getInt64(wholeColumns), kColumns, [&](Value *c) {
      // columns[h][j]: column c + j of the half's 8 rows.
      std::array<std::array<Value *, kColumns>, 2> columns;
      for (int64_t h = 0; h < halves; ++h) {
        std::array<Value *, kColumns> rows;
        for (int64_t i = 0; i < kColumns; ++i)
          rows[size_t(i)] = loadEight(b, query, b.CreateAdd(base[size_t(h * kColumns + i)], c));
        columns[size_t(h)] = transpose8x8(b, rows);
      }
      for (int64_t j = 0; j < kColumns; ++j) {
        Value *column = columns[0][size_t(j)];
        if (halves == 2) {
          SmallVector<int, 16> join;
          for (int i = 0; i < 16; ++i)
            join.push_back(i);
          column = b.CreateShuffleVector(column, columns[1][size_t(j)], join);
        }
        v_.store(b.CreateFMul(column, scale), queryT_,
                 outputIndex(b.CreateAdd(c, b.getInt64(j)), v));
      }
    });
  }
  if (wholeColumns == headSize_)
    return;
  Value *scalarScale = ConstantFP::get(b.getFloatTy(), scale_);
  v_.loop(b.getInt64(0), b.getInt64(rowVectors_ * w), 1, [&](Value *r) {
    Value *base = rowBase(r);
    v_.loop(b.getInt64(wholeColumns), b.getInt64(headSize_), 1, [&](Value *c) {
      Value *x = b.CreateAlignedLoad(
          b.getFloatTy(), b.CreateInBoundsGEP(b.getFloatTy(), query, b.CreateAdd(base, c)),
          Align(4));
      Value *target = b.CreateAdd(b.CreateMul(c, b.getInt64(rows())), r);
      b.CreateAlignedStore(b.CreateFMul(x, scalarScale),
                           b.CreateInBoundsGEP(b.getFloatTy(), queryT_, target), Align(4));
    });
  });
}

/// Y[block row r][c] = Ot[c][r] / l[r] for the valid rows: 8 columns of an
/// 8-row half at a time through a register transposition, then the last
/// valueSize mod 8 columns one by one.
void FlashAttentionEmitter::emitOutput(const Block &block, ArrayRef<Value *> maxima,
                                       ArrayRef<Value *> sums) {
  IRBuilder<> &b = ir();
  const AttentionShape &s = shape_;
  const int64_t w = int64_t(width()), halves = w / kColumns;
  // No keys at all (an empty K) gives 0 as in the reference; a row whose
  // keys are all masked (its max is still -inf) gives NaN, as 0 / 0 does
  // there (the exp gives e^-60, not 0, for masked keys), or 0 with
  // masked_rows_zero (onnx 1.23's erratum to Attention).
  Value *noKeys = b.CreateICmpEQ(dim(s.total), b.getInt64(0));
  Value *minusInf = minusInfinity();
  Value *hiddenRow = v_.splat(zeroMaskedRows_ ? 0.0f : std::numeric_limits<float>::quiet_NaN());
  Values inverse;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    Value *masked = b.CreateFCmpOEQ(maxima[size_t(v)], minusInf);
    Value *scale = b.CreateSelect(masked, hiddenRow, b.CreateFDiv(v_.splat(1.0f), sums[size_t(v)]));
    inverse.push_back(b.CreateSelect(noKeys, v_.splat(0.0f), scale));
  }
  Value *y = k_.buffer(y_);
  Value *headBase =
      b.CreateAdd(k_.offset({block.batch, block.head}, {dim(s.y.batch), dim(s.y.head)}),
                  b.CreateMul(block.first, dim(s.y.position)));
  auto rowBase = [&](Value *r) { return b.CreateAdd(headBase, b.CreateMul(r, block.yRowStride)); };
  const int64_t wholeColumns = valueSize_ / kColumns * kColumns;
  for (int64_t v = 0; v < rowVectors_; ++v) {
    for (int64_t h = 0; h < halves; ++h) {
      // Valid rows of this half (may be <= 0: then it stores nothing).
      Value *validRows = b.CreateSub(block.rows, b.getInt64(v * w + h * kColumns));
      std::array<Value *, kColumns> base;
      for (int64_t i = 0; i < kColumns; ++i)
        base[size_t(i)] = rowBase(b.getInt64(v * w + h * kColumns + i));
      // Rows [0, rows) of the half unconditionally, the others if valid.
      auto storeColumns = [&](int64_t rows) {
        v_.loop(b.getInt64(0), b.getInt64(wholeColumns), kColumns, [&](Value *c) {
          std::array<Value *, kColumns> columns;
          for (int64_t j = 0; j < kColumns; ++j) {
            Value *column =
                b.CreateFMul(v_.load(output_, outputIndex(b.CreateAdd(c, b.getInt64(j)), v)),
                             inverse[size_t(v)]);
            columns[size_t(j)] =
                halves == 1 ? column : lanes(b, column, int(h * kColumns), kColumns);
          }
          std::array<Value *, kColumns> out = transpose8x8(b, columns);
          for (int64_t i = 0; i < kColumns; ++i) {
            auto store = [&] { storeEight(b, out[size_t(i)], y, b.CreateAdd(base[size_t(i)], c)); };
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
              b.CreateICmpSGE(validRows, b.getInt64(kColumns)), [&] { storeColumns(kColumns); },
              [&] { storeColumns(1); });
        });
    }
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
                              b.CreateAdd(b.CreateMul(c, b.getInt64(rows())), r)),
          Align(4));
      b.CreateAlignedStore(x, b.CreateInBoundsGEP(b.getFloatTy(), y, b.CreateAdd(base, c)),
                           Align(4));
    });
  });
}

} // namespace onnxc::lower
