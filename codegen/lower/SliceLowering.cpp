//===- codegen/lower/SliceLowering.cpp - Slice as a strided copy ----------===//
//
// A slice reads its operand from a base offset with each sliced axis's
// stride multiplied by its step, so it is a StridedCopy (negative steps
// included); unsliced trailing axes still merge into memcpy rows. The
// result's shape is already inferred (possibly symbolic), so only the starts
// are needed: constant ones fold, run-time ones are read from their buffer
// and clamped in the kernel by the ONNX rules. Axes and steps decide the
// strides and must be constants.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/MovementLoweringInternal.h"
#include "codegen/lower/StridedCopy.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/IRBuilder.h"

using namespace llvm;

namespace onnxc::lower {

namespace {

/// The values of an optional operand that must be a constant, or `fallback`.
std::vector<int64_t> constantIndices(const LoweringContext &ctx, const Node &node, size_t i,
                                     const char *what, std::vector<int64_t> fallback) {
  const Value *value = node.operand(i);
  if (!value)
    return fallback;
  const Tensor *tensor = ctx.constantValue(value);
  if (!tensor || !isInteger(tensor->dtype()))
    ctx.unsupported(node, std::string("slice ") + what + " must be an integer constant");
  return tensor->toInt64Vector();
}

/// The number of elements of a rank-0 or rank-1 operand of static length.
size_t staticCount(const LoweringContext &ctx, const Node &node, const Value *value,
                   const char *what) {
  const Shape &shape = value->shape();
  if (shape.isRanked() && shape.rank() == 0)
    return 1;
  if (shape.isRanked() && shape.rank() == 1)
    if (std::optional<int64_t> length = shape[0].constant())
      return size_t(*length);
  ctx.unsupported(node, std::string("slice ") + what + " must be a 1-D tensor of static length");
}

/// ONNX start clamping on an axis of length `dim` (ends do not matter: the
/// result's extent is known).
llvm::Value *clampStart(FunctionBuilder &f, llvm::Value *start, llvm::Value *dim, int64_t step) {
  IRBuilder<> &b = f.ir();
  llvm::Value *fromBack = b.CreateAdd(start, dim);
  start = b.CreateSelect(b.CreateICmpSLT(start, f.i64(0)), fromBack, start);
  llvm::Value *upper = step > 0 ? dim : b.CreateSub(dim, f.i64(1));
  return f.max(f.min(start, upper), f.i64(0));
}

} // namespace

void lowerSlice(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0), *startsValue = node.operand(1);
  if (!data || !startsValue || !node.operand(2))
    ctx.unsupported(node, "missing data, starts or ends operand");
  if (!isInteger(startsValue->dtype()))
    ctx.unsupported(node, "slice starts must be an integer tensor");
  const Value *result = node.result(0);
  const Shape &in = data->shape(), &out = result->shape();
  int64_t rank = int64_t(in.rank());
  const Tensor *constantStarts = ctx.constantValue(startsValue);
  std::vector<int64_t> starts;
  if (constantStarts)
    starts = constantStarts->toInt64Vector();
  size_t count = constantStarts ? starts.size() : staticCount(ctx, node, startsValue, "starts");
  std::vector<int64_t> defaultAxes;
  for (size_t i = 0; i < count; ++i)
    defaultAxes.push_back(int64_t(i));
  std::vector<int64_t> axes = constantIndices(ctx, node, 3, "axes", defaultAxes);
  std::vector<int64_t> steps = constantIndices(ctx, node, 4, "steps", std::vector<int64_t>(count, 1));
  if (axes.size() != count || steps.size() != count || out.rank() != in.rank())
    ctx.unsupported(node, "starts, ends, axes and steps have different lengths");

  std::vector<Dim> inStrides = contiguousStrides(in), outStrides = contiguousStrides(out);
  std::vector<Dim> srcStrides = inStrides;
  std::vector<bool> sliced(in.rank(), false);
  for (size_t i = 0; i < count; ++i) {
    size_t axis = size_t(normalizeAxisOrFail(node, axes[i], rank));
    if (sliced[axis])
      ctx.unsupported(node, "axis " + std::to_string(axes[i]) + " is sliced twice");
    if (steps[i] == 0)
      ctx.unsupported(node, "slice step is 0");
    sliced[axis] = true;
    axes[i] = int64_t(axis);
    // A step only matters when two or more elements are taken; a huge one
    // times the stride could overflow.
    std::optional<int64_t> extent = out[axis].constant();
    if (!extent || *extent > 1)
      srcStrides[axis] = inStrides[axis] * Dim(steps[i]);
  }
  StridedCopy copy(dtypeSize(data->dtype()));
  for (size_t d = 0; d < in.rank(); ++d)
    copy.addAxis({out[d], srcStrides[d], outStrides[d]});
  copy.simplify();

  StepBuilder step = ctx.beginStep(node, "slice");
  unsigned src = step.input(data);
  unsigned startSlot = constantStarts ? 0 : step.input(startsValue);
  unsigned dst = step.output(result);
  llvm::Value *tasks = setCopyTaskCount(step, out.numElements(), copy.elementSize());
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  llvm::Value *base = k.i64(0);
  for (size_t i = 0; i < count; ++i) {
    size_t axis = size_t(axes[i]);
    llvm::Value *start = constantStarts
                             ? k.i64(starts[i])
                             : loadIndex(k, startsValue->dtype(), k.buffer(startSlot), int64_t(i));
    start = clampStart(k, start, k.dim(in[axis]), steps[i]);
    base = b.CreateAdd(base, b.CreateMul(start, k.dim(inStrides[axis])));
  }
  copy.emit(k, elementPointer(k, k.buffer(src), base, copy.elementSize()), k.buffer(dst), tasks);
  step.finish();
}

} // namespace onnxc::lower
