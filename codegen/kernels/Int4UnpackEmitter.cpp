//===- codegen/kernels/Int4UnpackEmitter.cpp - int4 records into f32 GEMM panels -===//
//
// Per GEMM panel, its two record panels one after the other (a record
// panel past N, when N has an odd number of them, writes zeros). Per k row
// of a block: the nibble word turned into codes (emitInt4RowCodes), minus
// the block's zero points, to f32, times the block's scales, stored at the
// row's place in its K block of the packed layout. Two vector operations
// more than the GEMV spends per weight, once per prompt rather than once
// per four rows.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Int4Unpack.h"

#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/GemmPacking.h"
#include "codegen/kernels/Int4Gemv.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <sstream>

namespace onnxc {
namespace {

class Int4UnpackBody {
public:
  Int4UnpackBody(llvm::Function &function, const Int4UnpackSpec &spec)
      : b_(llvm::BasicBlock::Create(function.getContext(), "entry", &function)), spec_(spec),
        lanes_(unsigned(spec.lanes)), floats_(llvm::FixedVectorType::get(b_.getFloatTy(), lanes_)),
        ints_(llvm::FixedVectorType::get(b_.getInt32Ty(), lanes_)), packed_(function.getArg(0)),
        out_(function.getArg(1)) {
    nr_ = 2 * spec.lanes;
    blocks_ = (spec.k + spec.block - 1) / spec.block;
    record_ = int4GemvRecordBytes(spec.block, spec.lanes);
    recordPanels_ = (spec.n + spec.lanes - 1) / spec.lanes;
    slabPadded_ = gemmPaddedColumns(spec.slabColumns, nr_);
  }

  void emit(llvm::Value *panelBegin, llvm::Value *panelEnd) {
    loop(panelBegin, panelEnd, 1, [&](llvm::Value *panel) {
      for (int64_t half = 0; half < 2; ++half) {
        llvm::Value *recordPanel =
            b_.CreateAdd(i64(spec_.columnBegin / spec_.lanes),
                         b_.CreateAdd(b_.CreateMul(panel, i64(2)), i64(half)));
        ifElse(
            b_.CreateICmpSLT(recordPanel, i64(recordPanels_)),
            [&] { emitRecordPanel(recordPanel, panel, half); },
            [&] {
              loop(i64(0), i64(spec_.k), 1, [&](llvm::Value *k) {
                b_.CreateAlignedStore(llvm::Constant::getNullValue(floats_),
                                      outAddress(k, panel, half), llvm::Align(4));
              });
            });
      }
    });
    b_.CreateRetVoid();
  }

private:
  llvm::Value *i64(int64_t value) { return b_.getInt64(value); }
  llvm::Value *byteAt(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), base, offset);
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

  /// Where row k of GEMM panel `panel`, half `half`, goes in the packed
  /// slab: [K block][panel][k within the block][NR columns].
  llvm::Value *outAddress(llvm::Value *k, llvm::Value *panel, int64_t half) {
    llvm::Value *kBlock = b_.CreateUDiv(k, i64(spec_.kc));
    llvm::Value *blockStart = b_.CreateMul(kBlock, i64(spec_.kc));
    llvm::Value *depth = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i64(spec_.kc),
                                                  b_.CreateSub(i64(spec_.k), blockStart));
    llvm::Value *offset =
        b_.CreateAdd(b_.CreateMul(blockStart, i64(slabPadded_)),
                     b_.CreateAdd(b_.CreateMul(b_.CreateMul(panel, i64(nr_)), depth),
                                  b_.CreateAdd(b_.CreateMul(b_.CreateSub(k, blockStart), i64(nr_)),
                                               i64(half * spec_.lanes))));
    return b_.CreateInBoundsGEP(b_.getFloatTy(), out_, offset);
  }

