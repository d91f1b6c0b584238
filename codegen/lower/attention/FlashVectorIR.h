//===- codegen/lower/attention/FlashVectorIR.h - Vector IR of the fused attention -===//
//
// Internal to the fused attention kernels (FlashAttentionEmitter.h,
// AdditiveAttentionLowering.cpp): the <8 x float> or <16 x float> building
// blocks their micro-kernels are written in (loads and stores, broadcasts
// from memory, FMA, max), loops whose unrolling is left to the code (LLVM
// would otherwise unroll the constant head-size loops completely, for code
// size and no speed), two-way branches that yield values, L1 prefetch, and
// the softmax's exp of non-positive arguments.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/IR/IRBuilder.h"

#include <vector>

namespace onnxc::lower {

class FlashVectorIR {
public:
  /// The 256-bit vector (AVX2); 16 lanes take AVX-512F (see expNonPositive).
  static constexpr unsigned kAvx2Width = 8;
  using Values = std::vector<llvm::Value *>;
  using LoopBody =
      llvm::function_ref<Values(llvm::Value *iv, llvm::ArrayRef<llvm::Value *> carried)>;

  explicit FlashVectorIR(llvm::IRBuilder<> &builder, unsigned width = kAvx2Width);

  unsigned width() const { return width_; }
  llvm::FixedVectorType *type() const { return vecTy_; }
  llvm::Value *splat(float value) { return llvm::ConstantFP::get(vecTy_, value); }
  /// Vector `index` (in floats, a multiple of the width) of an array aligned
  /// to the vector's size.
  llvm::Value *load(llvm::Value *base, llvm::Value *index);
  void store(llvm::Value *value, llvm::Value *base, llvm::Value *index);
  /// The same at any float `index` (4-byte alignment).
  llvm::Value *loadUnaligned(llvm::Value *base, llvm::Value *index);
  void storeUnaligned(llvm::Value *value, llvm::Value *base, llvm::Value *index);
  /// Float `index` of `base`, in every lane.
  llvm::Value *broadcast(llvm::Value *base, llvm::Value *index);
  /// Floats `index` and `index` + 1 of `base` in the even and odd lanes.
  llvm::Value *broadcastPair(llvm::Value *base, llvm::Value *index);
  llvm::Value *fma(llvm::Value *a, llvm::Value *b, llvm::Value *c);
  /// a > b ? a : b (one vmaxps).
  llvm::Value *max(llvm::Value *a, llvm::Value *b);
  /// e^x for the x <= 0 of a softmax, e^-60 for anything below -60 (-inf
  /// included), NaN for NaN (see the definition).
  llvm::Value *expNonPositive(llvm::Value *x);
  /// Prefetches into L1 the cache lines of `floats` floats at float
  /// `offset` of `base`; the address may lie past the buffer.
  void prefetch(llvm::Value *base, llvm::Value *offset, int64_t floats);

  /// for (iv = begin; iv < end; iv += step), carrying `init`; returns the
  /// carried values after the loop.
  Values loop(llvm::Value *begin, llvm::Value *end, int64_t step,
              llvm::ArrayRef<llvm::Value *> init, LoopBody body);
  void loop(llvm::Value *begin, llvm::Value *end, int64_t step,
            llvm::function_ref<void(llvm::Value *)> body);
  /// condition ? then() : otherwise(), each yielding the same number of values.
  Values branch(llvm::Value *condition, llvm::function_ref<Values()> then,
                llvm::function_ref<Values()> otherwise);

private:
  llvm::IRBuilder<> &b_;
  unsigned width_;
  llvm::FixedVectorType *vecTy_;
};

} // namespace onnxc::lower
