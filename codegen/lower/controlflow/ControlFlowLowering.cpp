//===- codegen/lower/controlflow/ControlFlowLowering.cpp - If in codegen --===//
//
// A run-time If (its condition known only when the model runs; constant
// ones are inlined by inline-constant-if at -O1) becomes two guarded runs of
// steps in the parent's flat step list, no sub-plan:
//
//   step k    ...                        (the parent's steps before the If)
//   step k+1  then_branch step 1   ┐ each kernel wrapped: it reads the
//   ...                            │ condition buffer (one more slot of
//   step m    then_branch step n   ┘ the step) and returns at once unless
//   step m+1  else_branch step 1   ┐ the condition is true (then_branch)
//   ...                            ┘ or false (else_branch)
//
// Each branch is lowered in a LoweringContext of its own over the same plan
// and module (SubgraphLowering.h): its inputs (the captured outer values,
// ir/Subgraph.h) take the buffers of the If's operands, and each output the
// buffer of the If result it becomes, so the branch's last kernels write the
// result in place; an output no kernel of the branch writes (a capture
// returned as is, a constant, a view) is copied into it by a guarded copy
// step. The skipped branch's steps still run their (empty) tasks, and the
// arena plans every buffer of both branches by step lifetimes as it does
// for straight-line code, so the two branches never share live bytes. A
// nested If nests the guards: its steps are wrapped by its own condition,
// then by the outer one. A Loop in a branch is guarded the same way: its
// branch steps, skipped, return 0 and so fall through, the body running
// once as empty steps.
//
// Refused with one line naming the If: branches whose results differ in
// type or shape (or have dims not known from the inputs' dims), branch ops
// without a kernel. Loop and Scan: LoopLowering.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/controlflow/LoopLowering.h"
#include "codegen/lower/controlflow/LoopSteps.h"
#include "codegen/lower/controlflow/SubgraphLowering.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/Module.h"

#include <set>

