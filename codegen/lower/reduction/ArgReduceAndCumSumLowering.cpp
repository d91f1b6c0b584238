//===- codegen/lower/reduction/ArgReduceAndCumSumLowering.cpp - ArgMax/Min, CumSum/Prod -===//
//
// Both walk lines along one axis: the input seen as [outer, size, inner],
// a line is the `size` elements at one (outer, inner) position, and tasks
// are ranges of lines. Semantics are those of ir/eval/ReductionKernels.cpp:
// ArgMax/ArgMin let the first NaN win (the last with select_last_index);
// CumSum and CumProd run their float sums and products in double and their
// integer ones in the dtype's own width (the evaluator's 64-bit ones,
// truncated, are the same bits).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/reduction/ReductionSupport.h"

#include "llvm/IR/Constants.h"

#include <array>
#include <optional>
#include <tuple>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// Walks the line starting at element `base` with stride `inner`.
Value *lineElement(IRBuilder<> &b, Value *base, Value *j, Value *inner) {
  return b.CreateAdd(base, b.CreateMul(j, inner));
}

/// Element index of the first element of line `line` of [outer, size, inner].
Value *lineStart(IRBuilder<> &b, Value *line, Value *size, Value *inner) {
  Value *o = b.CreateUDiv(line, inner);
  Value *i = b.CreateURem(line, inner);
  return b.CreateAdd(b.CreateMul(o, b.CreateMul(size, inner)), i);
}

template <bool IsMax> void lowerArgReduce(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0);
  DType dtype = x->dtype();
  if (!isFloat(dtype) && !isInteger(dtype))
    ctx.unsupported(node, "input of type " + std::string(dtypeName(dtype)));
  const Shape &shape = x->shape();
  int64_t rank = int64_t(shape.rank());
  if (rank == 0)
    ctx.unsupported(node, "a rank-0 input");
  int64_t axis = normalizedAxis(ctx, node, node.getInt("axis", 0), rank);
  bool selectLast = node.getInt("select_last_index", 0) != 0;
  Dim outer = dimProduct(shape, 0, size_t(axis));
  Dim size = shape[size_t(axis)];
  Dim inner = dimProduct(shape, size_t(axis) + 1, size_t(rank));
  if (isConstantDim(size, 0))
    ctx.unsupported(node, "an empty reduction axis");

  StepBuilder step = ctx.beginStep(node, IsMax ? "argmax" : "argmin");
  unsigned in = step.input(x);
  unsigned out = step.output(node.result(0));
  auto [begin, end] = splitByWork(step, outer * inner, size);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *sizeValue = k.dim(size);
  Value *innerValue = k.dim(inner);
  Value *input = k.buffer(in);
  bool floating = isFloat(dtype);
  Type *type = k.computeType(dtype);
  // The first element always wins (j == 0), so the initial value only
  // matters for an empty axis, where the index stays 0.
  Value *initial = floating ? ConstantFP::get(type, 0.0) : ConstantInt::get(type, 0);
  auto isNaN = [&](Value *v) { return b.CreateFCmpUNO(v, v); };

  k.forRange(begin, end, [&](Value *line) {
    Value *base = lineStart(b, line, sizeValue, innerValue);
    std::vector<Value *> found = k.forRangeCarried(
        k.i64(0), sizeValue, {initial, k.i64(0)},
        [&](Value *j, ArrayRef<Value *> carried) -> std::vector<Value *> {
          Value *best = carried[0];
          Value *v = k.loadElement(dtype, input, lineElement(b, base, j, innerValue));
          Value *better, *same;
          if (floating) {
            Value *strictly = IsMax ? b.CreateFCmpOGT(v, best) : b.CreateFCmpOLT(v, best);
            better = b.CreateAnd(b.CreateNot(isNaN(best)), b.CreateOr(isNaN(v), strictly));
            same = b.CreateOr(b.CreateFCmpOEQ(v, best), b.CreateAnd(isNaN(v), isNaN(best)));
          } else {
            bool isSigned = isSignedInt(dtype);
            better = IsMax ? (isSigned ? b.CreateICmpSGT(v, best) : b.CreateICmpUGT(v, best))
                           : (isSigned ? b.CreateICmpSLT(v, best) : b.CreateICmpULT(v, best));
            same = b.CreateICmpEQ(v, best);
          }
          Value *take = b.CreateOr(b.CreateICmpEQ(j, k.i64(0)), better);
          if (selectLast)
            take = b.CreateOr(take, same);
          return {b.CreateSelect(take, v, best), b.CreateSelect(take, j, carried[1])};
        },
        1, "j");
    k.storeElement(DType::I64, found[1], k.buffer(out), line);
  });
  step.finish();
}

/// CumSum's axis: a constant, or read by the kernel when only known at run
/// time (the ONNX tests feed it as an input).
std::optional<int64_t> constantCumSumAxis(const LoweringContext &ctx, const Node &node,
                                          int64_t rank) {
  const onnxc::Value *axis = node.operand(1);
  if (!axis || !isInteger(axis->dtype()))
    ctx.unsupported(node, "axis must be an integer tensor");
  if (!isConstantDim(axis->shape().numElements(), 1) || axis->shape().rank() > 1)
    ctx.unsupported(node, "axis must hold exactly one value");
  const Tensor *contents = ctx.constantValue(axis);
  if (!contents)
    return std::nullopt;
  return normalizedAxis(ctx, node, contents->toInt64Vector()[0], rank);
}