  /// Every block of one record panel: (code - zero point) * scale per row.
  void emitRecordPanel(llvm::Value *recordPanel, llvm::Value *panel, int64_t half) {
    llvm::Value *records = byteAt(packed_, b_.CreateMul(recordPanel, i64(blocks_ * record_)));
    loop(i64(0), i64(blocks_), 1, [&](llvm::Value *block) {
      llvm::Value *record = byteAt(records, b_.CreateMul(block, i64(record_)));
      llvm::Value *scale = b_.CreateAlignedLoad(floats_, record, llvm::Align(1));
      llvm::Type *zeroType = llvm::FixedVectorType::get(b_.getInt8Ty(), lanes_);
      llvm::Value *zero = b_.CreateZExt(
          b_.CreateAlignedLoad(zeroType, byteAt(record, i64(spec_.lanes * 4)), llvm::Align(1)),
          ints_);
      llvm::Value *nibbles = byteAt(record, i64(spec_.lanes * 5));
      llvm::Value *kBase = b_.CreateMul(block, i64(spec_.block));
      llvm::Value *depth = b_.CreateBinaryIntrinsic(llvm::Intrinsic::smin, i64(spec_.block),
                                                    b_.CreateSub(i64(spec_.k), kBase));
      loop(i64(0), depth, 1, [&](llvm::Value *kk) {
        llvm::Value *codes =
            emitInt4RowCodes(b_, byteAt(nibbles, b_.CreateMul(kk, i64(spec_.lanes / 2))), lanes_);
        llvm::Value *weights =
            b_.CreateFMul(b_.CreateSIToFP(b_.CreateSub(codes, zero), floats_), scale);
        b_.CreateAlignedStore(weights, outAddress(b_.CreateAdd(kBase, kk), panel, half),
                              llvm::Align(4));
      });
    });
  }

  llvm::IRBuilder<> b_;
  const Int4UnpackSpec &spec_;
  unsigned lanes_;
  llvm::FixedVectorType *floats_, *ints_;
  llvm::Value *packed_, *out_;
  int64_t nr_ = 0, blocks_ = 0, record_ = 0, recordPanels_ = 0, slabPadded_ = 0;
};

} // namespace

std::string int4UnpackKernelName(const Int4UnpackSpec &spec) {
  std::ostringstream name;
  name << "int4_unpack_k" << spec.k << "_n" << spec.n << "_b" << spec.block << "_l" << spec.lanes
       << "_kc" << spec.kc << "_c" << spec.columnBegin << "_w" << spec.slabColumns;
  return name.str();
}

llvm::Function *emitInt4Unpack(llvm::Module &module, const Int4UnpackSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0 || spec.block < 2 || spec.kc <= 0)
    fail("int4 unpack kernel '", spec.name, "': K=", spec.k, " N=", spec.n, " block ", spec.block,
         " kc ", spec.kc, " must be positive (block at least 2)");
  if (spec.lanes != 8 && spec.lanes != 16)
    fail("int4 unpack kernel '", spec.name, "': ", spec.lanes, " lanes is not a kernel width");
  if (spec.columnBegin < 0 || spec.columnBegin % (2 * spec.lanes) != 0 || spec.slabColumns <= 0 ||
      spec.columnBegin + spec.slabColumns > spec.n)
    fail("int4 unpack kernel '", spec.name, "': the slab of ", spec.slabColumns,
         " columns from column ", spec.columnBegin, " is not whole panels within N=", spec.n);
  if (llvm::Function *existing = module.getFunction(spec.name))
    return existing;
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, ptr, i64, i64},
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec.name, module);
  const char *names[] = {"packed", "out", "panelBegin", "panelEnd"};
  for (unsigned i = 0; i < 4; ++i)
    function->getArg(i)->setName(names[i]);
  for (unsigned i : {0u, 1u}) {
    function->addParamAttr(i, llvm::Attribute::NoCapture);
    function->addParamAttr(i, llvm::Attribute::NoAlias);
  }
  function->addParamAttr(0, llvm::Attribute::ReadOnly);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoFree);
  if (spec.lanes == 16)
    function->addFnAttr("min-legal-vector-width", "512");
  Int4UnpackBody(*function, spec).emit(function->getArg(2), function->getArg(3));
  return function;
}

} // namespace onnxc