namespace onnxc::lower {

namespace {

constexpr const char *kRegions[] = {"then_branch", "else_branch"};

/// Whether `region` gives every result exactly its type. The If's shape
/// rule types the results from the branches that infer (ControlFlowRules.cpp):
/// a branch whose outputs differ from the results while the other's match
/// is one that cannot run at these shapes (an exporter's branch for other
/// input sizes, ill-typed here), and ONNX Runtime fails when it is taken.
bool outputsMatch(const Node &node, const char *region) {
  const Graph &branch = *node.subgraph(region);
  for (size_t i = 0; i < node.numResults(); ++i)
    if (branch.outputs()[i].value->type() != node.result(i)->type())
      return false;
  return true;
}

/// The result buffers are sized once, from the inputs' dims, whichever
/// branch runs: the results need known shapes and a branch giving them.
void checkIfResults(const Node &node) {
  bool someBranchMatches = outputsMatch(node, kRegions[0]) || outputsMatch(node, kRegions[1]);
  for (size_t i = 0; i < node.numResults(); ++i) {
    const Value *result = node.result(i);
    if (someBranchMatches && !hasUnknownDim(result->shape()))
      continue;
    const TensorType &thenType = node.subgraph(kRegions[0])->outputs()[i].value->type();
    const TensorType &elseType = node.subgraph(kRegions[1])->outputs()[i].value->type();
    // Name the result that stops it: one a branch gives another type than
    // the If's, or one of unknown size (not the first result, which may agree).
    if (!hasUnknownDim(result->shape()) && thenType == result->type() && elseType == result->type())
      continue;
    fail(node.describe(), ": cannot compile If: result ", i, " ('", result->name(), "') is ",
         result->type().str(), ", ", thenType.str(), " in then_branch and ", elseType.str(),
         " in else_branch; codegen needs a branch giving it one shape known from the inputs' "
         "dims",
         kReferenceFallback);
  }
}

/// The branches that will be lowered (lowerIf) must have kernels for all
/// their ops and sizes the runtime can evaluate from the bound symbols; one
/// that cannot run becomes a failing step instead.
void checkBranches(const Node &node, const std::set<std::string> &bound) {
  for (const char *region : kRegions) {
    if (!outputsMatch(node, region))
      continue;
    const Graph &branch = *node.subgraph(region);
    std::vector<Node *> order = branch.topologicalOrder();
    if (std::optional<std::string> missing = opsWithoutKernel(order))
      fail(node.describe(), ": cannot compile If: ", region, " has op ", *missing,
           ", for which codegen has no kernel", kReferenceFallback);
    checkControlFlow(order, bound);
    if (std::optional<std::string> value = unsizableValue(branch, bound))
      fail("cannot compile ", node.describe(), " (If): ", region, " computes ", *value,
           ", which does not follow from the inputs' dims");
  }
}

/// Wraps the kernel of every step from `first` on so that it runs only when
/// the bool in plan buffer `condition` is `whenTrue`; the step names say
/// which branch they belong to ("MatMul mm (then_branch of node 'If_0')").
void guardSteps(LoweringContext &ctx, const Node &node, size_t first, int32_t condition,
                bool whenTrue) {
  std::string where = whenTrue ? " (then_branch" : " (else_branch";
  where += " of " + node.describe() + ")";
  llvm::Module &module = ctx.module();
  llvm::LLVMContext &llvmContext = module.getContext();
  std::vector<PlanStep> &steps = ctx.plan().steps;
  for (size_t s = first; s < steps.size(); ++s) {
    PlanStep &step = steps[s];
    int64_t slot = int64_t(step.buffers.size());
    step.buffers.push_back(condition);
    llvm::Function *body = step.kernel;
    llvm::Function *guarded = llvm::Function::Create(
        kernelFunctionType(llvmContext), llvm::GlobalValue::InternalLinkage,
        ctx.uniqueName(body->getName().str() + (whenTrue ? ".then" : ".else")), module);
    guarded->addFnAttr(llvm::Attribute::NoUnwind);
    guarded->setUnnamedAddr(llvm::GlobalValue::UnnamedAddr::Global);
    auto *entry = llvm::BasicBlock::Create(llvmContext, "entry", guarded);
    auto *run = llvm::BasicBlock::Create(llvmContext, "run", guarded);
    auto *skip = llvm::BasicBlock::Create(llvmContext, "skip", guarded);
    llvm::IRBuilder<> b(entry);
    llvm::Value *address = b.CreateConstInBoundsGEP1_64(b.getPtrTy(), guarded->getArg(0), slot);
    llvm::Value *pointer = b.CreateLoad(b.getPtrTy(), address, "condition.buffer");
    // A bool is one byte, non-zero for true (FunctionBuilder's storage).
    llvm::Value *isTrue =
        b.CreateICmpNE(b.CreateLoad(b.getInt8Ty(), pointer, "condition"), b.getInt8(0));
    b.CreateCondBr(whenTrue ? isTrue : b.CreateNot(isTrue), run, skip);
    b.SetInsertPoint(run);
    std::vector<llvm::Value *> args;
    for (llvm::Argument &arg : guarded->args())
      args.push_back(&arg);
    b.CreateRet(b.CreateCall(body, args));
    b.SetInsertPoint(skip);
    b.CreateRet(b.getInt32(0));
    step.kernel = guarded;
    step.name += where;
  }
}

void lowerBranch(LoweringContext &ctx, const Node &node, const char *region,
                 const std::vector<int32_t> &results, int32_t condition) {
  const Graph &branch = *node.subgraph(region);
  LoweringContext inner(branch, ctx.module(), ctx.plan());
  inheritTarget(inner, ctx);
  for (size_t i = 0; i < branch.inputs().size(); ++i)
    inner.bindBuffer(branch.inputs()[i], ctx.bufferOf(node.operand(i + 1)));
  // An output computed by the branch is written straight into the result's
  // buffer; the second of two results returning one value gets a copy.
  const std::vector<GraphOutput> &outputs = branch.outputs();
  for (size_t j = 0; j < outputs.size(); ++j) {
    const Value *value = outputs[j].value;
    if (!value->isGraphInput() && !value->isConstant() && !inner.hasBuffer(value))
      inner.bindBuffer(value, results[j]);
  }
  size_t first = ctx.plan().steps.size();
  lowerSubgraphNodes(inner, branch);
  for (size_t j = 0; j < outputs.size(); ++j) {
    int32_t written = inner.bufferOf(outputs[j].value);
    if (written != results[j])
      inner.copyBuffer(written, results[j], byteSize(node.result(j)),
                       "copy " + node.result(j)->name());
  }
  guardSteps(ctx, node, first, condition, region == kRegions[0]);
}

/// A branch that cannot run at the compiled shapes: one step that fails
/// the run when the branch is taken.
void lowerFailingBranch(LoweringContext &ctx, const Node &node, const char *region,
                        int32_t condition) {
  size_t first = ctx.plan().steps.size();
  StepBuilder step = ctx.beginStep(node, "if_unrunnable");
  step.setFailure(std::string(region) + " of " + node.describe() +
                  " was taken, and it cannot run at these input shapes (its types do not " +
                  "infer; onnxruntime fails there too)");
  KernelBuilder &k = step.kernel();
  k.failIf(k.ir().getTrue());
  step.finish();
  guardSteps(ctx, node, first, condition, region == kRegions[0]);
}

void lowerIf(LoweringContext &ctx, const Node &node) {
  int32_t condition = ctx.bufferOf(node.operand(0));
  if (node.operand(0)->dtype() != DType::Bool)
    ctx.unsupported(node, "the condition is not bool");
  addOneElementCheck(ctx, node, node.operand(0), "condition");
  std::vector<int32_t> results;
  for (const Value *result : node.results())
    results.push_back(ctx.bufferOf(result));
  for (const char *region : kRegions)
    if (outputsMatch(node, region))
      lowerBranch(ctx, node, region, results, condition);
    else
      lowerFailingBranch(ctx, node, region, condition);
}

} // namespace

void checkControlFlow(const std::vector<Node *> &order, const std::set<std::string> &bound) {
  for (const Node *node : order) {
    if (node->kind() == OpKind::If) {
      checkIfResults(*node);
      checkBranches(*node, bound);
    } else if (isControlFlow(node->kind())) {
      checkLoop(*node, bound);
    }
  }
}

void registerControlFlowLowerings(LoweringTable &table) {
  table.add(OpKind::If, lowerIf);
  table.add(OpKind::Loop, lowerLoop);
  table.add(OpKind::Scan, lowerScan);
}

} // namespace onnxc::lower
