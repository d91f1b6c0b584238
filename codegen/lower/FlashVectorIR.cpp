//===- codegen/lower/FlashVectorIR.cpp - Vector IR of the fused attention -===//
#include "codegen/lower/FlashVectorIR.h"

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Metadata.h"

#include <cassert>

using namespace llvm;

namespace onnxc::lower {

using Values = FlashVectorIR::Values;

FlashVectorIR::FlashVectorIR(IRBuilder<> &builder)
    : b_(builder), vecTy_(FixedVectorType::get(builder.getFloatTy(), kWidth)) {}

Value *FlashVectorIR::fma(Value *a, Value *b, Value *c) {
  return b_.CreateIntrinsic(Intrinsic::fmuladd, {vecTy_}, {a, b, c});
}

Value *FlashVectorIR::max(Value *a, Value *b) {
  return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
}

Value *FlashVectorIR::load(Value *base, Value *index) {
  return b_.CreateAlignedLoad(vecTy_, b_.CreateInBoundsGEP(b_.getFloatTy(), base, index),
                              Align(32));
}

void FlashVectorIR::store(Value *value, Value *base, Value *index) {
  b_.CreateAlignedStore(value, b_.CreateInBoundsGEP(b_.getFloatTy(), base, index), Align(32));
}

Value *FlashVectorIR::broadcast(Value *base, Value *index) {
  Value *scalar = b_.CreateAlignedLoad(
      b_.getFloatTy(), b_.CreateInBoundsGEP(b_.getFloatTy(), base, index), Align(4));
  return b_.CreateVectorSplat(kWidth, scalar);
}

// x86 prefetches do not fault, so `offset` may lie past the buffer.
void FlashVectorIR::prefetch(Value *base, Value *offset, int64_t floats) {
  IRBuilder<> &b = b_;
  for (int64_t line = 0; line < floats; line += 16) {
    Value *address = b.CreateGEP(b.getFloatTy(), base, b.CreateAdd(offset, b.getInt64(line)));
    b.CreateIntrinsic(Intrinsic::prefetch, {address->getType()},
                      {address, b.getInt32(0), b.getInt32(3), b.getInt32(1)});
  }
}

Values FlashVectorIR::loop(Value *begin, Value *end, int64_t step, ArrayRef<Value *> init,
                           LoopBody body) {
  IRBuilder<> &b = b_;
  LLVMContext &context = b.getContext();
  Function *function = b.GetInsertBlock()->getParent();
  BasicBlock *preheader = b.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(context, "fa.loop", function);
  BasicBlock *bodyBlock = BasicBlock::Create(context, "fa.body", function);
  BasicBlock *exit = BasicBlock::Create(context, "fa.exit", function);
  b.CreateBr(header);
  b.SetInsertPoint(header);
  PHINode *iv = b.CreatePHI(b.getInt64Ty(), 2, "fa.iv");
  iv->addIncoming(begin, preheader);
  std::vector<PHINode *> phis;
  for (Value *value : init) {
    phis.push_back(b.CreatePHI(value->getType(), 2));
    phis.back()->addIncoming(value, preheader);
  }
  b.CreateCondBr(b.CreateICmpSLT(iv, end), bodyBlock, exit);
  b.SetInsertPoint(bodyBlock);
  Values next = body(iv, Values(phis.begin(), phis.end()));
  assert(next.size() == phis.size() && "loop body must return every carried value");
  Value *ivNext = b.CreateNSWAdd(iv, b.getInt64(step));
  BasicBlock *latch = b.GetInsertBlock();
  BranchInst *backEdge = b.CreateBr(header);
  // The micro-kernels are unrolled by hand; LLVM would otherwise unroll the
  // constant head-size loops completely, for code size and no speed.
  MDNode *disable = MDNode::get(context, MDString::get(context, "llvm.loop.unroll.disable"));
  MDNode *loopId = MDNode::getDistinct(context, {nullptr, disable});
  loopId->replaceOperandWith(0, loopId);
  backEdge->setMetadata(LLVMContext::MD_loop, loopId);
  iv->addIncoming(ivNext, latch);
  for (size_t i = 0; i < phis.size(); ++i)
    phis[i]->addIncoming(next[i], latch);
  b.SetInsertPoint(exit);
  return Values(phis.begin(), phis.end());
}

void FlashVectorIR::loop(Value *begin, Value *end, int64_t step, function_ref<void(Value *)> body) {
  loop(begin, end, step, {}, [&](Value *iv, ArrayRef<Value *>) {
    body(iv);
    return Values{};
  });
}

Values FlashVectorIR::branch(Value *condition, function_ref<Values()> then,
                             function_ref<Values()> otherwise) {
  IRBuilder<> &b = b_;
  Function *function = b.GetInsertBlock()->getParent();
  BasicBlock *thenBlock = BasicBlock::Create(b.getContext(), "fa.then", function);
  BasicBlock *elseBlock = BasicBlock::Create(b.getContext(), "fa.else", function);
  BasicBlock *merge = BasicBlock::Create(b.getContext(), "fa.merge", function);
  b.CreateCondBr(condition, thenBlock, elseBlock);
  b.SetInsertPoint(thenBlock);
  Values thenValues = then();
  BasicBlock *thenEnd = b.GetInsertBlock();
  b.CreateBr(merge);
  b.SetInsertPoint(elseBlock);
  Values elseValues = otherwise();
  BasicBlock *elseEnd = b.GetInsertBlock();
  b.CreateBr(merge);
  b.SetInsertPoint(merge);
  Values merged;
  for (size_t i = 0; i < thenValues.size(); ++i) {
    PHINode *phi = b.CreatePHI(thenValues[i]->getType(), 2);
    phi->addIncoming(thenValues[i], thenEnd);
    phi->addIncoming(elseValues[i], elseEnd);
    merged.push_back(phi);
  }
  return merged;
}

/// e^x for the x <= 0 (or -inf) of a softmax: vmath::emitExp's reduction
/// (x = n ln2 + r, |r| <= ln2/2) without its overflow and subnormal range,
/// in about half the instructions. Results below 2^-126 (x < -87.3) are 0:
/// they are under 1e-38 of the row's largest term, which is 1. NaN stays NaN.
Value *FlashVectorIR::expNonPositive(Value *x) {
  IRBuilder<> &b = b_;
  Type *intVec = FixedVectorType::get(b.getInt32Ty(), kWidth);
  // Adding 1.5 * 2^23 rounds x * log2(e) to the integer n in the low bits.
  Value *shifter = splat(0x1.8p23f);
  Value *shifted = fma(x, splat(0x1.715476p+0f), shifter);
  Value *n = b.CreateFSub(shifted, shifter);
  Value *r = fma(n, splat(-0x1.63p-1f), x); // n * ln2 in two parts: the first is exact
  r = fma(n, splat(0x1.bd0106p-13f), r);
  // e^r = 1 + r + r^2 (1/2 + r/6 + r^2/24 + r^3/120 + r^4/720): under 1.2e-7 relative.
  Value *q = splat(1.0f / 720);
  for (float c : {1.0f / 120, 1.0f / 24, 1.0f / 6, 0.5f})
    q = fma(q, r, splat(c));
  Value *p = fma(fma(q, r, splat(1.0f)), r, splat(1.0f));
  // 2^n from the bits of `shifted`, whose low bits hold n (n >= -126 here).
  Value *exponent =
      b.CreateShl(b.CreateAdd(b.CreateBitCast(shifted, intVec), ConstantInt::get(intVec, 127)), 23);
  Value *result = b.CreateFMul(p, b.CreateBitCast(exponent, vecTy_));
  return b.CreateSelect(b.CreateFCmpOLT(x, splat(-87.3f)), splat(0.0f), result);
}

} // namespace onnxc::lower
