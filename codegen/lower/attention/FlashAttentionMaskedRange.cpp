//===- codegen/lower/attention/FlashAttentionMaskedRange.cpp - Hidden ends -===//
//
// The band bounds a block's keys by position; an attn_mask that is data can
// hide whole runs of keys at either end: the unwritten rows of a
// fixed-length KV cache (opset 24's Attention with nonpad_kv_seqlen, whose
// mask the import builds from the valid lengths) and a left-padded row's
// padding. Before the tile loop the block scans the mask inward from each
// end and stops at the first key some row may see, so the loop visits only
// [first, last]: a decode step over a cache of 4096 rows holding 100 reads
// 100 K and V rows, not 4096, at the price of a mask load or two per block
// when nothing is hidden.
//
// When every row of the block reads one mask row (a decode step, grouped
// heads at one position, a mask broadcast over the queries) and its keys are
// contiguous, the scan goes a vector of keys at a time (kChunk, one load
// and one reduction), then key by key over the last chunk; otherwise key by
// key, each key one gather of the rows' mask elements.
//
// A key is hidden from a row when its bool mask element is false or its
// float mask element is -inf (a NaN or any finite value keeps it). Lanes past
// the block's rows read other rows' masks, which can only keep more keys.
// Only without a finite mask_fill: a hidden key then has weight 0 in every
// row, so leaving it out changes nothing (a row hiding every key still ends
// with a max of -inf: NaN, or zeros with masked_rows_zero, as before).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/attention/FlashAttentionEmitter.h"

#include "llvm/IR/Function.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// Keys per step of the one-row scan: a zmm of f32 mask elements.
constexpr int64_t kChunk = 16;

/// Whether any of `mask`'s elements (bool or f32, a vector or a scalar)
/// lets its key be seen (i1).
Value *anyVisible(IRBuilder<> &b, Value *mask, DType type) {
  Value *visible =
      type == DType::Bool
          ? b.CreateICmpNE(mask, Constant::getNullValue(mask->getType()))
          : b.CreateFCmpUNE(mask, ConstantFP::getInfinity(mask->getType(), /*Negative=*/true));
  return visible->getType()->isVectorTy() ? b.CreateOrReduce(visible) : visible;
}

} // namespace

Value *FlashAttentionEmitter::maskAllows(const Block &block, Value *key) {
  IRBuilder<> &b = ir();
  Value *any = nullptr;
  for (Value *m : loadMask(block, key)) {
    Value *row = anyVisible(b, m, maskType_);
    any = any ? b.CreateOr(any, row) : row;
  }
  return any;
}

Value *FlashAttentionEmitter::chunkAllows(const Block &block, Value *first) {
  IRBuilder<> &b = ir();
  Type *element = k_.storageType(maskType_);
  Value *row = b.CreateAdd(block.maskBase, b.CreateMul(block.first, maskStrides_[2]));
  Value *at = b.CreateInBoundsGEP(element, k_.buffer(unsigned(mask_)), b.CreateAdd(row, first));
  Value *chunk = b.CreateAlignedLoad(FixedVectorType::get(element, unsigned(kChunk)), at, Align(1));
  return anyVisible(b, chunk, maskType_);
}

Value *FlashAttentionEmitter::scanHiddenKeys(const Block &block, Value *from, Value *limit,
                                             int step, int64_t width, Value *enabled) {
  IRBuilder<> &b = ir();
  Function *function = b.GetInsertBlock()->getParent();
  LLVMContext &context = b.getContext();
  BasicBlock *entry = b.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(context, "fa.trim.header", function);
  BasicBlock *check = BasicBlock::Create(context, "fa.trim.check", function);
  BasicBlock *next = BasicBlock::Create(context, "fa.trim.next", function);
  BasicBlock *exit = BasicBlock::Create(context, "fa.trim.exit", function);
  b.CreateBr(header);

  // Moving `width` keys from `at` stays within `limit`, and the key(s)
  // crossed are hidden from every row: move on.
  b.SetInsertPoint(header);
  PHINode *at = b.CreatePHI(b.getInt64Ty(), 2, "fa.trim.at");
  at->addIncoming(from, entry);
  Value *to = b.CreateAdd(at, b.getInt64(step * width));
  Value *room = step < 0 ? b.CreateICmpSGE(to, limit) : b.CreateICmpSLE(to, limit);
  b.CreateCondBr(enabled ? b.CreateAnd(enabled, room) : room, check, exit);

  b.SetInsertPoint(check);
  Value *first = step < 0 ? to : static_cast<Value *>(at);
  Value *seen = width == 1 ? maskAllows(block, first) : chunkAllows(block, first);
  b.CreateCondBr(seen, exit, next);
  BasicBlock *checkEnd = b.GetInsertBlock();

  b.SetInsertPoint(next);
  at->addIncoming(to, next);
  b.CreateBr(header);

  b.SetInsertPoint(exit);
  PHINode *result = b.CreatePHI(b.getInt64Ty(), 2, "fa.trim.end");
  result->addIncoming(at, header);
  result->addIncoming(at, checkEnd);
  return result;
}

FlashBlock FlashAttentionEmitter::withMaskedRange(const Block &block) {
  if (mask_ < 0 || fill_)
    return block;
  IRBuilder<> &b = ir();
  // One mask row for the whole block, its keys contiguous: vectors first.
  Value *oneRow = rowBroadcast_ ? b.getTrue() : b.CreateICmpEQ(block.first, block.last);
  Value *contiguous = b.CreateAnd(oneRow, b.CreateICmpEQ(maskStrides_[3], b.getInt64(1)));
  Block narrowed = block;
  Value *begin = keyBegin(block);
  Value *end = scanHiddenKeys(block, block.keyEnd, begin, -1, kChunk, contiguous);
  narrowed.keyEnd = scanHiddenKeys(block, end, begin, -1, 1, nullptr);
  Value *start = scanHiddenKeys(block, begin, narrowed.keyEnd, +1, kChunk, contiguous);
  narrowed.keyStart = scanHiddenKeys(block, start, narrowed.keyEnd, +1, 1, nullptr);
  return narrowed;
}

} // namespace onnxc::lower
