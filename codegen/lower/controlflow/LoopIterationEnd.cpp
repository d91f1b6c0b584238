//===- codegen/lower/controlflow/LoopIterationEnd.cpp - Where a body's outputs go -===//

#include "codegen/lower/controlflow/LoopIterationEnd.h"

#include "codegen/lower/controlflow/SubgraphLowering.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <map>

namespace onnxc::lower {

namespace {

/// The first and last step of [first, end) that name `buffer` (-1: none).
/// Step order is run order here even across a loop nested in the body: a
/// buffer of this body named inside the nested loop is also named by that
/// loop's entry and back-edge (keepAliveAcrossIterations), so its first
/// naming comes no later, and its last no sooner, than any run of the
/// nested loop's steps.
std::pair<int64_t, int64_t> namingSteps(const ModelPlan &plan, int32_t buffer, size_t first,
                                        size_t end) {
  int64_t firstNaming = -1, lastNaming = -1;
  for (size_t s = first; s < end; ++s)
    for (int32_t b : plan.steps[s].buffers)
      if (b == buffer) {
        if (firstNaming < 0)
          firstNaming = int64_t(s);
        lastNaming = int64_t(s);
      }
  return {firstNaming, lastNaming};
}

/// Whether step `s` only copies buffer `from` whole into buffer `to` (the
/// first step of a ScatterND, a view returned as an output).
bool isWholeCopy(const ModelPlan &plan, int64_t s, int32_t from, int32_t to) {
  const PlanStep &step = plan.steps[size_t(s)];
  return step.isCopy && step.buffers.size() == 2 && step.buffers[0] == from &&
         step.buffers[1] == to;
}

/// Carried outputs computed straight into their state buffer: a temp T of
/// the body whose first write comes after the last read of the state's old
/// value (no other output returns that old value, which the end of the
/// iteration would then read), or whose first write is a copy of the old
/// value that is also its last read (a ScatterND updating a carried tensor:
/// the copy is then elided, `elided`). Returns T -> state.
std::map<int32_t, int32_t> chooseInPlace(const ModelPlan &plan,
                                         const std::vector<BodyOutput> &outputs,
                                         const std::vector<int32_t> &sources,
                                         const std::set<int32_t> &outputTemps, size_t bodyFirst,
                                         size_t bodyEnd, std::vector<size_t> &elided) {
  std::map<int32_t, int32_t> renamed;
  for (size_t j = 0; j < outputs.size(); ++j) {
    int32_t temp = sources[j], state = outputs[j].state;
    if (state < 0 || !outputTemps.count(temp) || renamed.count(temp))
      continue;
    bool oldValueReturned = false;
    for (size_t other = 0; other < outputs.size(); ++other)
      oldValueReturned = oldValueReturned || (other != j && sources[other] == state);
    if (oldValueReturned)
      continue;
    int64_t lastRead = namingSteps(plan, state, bodyFirst, bodyEnd).second;
    int64_t firstWrite = namingSteps(plan, temp, bodyFirst, bodyEnd).first;
    if (firstWrite < 0)
      continue;
    if (lastRead == firstWrite && isWholeCopy(plan, firstWrite, state, temp))
      elided.push_back(size_t(firstWrite));
    else if (lastRead >= firstWrite)
      continue;
    renamed.emplace(temp, state);
  }
  return renamed;
}

/// Makes step `s` (a copy of a buffer onto itself after renaming) do
/// nothing: no buffers, a kernel that returns at once.
void elideStep(LoweringContext &ctx, size_t s) {
  PlanStep &step = ctx.plan().steps[s];
  llvm::Module &module = ctx.module();
  llvm::Function *noop = llvm::Function::Create(kernelFunctionType(module.getContext()),
                                                llvm::GlobalValue::InternalLinkage,
                                                ctx.uniqueName("elided_copy"), module);
  noop->addFnAttr(llvm::Attribute::NoUnwind);
  llvm::IRBuilder<> b(llvm::BasicBlock::Create(module.getContext(), "entry", noop));
  b.CreateRet(b.getInt32(0));
  if (step.taskCount)
    step.taskCount->eraseFromParent();
  step.taskCount = nullptr;
  step.kernel->eraseFromParent();
  step.kernel = noop;
  step.buffers.clear();
  step.isCopy = false;
  step.name += " (elided: updated in place)";
}

void renameBuffers(ModelPlan &plan, const std::map<int32_t, int32_t> &renamed, size_t first,
                   size_t end) {
  for (size_t s = first; s < end; ++s)
    for (int32_t &b : plan.steps[s].buffers)
      if (auto it = renamed.find(b); it != renamed.end())
        b = it->second;
  // Nothing names the temps any more; they need no arena bytes.
  for (const auto &[temp, state] : renamed)
    plan.buffers[size_t(temp)].sizeBytes = Dim(0);
}

/// Copies the carried outputs that are not yet in their state buffer. A
/// source that is another copy's target (two values trading places) is
/// first copied aside, so that no copy reads a state already overwritten.
void copyCarried(LoweringContext &ctx, const std::vector<BodyOutput> &outputs,
                 const std::vector<int32_t> &sources) {
  std::set<int32_t> targets;
  std::vector<size_t> pending;
  for (size_t j = 0; j < outputs.size(); ++j)
    if (outputs[j].state >= 0 && sources[j] != outputs[j].state) {
      pending.push_back(j);
      targets.insert(outputs[j].state);
    }
  std::map<size_t, int32_t> aside;
  for (size_t j : pending)
    if (targets.count(sources[j])) {
      PlanBuffer temporary;
      temporary.sizeBytes = byteSize(outputs[j].value);
      aside[j] = ctx.addBuffer(std::move(temporary));
      ctx.copyBuffer(sources[j], aside[j], byteSize(outputs[j].value), outputs[j].what + " aside");
    }
  for (size_t j : pending)
    if (!aside.count(j))
      ctx.copyBuffer(sources[j], outputs[j].state, byteSize(outputs[j].value), outputs[j].what);
  for (const auto &[j, temporary] : aside)
    ctx.copyBuffer(temporary, outputs[j].state, byteSize(outputs[j].value), outputs[j].what);
}

} // namespace

std::vector<SliceWindow> finishIteration(LoweringContext &ctx, LoweringContext &inner,
                                         const std::vector<BodyOutput> &outputs,
                                         const std::set<int32_t> &outputTemps, size_t bodyFirst,
                                         int32_t iteration) {
  ModelPlan &plan = ctx.plan();
  size_t bodyEnd = plan.steps.size();
  std::vector<int32_t> sources;
  for (const BodyOutput &output : outputs)
    sources.push_back(output.state < 0 && output.stacked < 0 ? -1 : inner.bufferOf(output.value));

  std::vector<size_t> elided;
  std::map<int32_t, int32_t> renamed =
      chooseInPlace(plan, outputs, sources, outputTemps, bodyFirst, bodyEnd, elided);
  renameBuffers(plan, renamed, bodyFirst, bodyEnd);
  for (size_t s : elided)
    elideStep(ctx, s);

  // Scan outputs: a row the body computes into a temp of its own is
  // computed into the stacked result instead, when the row is contiguous.
  std::vector<SliceWindow> windows;
  std::set<int32_t> windowed;
  std::vector<bool> done(outputs.size(), false);
  for (size_t j = 0; j < outputs.size(); ++j) {
    const BodyOutput &output = outputs[j];
    int32_t temp = sources[j];
    if (output.stacked < 0 || !output.layout.contiguous() || !outputTemps.count(temp) ||
        renamed.count(temp) || windowed.count(temp))
      continue;
    windows.push_back({temp, output.stacked, output.layout});
    windowed.insert(temp);
    done[j] = true;
  }
  std::vector<int32_t> current = sources;
  for (int32_t &source : current)
    if (auto it = renamed.find(source); it != renamed.end())
      source = it->second;
  // The other rows are copied first, while every state still holds what
  // the body left in it.
  for (size_t j = 0; j < outputs.size(); ++j)
    if (outputs[j].stacked >= 0 && !done[j])
      addSliceCopy(ctx, outputs[j].what, outputs[j].stacked, current[j], outputs[j].layout,
                   iteration, /*intoStacked=*/true);
  copyCarried(ctx, outputs, current);
  return windows;
}

void keepAliveAcrossIterations(LoweringContext &ctx, size_t entry, size_t backEdge,
                               int32_t bodyBuffersStart, const std::set<int32_t> &iterationLocal) {
  ModelPlan &plan = ctx.plan();
  std::set<int32_t> persistent;
  for (size_t s = entry + 1; s < backEdge; ++s)
    for (int32_t b : plan.steps[s].buffers)
      if (b < bodyBuffersStart && !iterationLocal.count(b) &&
          plan.buffers[size_t(b)].kind == BufferKind::Intermediate)
        persistent.insert(b);
  // The entry and the back-edge name them: their lifetimes (first to last
  // step naming them) then span every iteration.
  for (int32_t b : persistent) {
    plan.steps[entry].buffers.push_back(b);
    plan.steps[backEdge].buffers.push_back(b);
  }
}

} // namespace onnxc::lower
