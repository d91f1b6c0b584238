//===- codegen/lower/attention/FlashVectorIR.cpp - Vector IR of the fused attention -===//
#include "codegen/lower/attention/FlashVectorIR.h"

#include "codegen/kernels/CountedLoop.h"

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/IntrinsicsX86.h"
#include "llvm/IR/Metadata.h"

#include <cassert>

using namespace llvm;

namespace onnxc::lower {

using Values = FlashVectorIR::Values;

FlashVectorIR::FlashVectorIR(IRBuilder<> &builder, unsigned width)
    : b_(builder), width_(width), vecTy_(FixedVectorType::get(builder.getFloatTy(), width)) {
  assert((width == 8 || width == 16) && "a ymm or zmm vector of floats");
}

Value *FlashVectorIR::fma(Value *a, Value *b, Value *c) {
  return b_.CreateIntrinsic(Intrinsic::fmuladd, {vecTy_}, {a, b, c});
}

Value *FlashVectorIR::max(Value *a, Value *b) {
  return b_.CreateSelect(b_.CreateFCmpOGT(a, b), a, b);
}

Value *FlashVectorIR::load(Value *base, Value *index) {
  return b_.CreateAlignedLoad(vecTy_, b_.CreateInBoundsGEP(b_.getFloatTy(), base, index),
                              Align(4 * width_));
}

void FlashVectorIR::store(Value *value, Value *base, Value *index) {
  b_.CreateAlignedStore(value, b_.CreateInBoundsGEP(b_.getFloatTy(), base, index),
                        Align(4 * width_));
}

Value *FlashVectorIR::loadUnaligned(Value *base, Value *index) {
  return b_.CreateAlignedLoad(vecTy_, b_.CreateInBoundsGEP(b_.getFloatTy(), base, index), Align(4));
}

void FlashVectorIR::storeUnaligned(Value *value, Value *base, Value *index) {
  b_.CreateAlignedStore(value, b_.CreateInBoundsGEP(b_.getFloatTy(), base, index), Align(4));
}

Value *FlashVectorIR::broadcast(Value *base, Value *index) {
  Value *scalar = b_.CreateAlignedLoad(
      b_.getFloatTy(), b_.CreateInBoundsGEP(b_.getFloatTy(), base, index), Align(4));
  return b_.CreateVectorSplat(width_, scalar);
}

Value *FlashVectorIR::broadcastPair(Value *base, Value *index) {
  // One 64-bit load spread over the lanes: vbroadcastsd, a load-port
  // operation like a float's broadcast.
  Value *pair = b_.CreateAlignedLoad(b_.getInt64Ty(),
                                     b_.CreateInBoundsGEP(b_.getFloatTy(), base, index), Align(4));
  return b_.CreateBitCast(b_.CreateVectorSplat(width_ / 2, pair), vecTy_);
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
  // The micro-kernels are unrolled by hand; LLVM would otherwise unroll the
  // constant head-size loops completely, for code size and no speed.
  CountedLoopShape shape;
  shape.header = "fa.loop";
  shape.body = "fa.body";
  shape.exit = "fa.exit";
  shape.iv = "fa.iv";
  shape.disableUnroll = true;
  return emitCountedLoop(b_, shape, begin, end, step, init, body);
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

/// e^x for the x <= 0 (or -inf) of a softmax, in 13 vector operations of
/// which 6 use the FMA ports (which both matrix products keep busy). x is
/// clamped to -60 first, so the scale below needs no range checks. With
/// n = round(8 x log2 e) and f = 8 x log2 e - n in [-1/2, 1/2],
/// e^x = 2^(n >> 3) * 2^((n & 7) / 8) * 2^(f / 8): the first factor is built
/// in the exponent bits, the second read from an 8-entry table by vpermps
/// (which indexes by the low 3 bits of n), the third a degree-3 polynomial
/// (fit error 2.5e-8). f is one FMA, whose only error is that of the rounded
/// 8 log2 e: |x| * 1.6e-8 relative, which a softmax weighs by e^x
/// (e^x |x| <= 0.37). Error: 1.7e-7 + 1.6e-8 |x| relative, at most 1.2e-7 of
/// the row's largest term (docs/KERNEL_ACCURACY.md). At 16 lanes the table
/// is the same 8 entries twice, read by the zmm vpermps (low 4 bits of n). Below -60 the result
/// is e^-60 = 8.8e-27 rather than smaller (or 0 for -inf): beside the
/// largest term, which is 1, that is nothing, and it keeps P and P·V free of
/// subnormals. A row with no visible key must still give NaN: the caller
/// checks its max. NaN stays NaN (the polynomial carries it).
Value *FlashVectorIR::expNonPositive(Value *x) {
  IRBuilder<> &b = b_;
  Type *intVec = FixedVectorType::get(b.getInt32Ty(), width_);
  auto ints = [&](uint32_t value) { return ConstantInt::get(intVec, value); };
  // -60 > x ? -60 : x is one vmaxps that keeps a NaN x.
  Value *floor = splat(-60.0f);
  x = b.CreateSelect(b.CreateFCmpOGT(floor, x), floor, x);
  // Adding 1.5 * 2^23 rounds 8 x log2(e) to the integer n in the low bits.
  Value *shifter = splat(0x1.8p23f);
  Value *scale = splat(0x1.715476p+3f);
  Value *shifted = fma(x, scale, shifter);
  Value *n = b.CreateFSub(shifted, shifter);
  Value *f = fma(x, scale, b.CreateFNeg(n));
  Value *p =
      fma(fma(fma(splat(0x1.c6a004p-14f), f, splat(0x1.ec0c32p-9f)), f, splat(0x1.62e432p-4f)), f,
          splat(1.0f));
  SmallVector<Constant *, 16> table;
  while (table.size() < width_)
    for (float t : {0x1p+0f, 0x1.172b84p+0f, 0x1.306fe0p+0f, 0x1.4bfdaep+0f, 0x1.6a09e6p+0f,
                    0x1.8ace54p+0f, 0x1.ae89fap+0f, 0x1.d5818ep+0f})
      table.push_back(ConstantFP::get(b.getFloatTy(), t));
  Value *bits = b.CreateBitCast(shifted, intVec);
  Intrinsic::ID permute =
      width_ == 16 ? Intrinsic::x86_avx512_permvar_sf_512 : Intrinsic::x86_avx2_permps;
  Value *fraction = b.CreateIntrinsic(permute, {}, {ConstantVector::get(table), bits});
  // (n >> 3) << 23, from n's low 12 bits: the 9 sign and exponent bits wrap,
  // so adding it to the table entry's exponent (127) subtracts for n < 0.
  Value *power = b.CreateAnd(b.CreateShl(bits, 20), ints(0xff800000u));
  Value *factor = b.CreateAdd(b.CreateBitCast(fraction, intVec), power);
  return b.CreateFMul(p, b.CreateBitCast(factor, vecTy_));
}

} // namespace onnxc::lower
