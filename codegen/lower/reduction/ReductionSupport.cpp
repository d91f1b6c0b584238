//===- codegen/lower/reduction/ReductionSupport.cpp - Task splits, axes, dims -===//

#include "codegen/lower/reduction/ReductionSupport.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

// Inside onnxc, a plain `Value` would name onnxc::Value.
using llvm::Value;

std::pair<Value *, Value *> splitByWork(StepBuilder &step, const SymbolicValue &items,
                                        const SymbolicValue &itemCost) {
  // Items per task: kTaskWork / cost, at least one (a cost of 0 counts as 1).
  auto itemsPerTask = [&](FunctionBuilder &f) {
    IRBuilder<> &b = f.ir();
    Value *cost = f.max(itemCost(f), f.i64(1));
    return f.max(b.CreateSDiv(f.i64(kTaskWork), cost), f.i64(1));
  };
  step.setTaskCount([&](FunctionBuilder &f) { return f.ceilDiv(items(f), itemsPerTask(f)); });
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *perTask = itemsPerTask(k);
  Value *begin = b.CreateMul(k.taskBegin(), perTask, "items.begin");
  Value *end = k.min(b.CreateMul(k.taskEnd(), perTask), items(k));
  return {begin, end};
}

std::pair<Value *, Value *> splitByWork(StepBuilder &step, const Dim &items, const Dim &itemCost) {
  return splitByWork(
      step, [&](FunctionBuilder &f) { return f.dim(items); },
      [&](FunctionBuilder &f) { return f.dim(itemCost); });
}

Dim dimProduct(const Shape &shape, size_t begin, size_t end) {
  Dim product(1);
  for (size_t i = begin; i < end; ++i)
    product = product * shape[i];
  return product;
}

int64_t normalizedAxis(const LoweringContext &ctx, const Node &node, int64_t axis, int64_t rank) {
  int64_t normalized = axis < 0 ? axis + rank : axis;
  if (normalized < 0 || normalized >= rank)
    ctx.unsupported(node, "axis " + std::to_string(axis) + " is out of range for rank " +
                              std::to_string(rank));
  return normalized;
}

bool isResultNeeded(const LoweringContext &ctx, const onnxc::Value *result) {
  return result && (result->hasUses() || ctx.graph().isOutput(result));
}

} // namespace onnxc::lower
