//===- codegen/lower/attention/FlashAttentionMaskedRange.cpp - Keys attn_mask hides at the ends
//-===//
//
// The band bounds a block's keys by position; an attn_mask that is data can
// hide whole runs of keys at either end: the unwritten rows of a
// fixed-length KV cache (opset 24's Attention with nonpad_kv_seqlen, whose
// mask the import builds from the valid lengths) and a left-padded row's
// padding. Before the tile loop the block scans the mask inward from each
// end, one key at a time, and stops at the first key some row may see, so
// the loop visits only [first, last]: a decode step over a cache of 4096
// rows holding 100 reads 100 K and V rows, not 4096, at the price of a
// mask load or two per block when nothing is hidden.
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

Value *FlashAttentionEmitter::maskAllows(const Block &block, Value *key) {
  IRBuilder<> &b = ir();
  Values mask = loadMask(block, key);
  Value *any = nullptr;
  for (Value *m : mask) {
    Value *visible =
        maskType_ == DType::Bool
            ? b.CreateICmpNE(m, Constant::getNullValue(m->getType()))
            : b.CreateFCmpUNE(m, ConstantFP::getInfinity(m->getType(), /*Negative=*/true));
    Value *row = b.CreateOrReduce(visible);
    any = any ? b.CreateOr(any, row) : row;
  }
  return any;
}

/// Moves `from` by `step` (-1: down from an end, the key scanned is from - 1;
/// +1: up from a beginning, the key is from) while the key is hidden from
/// every row and `from` has not reached `limit`.
Value *FlashAttentionEmitter::scanHiddenKeys(const Block &block, Value *from, Value *limit,
                                             int step) {
  IRBuilder<> &b = ir();
  Function *function = b.GetInsertBlock()->getParent();
  LLVMContext &context = b.getContext();
  BasicBlock *entry = b.GetInsertBlock();
  BasicBlock *header = BasicBlock::Create(context, "fa.trim.header", function);
  BasicBlock *check = BasicBlock::Create(context, "fa.trim.check", function);
  BasicBlock *next = BasicBlock::Create(context, "fa.trim.next", function);
  BasicBlock *exit = BasicBlock::Create(context, "fa.trim.exit", function);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  PHINode *at = b.CreatePHI(b.getInt64Ty(), 2, "fa.trim.at");
  at->addIncoming(from, entry);
  Value *more = step < 0 ? b.CreateICmpSGT(at, limit) : b.CreateICmpSLT(at, limit);
  b.CreateCondBr(more, check, exit);

  b.SetInsertPoint(check);
  Value *key = step < 0 ? b.CreateSub(at, b.getInt64(1)) : static_cast<Value *>(at);
  b.CreateCondBr(maskAllows(block, key), exit, next);
  BasicBlock *checkEnd = b.GetInsertBlock();

  b.SetInsertPoint(next);
  at->addIncoming(b.CreateAdd(at, b.getInt64(step)), next);
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
  Block narrowed = block;
  Value *begin = keyBegin(block);
  narrowed.keyEnd = scanHiddenKeys(block, block.keyEnd, begin, -1);
  narrowed.keyStart = scanHiddenKeys(block, begin, narrowed.keyEnd, +1);
  return narrowed;
}

} // namespace onnxc::lower
