//===- codegen/lower/ShapeAssumptions.cpp - Run-time checks of unproven dims ===//
#include "codegen/lower/ShapeAssumptions.h"

#include "llvm/IR/IRBuilder.h"

namespace onnxc::lower {

namespace {

bool proven(const DimAssumption &a) {
  return a.actual.provablyEqual(a.expected) || (a.orOne && a.actual.constant() == 1);
}

} // namespace

void checkDimAssumptions(LoweringContext &ctx, const Node &node,
                         const std::vector<DimAssumption> &assumptions, const std::string &message) {
  std::vector<const DimAssumption *> open;
  for (const DimAssumption &a : assumptions)
    if (!proven(a))
      open.push_back(&a);
  if (open.empty())
    return;
  StepBuilder step = ctx.beginStep(node, "check_shapes");
  step.setFailure(message);
  KernelBuilder &k = step.kernel();
  llvm::IRBuilder<> &b = k.ir();
  llvm::Value *broken = b.getFalse();
  for (const DimAssumption *a : open) {
    llvm::Value *actual = k.dim(a->actual);
    llvm::Value *wrong = b.CreateICmpNE(actual, k.dim(a->expected));
    if (a->orOne)
      wrong = b.CreateAnd(wrong, b.CreateICmpNE(actual, k.i64(1)));
    broken = b.CreateOr(broken, wrong);
  }
  k.failIf(broken);
  step.finish();
}

} // namespace onnxc::lower
