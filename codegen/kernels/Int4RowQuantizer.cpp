//===- codegen/kernels/Int4RowQuantizer.cpp - A's rows to int8 codes per block ---===//
//
// The quantization onnxruntime's accuracy_level-4 kernel applies to A, in
// the same f32 operations as the IR op's evaluator (Int4Int8Gemv.h): per
// block m = max|a|, inverse = 127 / m (0 when m is 0), scale = m / 127,
// code = round half even(a · inverse) saturated to [-128, 127] (NaN: 0).
// Each block's codes are followed by zeros up to a multiple of 8, and its
// header holds the scale and the sum of its codes (exact in f32).
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/CountedLoop.h"
#include "codegen/kernels/Int4Int8Gemv.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

namespace onnxc {
namespace {

std::vector<llvm::Value *> loop(llvm::IRBuilder<> &b, int64_t begin, llvm::Value *end,
                                llvm::ArrayRef<llvm::Value *> initial, CountedLoopBody body) {
  return emitCountedLoop(b, CountedLoopShape{}, b.getInt64(begin), end, 1, initial, body);
}

/// One block [begin, end) of a row: writes its codes and header.
void quantizeBlock(llvm::IRBuilder<> &b, llvm::Value *row, llvm::Value *codes, llvm::Value *header,
                   int64_t count, int64_t padded) {
  llvm::Type *f32 = b.getFloatTy();
  auto at = [&](llvm::Value *i) { return b.CreateInBoundsGEP(f32, row, i); };
  llvm::Value *zero = llvm::ConstantFP::get(f32, 0.0);
  llvm::Value *absMax = loop(
      b, 0, b.getInt64(count), {zero}, [&](llvm::Value *i, llvm::ArrayRef<llvm::Value *> carried) {
        llvm::Value *magnitude =
            b.CreateUnaryIntrinsic(llvm::Intrinsic::fabs, b.CreateLoad(f32, at(i)));
        // max as the evaluator's std::max (a NaN is skipped).
        llvm::Value *larger = b.CreateFCmpOGT(magnitude, carried[0]);
        return std::vector<llvm::Value *>{b.CreateSelect(larger, magnitude, carried[0])};
      })[0];
  llvm::Value *limit = llvm::ConstantFP::get(f32, 127.0);
  llvm::Value *inverse =
      b.CreateSelect(b.CreateFCmpOEQ(absMax, zero), zero, b.CreateFDiv(limit, absMax));
  llvm::Value *sum =
      loop(b, 0, b.getInt64(count), {b.getInt32(0)},
           [&](llvm::Value *i, llvm::ArrayRef<llvm::Value *> carried) {
             llvm::Value *scaled = b.CreateFMul(b.CreateLoad(f32, at(i)), inverse);
             llvm::Value *rounded = b.CreateUnaryIntrinsic(llvm::Intrinsic::roundeven, scaled);
             llvm::Value *clamped = b.CreateBinaryIntrinsic(
                 llvm::Intrinsic::minnum,
                 b.CreateBinaryIntrinsic(llvm::Intrinsic::maxnum, rounded,
                                         llvm::ConstantFP::get(f32, -128.0)),
                 limit);
             llvm::Value *code = b.CreateSelect(b.CreateFCmpUNO(scaled, scaled), b.getInt32(0),
                                                b.CreateFPToSI(clamped, b.getInt32Ty()));
             b.CreateStore(b.CreateTrunc(code, b.getInt8Ty()),
                           b.CreateInBoundsGEP(b.getInt8Ty(), codes, i));
             return std::vector<llvm::Value *>{b.CreateAdd(carried[0], code)};
           })[0];
  for (int64_t i = count; i < padded; ++i)
    b.CreateStore(b.getInt8(0), b.CreateInBoundsGEP(b.getInt8Ty(), codes, b.getInt64(i)));
  b.CreateStore(b.CreateFDiv(absMax, limit), header);
  b.CreateStore(b.CreateSIToFP(sum, f32),
                b.CreateInBoundsGEP(b.getInt8Ty(), header, b.getInt64(4)));
}

} // namespace

llvm::Function *emitInt4RowQuantizer(llvm::Module &module, const std::string &name, int64_t k,
                                     int64_t block) {
  if (k <= 0 || block < 2)
    fail("int4 row quantizer '", name, "': K=", k, " block ", block, " must be positive");
  if (llvm::Function *existing = module.getFunction(name))
    return existing;
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, i64, ptr, i64, i64},
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(context, "entry", function));
  llvm::Value *x = function->getArg(0), *ldx = function->getArg(1), *xq = function->getArg(2);
  const int64_t blocks = (k + block - 1) / block, padded = (block + 7) / 8 * 8;
  const int64_t rowBytes = int4Int8RowBytes(k, block);
  emitCountedLoop(
      b, CountedLoopShape{}, function->getArg(3), function->getArg(4), 1, {},
      [&](llvm::Value *r, llvm::ArrayRef<llvm::Value *>) {
        llvm::Value *row = b.CreateInBoundsGEP(b.getFloatTy(), x, b.CreateMul(r, ldx));
        llvm::Value *out =
            b.CreateInBoundsGEP(b.getInt8Ty(), xq, b.CreateMul(r, b.getInt64(rowBytes)));
        // Whole blocks in a loop, then the partial last one.
        auto block_ = [&](llvm::Value *blk, int64_t count) {
          quantizeBlock(
              b, b.CreateInBoundsGEP(b.getFloatTy(), row, b.CreateMul(blk, b.getInt64(block))),
              b.CreateInBoundsGEP(
                  b.getInt8Ty(), out,
                  b.CreateAdd(b.getInt64(blocks * 8), b.CreateMul(blk, b.getInt64(padded)))),
              b.CreateInBoundsGEP(b.getInt8Ty(), out, b.CreateMul(blk, b.getInt64(8))), count,
              padded);
        };
        loop(b, 0, b.getInt64(k / block), {}, [&](llvm::Value *blk, llvm::ArrayRef<llvm::Value *>) {
          block_(blk, block);
          return std::vector<llvm::Value *>{};
        });
        if (k % block != 0)
          block_(b.getInt64(k / block), k % block);
        return std::vector<llvm::Value *>{};
      });
  b.CreateRetVoid();
  return function;
}

} // namespace onnxc
