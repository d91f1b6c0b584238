//===- codegen/kernels/Int4UnpackEmitter.cpp - int4 records into an f32 GEMM panel -===//
//
// A GEMM panel is two record panels side by side (a record panel past N,
// when N has an odd number of them, gives zeros). Per quantization block
// of the rows asked for: the block's scales and zero points once, then per
// k row its nibbles turned into codes (emitInt4RowCodes), minus the
// zero points, to f32, times the scales, stored at the row's place in the
// panel. Two vector operations more than the GEMV spends per weight, once
// per row block rather than once per four rows.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Int4Unpack.h"

#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/Int4Gemv.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"

namespace onnxc {
namespace {

class PanelRowsEmitter {
public:
  PanelRowsEmitter(llvm::IRBuilderBase &builder, const Int4PanelLayout &layout)
      : b_(builder), layout_(layout), lanes_(unsigned(layout.lanes)),
        floats_(llvm::FixedVectorType::get(b_.getFloatTy(), lanes_)),
        ints_(llvm::FixedVectorType::get(b_.getInt32Ty(), lanes_)) {
    nr_ = 2 * layout.lanes;
    blocks_ = (layout.k + layout.block - 1) / layout.block;
    record_ = int4GemvRecordBytes(layout.block, layout.lanes);
    recordPanels_ = (layout.n + layout.lanes - 1) / layout.lanes;
  }

  void emit(llvm::Value *packed, llvm::Value *panel, llvm::Value *kBegin, llvm::Value *depth,
            llvm::Value *out) {
    for (int64_t half = 0; half < 2; ++half) {
      llvm::Value *recordPanel = b_.CreateAdd(b_.CreateMul(panel, i64(2)), i64(half));
      llvm::Value *halfOut = b_.CreateInBoundsGEP(b_.getFloatTy(), out, i64(half * layout_.lanes));
      ifElse(
          b_.CreateICmpSLT(recordPanel, i64(recordPanels_)),
          [&] { emitRecordRows(packed, recordPanel, kBegin, depth, halfOut); },
          [&] {
            loop(i64(0), depth, 1, [&](llvm::Value *k) {
              b_.CreateAlignedStore(llvm::Constant::getNullValue(floats_), rowAddress(halfOut, k),
                                    llvm::Align(4));
            });
          });
    }
  }

private:
  llvm::Value *i64(int64_t value) { return b_.getInt64(value); }
  llvm::Value *byteAt(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset);
  }
  llvm::Value *rowAddress(llvm::Value *halfOut, llvm::Value *k) {
    return b_.CreateInBoundsGEP(b_.getFloatTy(), halfOut, b_.CreateMul(k, i64(nr_)));
  }

  void loop(llvm::Value *begin, llvm::Value *end, int64_t step,
            llvm::function_ref<void(llvm::Value *)> body) {
    emitPlainLoop(b_, begin, end, step, body);
  }

  void ifElse(llvm::Value *condition, llvm::function_ref<void()> then,
              llvm::function_ref<void()> otherwise) {
    llvm::Function *function = b_.GetInsertBlock()->getParent();
    llvm::LLVMContext &context = function->getContext();
    auto *thenBlock = llvm::BasicBlock::Create(context, "records", function);
    auto *elseBlock = llvm::BasicBlock::Create(context, "padding", function);
    auto *joinBlock = llvm::BasicBlock::Create(context, "half.done", function);
    b_.CreateCondBr(condition, thenBlock, elseBlock);
    b_.SetInsertPoint(thenBlock);
    then();
    b_.CreateBr(joinBlock);
    b_.SetInsertPoint(elseBlock);
    otherwise();
    b_.CreateBr(joinBlock);
    b_.SetInsertPoint(joinBlock);
  }

  /// The blocks of rows [kBegin, kBegin + depth) of one record panel:
  /// (code - zero point) * scale per row, into `halfOut`'s rows.
  void emitRecordRows(llvm::Value *packed, llvm::Value *recordPanel, llvm::Value *kBegin,
                      llvm::Value *depth, llvm::Value *halfOut) {
    llvm::Value *records = byteAt(packed, b_.CreateMul(recordPanel, i64(blocks_ * record_)));
    llvm::Value *firstBlock = b_.CreateUDiv(kBegin, i64(layout_.block));
    llvm::Value *endBlock = b_.CreateUDiv(
        b_.CreateAdd(b_.CreateAdd(kBegin, depth), i64(layout_.block - 1)), i64(layout_.block));
    loop(firstBlock, endBlock, 1, [&](llvm::Value *block) {
      llvm::Value *record = byteAt(records, b_.CreateMul(block, i64(record_)));
      llvm::Value *scale = b_.CreateAlignedLoad(floats_, record, llvm::Align(1));
      llvm::Type *zeroType = llvm::FixedVectorType::get(b_.getInt8Ty(), lanes_);
      llvm::Value *zero = b_.CreateZExt(
          b_.CreateAlignedLoad(zeroType, byteAt(record, i64(layout_.lanes * 4)), llvm::Align(1)),
          ints_);
      llvm::Value *nibbles = byteAt(record, i64(layout_.lanes * 5));
      llvm::Value *kBase = b_.CreateMul(block, i64(layout_.block));
      llvm::Value *rows = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i64(layout_.block),
                                                   b_.CreateSub(i64(layout_.k), kBase));
      llvm::Value *target = rowAddress(halfOut, b_.CreateSub(kBase, kBegin));
      loop(i64(0), rows, 1, [&](llvm::Value *kk) {
        llvm::Value *codes = emitInt4RowCodes(b_, nibbles, b_.CreateAnd(kk, i64(~int64_t(7))),
                                              b_.CreateAnd(kk, i64(7)), lanes_);
        llvm::Value *weights =
            b_.CreateFMul(b_.CreateSIToFP(b_.CreateSub(codes, zero), floats_), scale);
        b_.CreateAlignedStore(weights, rowAddress(target, kk), llvm::Align(4));
      });
    });
  }

  llvm::IRBuilderBase &b_;
  const Int4PanelLayout &layout_;
  unsigned lanes_;
  llvm::FixedVectorType *floats_, *ints_;
  int64_t nr_ = 0, blocks_ = 0, record_ = 0, recordPanels_ = 0;
};

} // namespace

void emitInt4PanelRows(llvm::IRBuilderBase &builder, const Int4PanelLayout &layout,
                       llvm::Value *packed, llvm::Value *panel, llvm::Value *kBegin,
                       llvm::Value *depth, llvm::Value *out) {
  if (layout.k <= 0 || layout.n <= 0 || layout.block < 2)
    fail("int4 GEMM panels: K=", layout.k, " N=", layout.n, " block ", layout.block,
         " must be positive (block at least 2)");
  if (layout.lanes != 8 && layout.lanes != 16)
    fail("int4 GEMM panels: ", layout.lanes, " lanes is not a kernel width");
  PanelRowsEmitter(builder, layout).emit(packed, panel, kBegin, depth, out);
}

} // namespace onnxc
