//===- codegen/lower/attention/AmxAttentionIR.h - IR of the attention on AMX tiles -===//
//
// Internal to AmxAttentionLowering.cpp: the building blocks both of its
// steps (packing K and V, the attention) are written in. Tile calls on the
// tile layout of codegen/kernels/AmxTiles.h (C in tiles 0-3 as a 32 x 32 f32
// block, A in 4-5, B in 6-7), 16-lane f32 loads with lane masks, and bf16
// rounding as the bf16 GEMM rounds its A.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"
#include "codegen/lower/attention/FlashVectorIR.h"

#include "llvm/IR/IntrinsicsX86.h"

#include <vector>

namespace onnxc::lower {

/// The IR both steps of the attention on tiles share.
class AmxAttentionIR {
public:
  static constexpr int64_t kLanes = 16;

  explicit AmxAttentionIR(KernelBuilder &k) : k_(k), b_(k.ir()), vector_(k.ir(), kLanes) {
    f32_ = b_.getFloatTy();
    floats_ = llvm::FixedVectorType::get(f32_, kLanes);
    halfs_ = llvm::FixedVectorType::get(b_.getInt16Ty(), kLanes);
  }
  llvm::Value *i64(int64_t v) { return b_.getInt64(v); }
  llvm::Value *tile(int n) { return b_.getInt8(uint8_t(n)); }
  void call(llvm::Intrinsic::ID id, llvm::ArrayRef<llvm::Value *> operands) {
    b_.CreateCall(llvm::Intrinsic::getDeclaration(&k_.module(), id), operands);
  }
  llvm::Value *f32At(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateGEP(f32_, base, offset);
  }
  llvm::Value *i16At(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateGEP(b_.getInt16Ty(), base, offset);
  }
  /// 16 floats rounded to bf16 (VCVTNEPS2BF16, as the bf16 GEMM rounds A):
  /// <16 x i16>.
  llvm::Value *round(llvm::Value *floats) {
    llvm::Value *halves =
        b_.CreateCall(llvm::Intrinsic::getDeclaration(
                          &k_.module(), llvm::Intrinsic::x86_avx512bf16_cvtneps2bf16_512),
                      {floats});
    return b_.CreateBitCast(halves, halfs_);
  }
  /// Lanes [offset, offset + 16) that are < count (i1 vector).
  llvm::Value *lanesBelow(llvm::Value *count, llvm::Value *offset) {
    std::vector<llvm::Constant *> lanes;
    for (int64_t lane = 0; lane < kLanes; ++lane)
      lanes.push_back(b_.getInt64(uint64_t(lane)));
    llvm::Value *index =
        b_.CreateAdd(llvm::ConstantVector::get(lanes), b_.CreateVectorSplat(kLanes, offset));
    return b_.CreateICmpSLT(index, b_.CreateVectorSplat(kLanes, count));
  }
  llvm::Value *lanesBelow(llvm::Value *count, int64_t offset) {
    return lanesBelow(count, i64(offset));
  }
  llvm::Value *load(llvm::Value *pointer, llvm::Value *mask = nullptr) {
    if (!mask)
      return b_.CreateAlignedLoad(floats_, pointer, llvm::Align(4));
    return b_.CreateMaskedLoad(floats_, pointer, llvm::Align(4), mask,
                               llvm::Constant::getNullValue(floats_));
  }
  /// One k step of 32 into C tiles 0-3: A rows at `a` (`aStride` bytes
  /// apart, the second 16 rows 16 strides on), B pair rows at `b` (128 bytes).
  void productStep(llvm::Value *a, int64_t aStride, llvm::Value *b) {
    llvm::Value *a1 = b_.CreateGEP(b_.getInt8Ty(), a, i64(16 * aStride));
    call(llvm::Intrinsic::x86_tileloadd64, {tile(4), a, i64(aStride)});
    call(llvm::Intrinsic::x86_tileloadd64, {tile(6), b, i64(128)});
    call(llvm::Intrinsic::x86_tdpbf16ps, {tile(0), tile(4), tile(6)});
    call(llvm::Intrinsic::x86_tileloadd64, {tile(7), i16At(b, i64(32)), i64(128)});
    call(llvm::Intrinsic::x86_tdpbf16ps, {tile(1), tile(4), tile(7)});
    call(llvm::Intrinsic::x86_tileloadd64, {tile(5), a1, i64(aStride)});
    call(llvm::Intrinsic::x86_tdpbf16ps, {tile(2), tile(5), tile(6)});
    call(llvm::Intrinsic::x86_tdpbf16ps, {tile(3), tile(5), tile(7)});
  }
  void zeroBlock() {
    for (int c = 0; c < 4; ++c)
      call(llvm::Intrinsic::x86_tilezero, {tile(c)});
  }
  /// Tiles 0-3 (a 32 x 32 f32 block) to `at`, rows `stride` floats apart.
  void storeBlock(llvm::Value *at, int64_t stride) {
    for (int c = 0; c < 4; ++c)
      call(llvm::Intrinsic::x86_tilestored64,
           {tile(c), f32At(at, i64((c / 2) * 16 * stride + (c % 2) * 16)), i64(stride * 4)});
  }

  KernelBuilder &k_;
  llvm::IRBuilder<> &b_;
  FlashVectorIR vector_; // the flash kernel's exp and max
  llvm::Type *f32_;
  llvm::VectorType *floats_, *halfs_;
};

} // namespace onnxc::lower
