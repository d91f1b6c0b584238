//===- codegen/kernels/CountedLoop.cpp - Counted loops with carried values ===//
#include "codegen/kernels/CountedLoop.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Metadata.h"

#include <cassert>

namespace onnxc {
namespace {

void disableUnroll(llvm::LLVMContext &context, llvm::BranchInst *backEdge) {
  llvm::Metadata *disable =
      llvm::MDNode::get(context, llvm::MDString::get(context, "llvm.loop.unroll.disable"));
  llvm::MDNode *loopId = llvm::MDNode::getDistinct(context, {nullptr, disable});
  loopId->replaceOperandWith(0, loopId);
  backEdge->setMetadata(llvm::LLVMContext::MD_loop, loopId);
}

/// The header's phis: the induction variable, then one per carried value.
llvm::PHINode *emitPhis(llvm::IRBuilderBase &b, const CountedLoopShape &shape, llvm::Value *begin,
                        llvm::ArrayRef<llvm::Value *> initial, llvm::BasicBlock *preheader,
                        std::vector<llvm::PHINode *> &phis) {
  llvm::PHINode *iv = b.CreatePHI(b.getInt64Ty(), 2, shape.iv);
  iv->addIncoming(begin, preheader);
  for (llvm::Value *value : initial) {
    phis.push_back(b.CreatePHI(value->getType(), 2));
    phis.back()->addIncoming(value, preheader);
  }
  return iv;
}

/// Runs the body and closes the phis with its values and iv + step; returns
/// the increment.
llvm::Value *emitIteration(llvm::IRBuilderBase &b, const CountedLoopShape &shape, llvm::PHINode *iv,
                           int64_t step, const std::vector<llvm::PHINode *> &phis,
                           CountedLoopBody body, std::vector<llvm::Value *> &next) {
  next = body(iv, std::vector<llvm::Value *>(phis.begin(), phis.end()));
  assert(next.size() == phis.size() && "loop body must return every carried value");
  return b.CreateAdd(iv, b.getInt64(step), shape.next, shape.noUnsignedWrap, /*HasNSW=*/true);
}

void closePhis(llvm::PHINode *iv, llvm::Value *ivNext, const std::vector<llvm::PHINode *> &phis,
               const std::vector<llvm::Value *> &next, llvm::BasicBlock *latch) {
  iv->addIncoming(ivNext, latch);
  for (size_t i = 0; i < phis.size(); ++i)
    phis[i]->addIncoming(next[i], latch);
}

std::vector<llvm::Value *> emitTopTestedLoop(llvm::IRBuilderBase &b, const CountedLoopShape &shape,
                                             llvm::Value *begin, llvm::Value *end, int64_t step,
                                             llvm::ArrayRef<llvm::Value *> initial,
                                             CountedLoopBody body) {
  llvm::LLVMContext &context = b.getContext();
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *preheader = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(context, shape.header, function);
  auto *bodyBlock = llvm::BasicBlock::Create(context, shape.body, function);
  auto *exit = llvm::BasicBlock::Create(context, shape.exit, function);
  b.CreateBr(header);

  b.SetInsertPoint(header);
  std::vector<llvm::PHINode *> phis;
  llvm::PHINode *iv = emitPhis(b, shape, begin, initial, preheader, phis);
  b.CreateCondBr(b.CreateICmpSLT(iv, end), bodyBlock, exit);

  b.SetInsertPoint(bodyBlock);
  std::vector<llvm::Value *> next;
  llvm::Value *ivNext = emitIteration(b, shape, iv, step, phis, body, next);
  llvm::BasicBlock *latch = b.GetInsertBlock();
  llvm::BranchInst *backEdge = b.CreateBr(header);
  if (shape.disableUnroll)
    disableUnroll(context, backEdge);
  closePhis(iv, ivNext, phis, next, latch);

  b.SetInsertPoint(exit);
  return std::vector<llvm::Value *>(phis.begin(), phis.end());
}

std::vector<llvm::Value *> emitGuardedLoop(llvm::IRBuilderBase &b, const CountedLoopShape &shape,
                                           llvm::Value *begin, llvm::Value *end, int64_t step,
                                           llvm::ArrayRef<llvm::Value *> initial,
                                           CountedLoopBody body) {
  auto *beginConst = llvm::dyn_cast<llvm::ConstantInt>(begin);
  auto *endConst = llvm::dyn_cast<llvm::ConstantInt>(end);
  if (beginConst && endConst && beginConst->getSExtValue() >= endConst->getSExtValue())
    return initial.vec();
  llvm::Function *function = b.GetInsertBlock()->getParent();
  llvm::BasicBlock *preheader = b.GetInsertBlock();
  auto *header = llvm::BasicBlock::Create(b.getContext(), shape.header, function);
  auto *exit = llvm::BasicBlock::Create(b.getContext(), shape.exit, function);
  b.CreateCondBr(b.CreateICmpSLT(begin, end), header, exit);

  b.SetInsertPoint(header);
  std::vector<llvm::PHINode *> phis;
  llvm::PHINode *iv = emitPhis(b, shape, begin, initial, preheader, phis);
  std::vector<llvm::Value *> next;
  llvm::Value *ivNext = emitIteration(b, shape, iv, step, phis, body, next);
  llvm::BasicBlock *latch = b.GetInsertBlock();
  closePhis(iv, ivNext, phis, next, latch);
  llvm::BranchInst *backEdge = b.CreateCondBr(b.CreateICmpSLT(ivNext, end), header, exit);
  if (shape.disableUnroll)
    disableUnroll(b.getContext(), backEdge);

  b.SetInsertPoint(exit);
  std::vector<llvm::Value *> result;
  for (size_t i = 0; i < initial.size(); ++i) {
    llvm::PHINode *merged = b.CreatePHI(initial[i]->getType(), 2);
    merged->addIncoming(initial[i], preheader);
    merged->addIncoming(next[i], latch);
    result.push_back(merged);
  }
  return result;
}

} // namespace

std::vector<llvm::Value *> emitCountedLoop(llvm::IRBuilderBase &builder,
                                           const CountedLoopShape &shape, llvm::Value *begin,
                                           llvm::Value *end, int64_t step,
                                           llvm::ArrayRef<llvm::Value *> initial,
                                           CountedLoopBody body) {
  if (shape.guarded)
    return emitGuardedLoop(builder, shape, begin, end, step, initial, body);
  return emitTopTestedLoop(builder, shape, begin, end, step, initial, body);
}

void emitPlainLoop(llvm::IRBuilderBase &builder, llvm::Value *begin, llvm::Value *end, int64_t step,
                   llvm::function_ref<void(llvm::Value *)> body) {
  CountedLoopShape shape;
  shape.disableUnroll = true;
  emitCountedLoop(builder, shape, begin, end, step, {},
                  [&](llvm::Value *iv, llvm::ArrayRef<llvm::Value *>) {
                    body(iv);
                    return std::vector<llvm::Value *>{};
                  });
}

} // namespace onnxc