/// The [outer, size, inner] extents around an axis read at run time (an
/// axis outside [-rank, rank) fails the run, as in the reference).
std::array<Value *, 3> runtimeAxisSplit(KernelBuilder &k, const Shape &shape, unsigned axisSlot,
                                        DType axisType) {
  IRBuilder<> &b = k.ir();
  int64_t rank = int64_t(shape.rank());
  Value *axis =
      k.convert(k.loadElement(axisType, k.buffer(axisSlot), k.i64(0)), axisType, DType::I64);
  axis = b.CreateSelect(b.CreateICmpSLT(axis, k.i64(0)), b.CreateAdd(axis, k.i64(rank)), axis);
  k.failIf(b.CreateICmpUGE(axis, k.i64(rank)));
  Value *outer = k.i64(1), *size = k.i64(1), *inner = k.i64(1);
  for (int64_t i = 0; i < rank; ++i) {
    Value *d = k.dim(shape[size_t(i)]);
    Value *position = k.i64(i);
    outer = b.CreateMul(outer, b.CreateSelect(b.CreateICmpSLT(position, axis), d, k.i64(1)));
    size = b.CreateMul(size, b.CreateSelect(b.CreateICmpEQ(position, axis), d, k.i64(1)));
    inner = b.CreateMul(inner, b.CreateSelect(b.CreateICmpSGT(position, axis), d, k.i64(1)));
  }
  return {outer, size, inner};
}

} // namespace

void lowerArgMax(LoweringContext &ctx, const Node &node) { lowerArgReduce<true>(ctx, node); }
void lowerArgMin(LoweringContext &ctx, const Node &node) { lowerArgReduce<false>(ctx, node); }

void lowerCumulative(LoweringContext &ctx, const Node &node) {
  bool product = node.kind() == OpKind::CumProd;
  const onnxc::Value *x = node.operand(0);
  DType dtype = x->dtype();
  if (!isFloat(dtype) && !isInteger(dtype))
    ctx.unsupported(node, "input of type " + std::string(dtypeName(dtype)));
  const Shape &shape = x->shape();
  int64_t rank = int64_t(shape.rank());
  if (rank == 0)
    ctx.unsupported(node, "a rank-0 input");
  std::optional<int64_t> axis = constantCumSumAxis(ctx, node, rank);
  bool exclusive = node.getInt("exclusive", 0) != 0;
  bool reverse = node.getInt("reverse", 0) != 0;

  StepBuilder step = ctx.beginStep(node, product ? "cumprod" : "cumsum");
  unsigned in = step.input(x);
  unsigned out = step.output(node.result(0));
  std::optional<unsigned> axisSlot;
  if (!axis) {
    axisSlot = step.input(node.operand(1));
    step.setFailure("the axis in '" + node.operand(1)->name() + "' is out of range [-" +
                    std::to_string(rank) + ", " + std::to_string(rank) + ") for '" + x->name() +
                    "'");
  }
  Value *begin, *end, *size, *inner;
  if (axis) {
    Dim outerDim = dimProduct(shape, 0, size_t(*axis));
    Dim innerDim = dimProduct(shape, size_t(*axis) + 1, size_t(rank));
    std::tie(begin, end) = splitByWork(step, outerDim * innerDim, shape[size_t(*axis)]);
    KernelBuilder &k = step.kernel();
    size = k.dim(shape[size_t(*axis)]);
    inner = k.dim(innerDim);
  } else {
    // The lines are only known in the kernel: one task does them all.
    KernelBuilder &k = step.kernel();
    auto [outerValue, sizeValue, innerValue] =
        runtimeAxisSplit(k, shape, *axisSlot, node.operand(1)->dtype());
    begin = k.i64(0);
    end = k.ir().CreateMul(outerValue, innerValue);
    size = sizeValue;
    inner = innerValue;
  }

  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  DType accType = isFloat(dtype) ? DType::F64 : dtype;
  Value *input = k.buffer(in);
  Value *output = k.buffer(out);
  k.forRange(begin, end, [&](Value *line) {
    Value *base = lineStart(b, line, size, inner);
    k.forRangeCarried(
        k.i64(0), size, {k.constant(accType, product ? 1 : 0)},
        [&](Value *s, ArrayRef<Value *> carried) -> std::vector<Value *> {
          Value *j = reverse ? b.CreateSub(b.CreateSub(size, k.i64(1)), s) : s;
          Value *at = lineElement(b, base, j, inner);
          Value *v = k.convert(k.loadElement(dtype, input, at), dtype, accType);
          Value *running = carried[0];
          Value *next = product
                            ? (isFloat(dtype) ? b.CreateFMul(running, v) : b.CreateMul(running, v))
                            : (isFloat(dtype) ? b.CreateFAdd(running, v) : b.CreateAdd(running, v));
          k.storeElement(dtype, k.convert(exclusive ? running : next, accType, dtype), output, at);
          return {next};
        },
        1, "s");
  });
  step.finish();
}

} // namespace onnxc::lower
