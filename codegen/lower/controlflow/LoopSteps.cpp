//===- codegen/lower/controlflow/LoopSteps.cpp - The steps a compiled loop adds -===//

#include "codegen/lower/controlflow/LoopSteps.h"

#include "onnxc/model_abi.h"

#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <limits>

namespace onnxc::lower {

namespace {

using llvm::IRBuilder;

/// "Loop /Loop_3 (enter)", or "Loop %h (enter)" for an unnamed node.
std::string stepName(const Node &node, const char *what) {
  std::string name = std::string(node.opName()) + " ";
  name += node.name().empty() ? "%" + node.result(0)->name() : node.name();
  return name + " (" + what + ")";
}

/// A bool buffer's one byte, as i1 (FunctionBuilder stores bools as i8).
llvm::Value *loadBool(KernelBuilder &k, unsigned slot) {
  IRBuilder<> &b = k.ir();
  return b.CreateICmpNE(b.CreateLoad(b.getInt8Ty(), k.buffer(slot)), b.getInt8(0));
}

/// The number of iterations the loop may run: M (absent: unbounded) for a
/// Loop, the scan length for a Scan.
llvm::Value *tripLimit(KernelBuilder &k, const LoopControl &control,
                       std::optional<unsigned> tripCountSlot) {
  IRBuilder<> &b = k.ir();
  if (tripCountSlot)
    return b.CreateLoad(b.getInt64Ty(), k.buffer(*tripCountSlot), "trip_count");
  if (control.condition < 0)
    return k.dim(*control.length);
  return k.i64(std::numeric_limits<int64_t>::max());
}

void markBranch(LoweringContext &ctx, size_t step, int32_t target) {
  PlanStep &planStep = ctx.plan().steps[step];
  planStep.isBranch = true;
  planStep.branchTarget = target;
}

} // namespace

void addOneElementCheck(LoweringContext &ctx, const Node &node, const Value *value,
                        const char *what) {
  if (!value->shape().isRanked())
    ctx.unsupported(node, std::string("the rank of its ") + what + " is unknown");
  Dim count = value->shape().numElements();
  if (count == Dim(1))
    return;
  if (count.isUnknown())
    ctx.unsupported(node, std::string("the element count of its ") + what + " is unknown");
  StepBuilder step = ctx.beginStep(node, "check_one_element");
  step.setName(stepName(node, "check"));
  step.setFailure(node.describe() + ": the " + what + " must hold one element, but its shape " +
                  value->shape().str() + " holds another number");
  KernelBuilder &k = step.kernel();
  k.failIf(k.ir().CreateICmpNE(k.dim(count), k.i64(1)));
  step.finish();
}

size_t addLoopEntry(LoweringContext &ctx, const Node &node, const LoopControl &control) {
  StepBuilder step = ctx.beginStep(node, "loop_enter");
  step.setName(stepName(node, "enter"));
  unsigned iteration = step.bufferSlot(control.iteration);
  std::optional<unsigned> condition, conditionOperand, tripCount;
  if (control.condition >= 0)
    condition = step.bufferSlot(control.condition);
  if (control.conditionOperand >= 0)
    conditionOperand = step.bufferSlot(control.conditionOperand);
  if (control.tripCountOperand >= 0)
    tripCount = step.bufferSlot(control.tripCountOperand);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  b.CreateStore(k.i64(0), k.buffer(iteration));
  llvm::Value *run = b.getTrue();
  if (condition) {
    run = conditionOperand ? loadBool(k, *conditionOperand) : b.getTrue();
    b.CreateStore(b.CreateZExt(run, b.getInt8Ty()), k.buffer(*condition));
  }
  llvm::Value *limit = tripLimit(k, control, tripCount);
  if (condition && control.length) {
    // The scan outputs were sized for `length` rows, which shape inference
    // took from M's known contents; a run that disagrees would write past
    // them, so it fails instead (never expected: M is that value).
    step.setFailure("the trip count of " + node.describe() +
                    " is not the number of rows its scan outputs were compiled for (" +
                    control.length->str() + ")");
    k.failIf(b.CreateICmpNE(k.max(limit, k.i64(0)), k.dim(*control.length)));
  }
  if (!control.otherLengths.empty()) {
    step.setFailure("the scan inputs of " + node.describe() +
                    " differ in length along their scan axes");
    for (const Dim &other : control.otherLengths)
      k.failIf(b.CreateICmpNE(k.dim(other), k.dim(*control.length)));
  }
  run = b.CreateAnd(run, b.CreateICmpSGT(limit, k.i64(0)));
  step.finish(b.CreateSelect(run, b.getInt32(0), b.getInt32(ONNXC_BRANCH_TAKEN)));
  size_t index = ctx.plan().steps.size() - 1;
  markBranch(ctx, index, 0); // the target is known after the back-edge
  return index;
}

void addLoopBackEdge(LoweringContext &ctx, const Node &node, const LoopControl &control,
                     size_t entry) {
  StepBuilder step = ctx.beginStep(node, "loop_next");
  step.setName(stepName(node, "next iteration"));
  unsigned iteration = step.bufferSlot(control.iteration);
  std::optional<unsigned> condition, tripCount;
  if (control.condition >= 0)
    condition = step.bufferSlot(control.condition);
  if (control.tripCountOperand >= 0)
    tripCount = step.bufferSlot(control.tripCountOperand);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  llvm::Value *next =
      b.CreateAdd(b.CreateLoad(b.getInt64Ty(), k.buffer(iteration)), k.i64(1), "next");
  b.CreateStore(next, k.buffer(iteration));
  llvm::Value *again = b.CreateICmpSLT(next, tripLimit(k, control, tripCount));
  if (condition)
    again = b.CreateAnd(again, loadBool(k, *condition));
  step.finish(b.CreateSelect(again, b.getInt32(ONNXC_BRANCH_TAKEN), b.getInt32(0)));
  size_t index = ctx.plan().steps.size() - 1;
  markBranch(ctx, index, int32_t(entry + 1));
  ctx.plan().steps[entry].branchTarget = int32_t(index + 1);
}

StackLayout stackLayout(const Value *stacked, size_t axis, bool reversed) {
  StackLayout layout;
  const Shape &shape = stacked->shape();
  layout.innerBytes = Dim(int64_t(dtypeSize(stacked->dtype())));
  for (size_t d = 0; d < shape.rank(); ++d) {
    if (d < axis)
      layout.outer = layout.outer * shape[d];
    else if (d == axis)
      layout.length = shape[d];
    else
      layout.innerBytes = layout.innerBytes * shape[d];
  }
  layout.reversed = reversed;
  return layout;
}

namespace {

/// Iteration i's slice index: i, or length-1-i for a reversed direction.
llvm::Value *sliceIndex(FunctionBuilder &f, const StackLayout &layout, llvm::Value *iteration) {
  if (!layout.reversed)
    return iteration;
  IRBuilder<> &b = f.ir();
  return b.CreateSub(b.CreateSub(f.dim(layout.length), f.i64(1)), iteration);
}

} // namespace

void addSliceCopy(LoweringContext &ctx, const std::string &name, int32_t stacked, int32_t slice,
                  const StackLayout &layout, int32_t iteration, bool intoStacked) {
  // A task copies 64 runs: a slice along a middle axis is many short runs.
  constexpr int64_t RunsPerTask = 64;
  StepBuilder step(ctx, name, intoStacked ? "stack" : "unstack");
  unsigned stackedSlot = step.bufferSlot(stacked);
  unsigned sliceSlot = step.bufferSlot(slice);
  unsigned iterationSlot = step.bufferSlot(iteration);
  Dim outer = layout.outer;
  auto [begin, end] =
      step.splitEvenly([outer](FunctionBuilder &f) { return f.dim(outer); }, RunsPerTask);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  llvm::Value *index =
      sliceIndex(k, layout, b.CreateLoad(b.getInt64Ty(), k.buffer(iterationSlot), "iteration"));
  llvm::Value *length = k.dim(layout.length);
  llvm::Value *inner = k.dim(layout.innerBytes);
  k.forRange(begin, end, [&](llvm::Value *run) {
    llvm::Value *stackedOffset = b.CreateMul(b.CreateAdd(b.CreateMul(run, length), index), inner);
    llvm::Value *sliceOffset = b.CreateMul(run, inner);
    llvm::Value *inStacked =
        b.CreateInBoundsGEP(b.getInt8Ty(), k.buffer(stackedSlot), stackedOffset);
    llvm::Value *inSlice = b.CreateInBoundsGEP(b.getInt8Ty(), k.buffer(sliceSlot), sliceOffset);
    if (intoStacked)
      b.CreateMemCpy(inStacked, llvm::MaybeAlign(1), inSlice, llvm::MaybeAlign(1), inner);
    else
      b.CreateMemCpy(inSlice, llvm::MaybeAlign(1), inStacked, llvm::MaybeAlign(1), inner);
  });
  step.finish();
}

void applyWindows(LoweringContext &ctx, size_t first, size_t end,
                  const std::vector<SliceWindow> &windows, int32_t iteration) {
  llvm::Module &module = ctx.module();
  llvm::LLVMContext &llvmContext = module.getContext();
  for (size_t s = first; s < end; ++s) {
    PlanStep &step = ctx.plan().steps[s];
    std::vector<std::pair<unsigned, const SliceWindow *>> hits;
    for (size_t slot = 0; slot < step.buffers.size(); ++slot)
      for (const SliceWindow &window : windows)
        if (step.buffers[slot] == window.placeholder) {
          hits.emplace_back(unsigned(slot), &window);
          step.buffers[slot] = window.stacked;
        }
    if (hits.empty())
      continue;
    unsigned iterationSlot = unsigned(step.buffers.size());
    step.buffers.push_back(iteration);
    llvm::Function *inner = step.kernel;
    llvm::Function *wrapper =
        llvm::Function::Create(kernelFunctionType(llvmContext), llvm::GlobalValue::InternalLinkage,
                               ctx.uniqueName(inner->getName().str() + ".window"), module);
    wrapper->addFnAttr(llvm::Attribute::NoUnwind);
    wrapper->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    FunctionBuilder f(wrapper, wrapper->getArg(1), ctx.symbolIndex());
    IRBuilder<> &b = f.ir();
    // The kernel gets a copy of its pointer list with each window's slot
    // moved to iteration i's slice.
    llvm::Value *buffers = wrapper->getArg(0);
    uint64_t count = step.buffers.size();
    llvm::Value *moved =
        f.hoisted().CreateAlloca(llvm::ArrayType::get(b.getPtrTy(), count), nullptr, "buffers");
    b.CreateMemCpy(moved, llvm::Align(8), buffers, llvm::Align(8), count * sizeof(void *));
    auto pointerAt = [&](llvm::Value *list, unsigned slot) {
      return b.CreateConstInBoundsGEP1_64(b.getPtrTy(), list, slot);
    };
    llvm::Value *iterationValue = b.CreateLoad(
        b.getInt64Ty(), b.CreateLoad(b.getPtrTy(), pointerAt(buffers, iterationSlot)), "iteration");
    for (const auto &[slot, window] : hits) {
      llvm::Value *base = b.CreateLoad(b.getPtrTy(), pointerAt(buffers, slot));
      llvm::Value *offset = b.CreateMul(sliceIndex(f, window->layout, iterationValue),
                                        f.dim(window->layout.innerBytes));
      b.CreateStore(b.CreateInBoundsGEP(b.getInt8Ty(), base, offset), pointerAt(moved, slot));
    }
    std::vector<llvm::Value *> args{moved, wrapper->getArg(1), wrapper->getArg(2),
                                    wrapper->getArg(3)};
    f.finish(b.CreateCall(inner, args));
    step.kernel = wrapper;
  }
}

} // namespace onnxc::lower
