//===- codegen/lower/movement/SliceLowering.cpp - Slice as a strided copy -===//
//
// A slice reads its operand from a base offset with each sliced axis's
// stride multiplied by its step, so it is a StridedCopy (negative steps
// included); unsliced trailing axes still merge into memcpy rows. The
// result's shape is already inferred (possibly symbolic); the bounds, constant
// or read from their buffers at run time, are resolved in the kernel by the
// ONNX clamping rules, giving the base and checking the inferred extents.
// Axes and steps decide the strides and must be constants.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"

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

/// A starts or ends operand: constant values, or a buffer read at run time.
class BoundOperand {
public:
  BoundOperand(const LoweringContext &ctx, const Node &node, size_t i, const char *what)
      : value_(node.operand(i)), constant_(ctx.constantValue(value_)) {
    if (!isInteger(value_->dtype()))
      ctx.unsupported(node, std::string("slice ") + what + " must be an integer tensor");
    if (constant_)
      values_ = constant_->toInt64Vector();
    count_ = constant_ ? values_.size() : staticCount(ctx, node, value_, what);
  }

  size_t count() const { return count_; }
  void declare(StepBuilder &step) {
    if (!constant_)
      slot_ = step.input(value_);
  }
  llvm::Value *element(KernelBuilder &k, size_t i) const {
    return constant_ ? k.i64(values_[i])
                     : loadIndex(k, value_->dtype(), k.buffer(slot_), int64_t(i));
  }

private:
  const Value *value_;
  const Tensor *constant_;
  std::vector<int64_t> values_;
  size_t count_ = 0;
  unsigned slot_ = 0;
};

/// resolveSliceBounds in IR: the clamped start and the length of slice
/// [start, end) by `step` of an axis of length `dim`.
std::pair<llvm::Value *, llvm::Value *> resolveBounds(FunctionBuilder &f, llvm::Value *start,
                                                      llvm::Value *end, llvm::Value *dim,
                                                      int64_t step) {
  IRBuilder<> &b = f.ir();
  llvm::Value *zero = f.i64(0);
  auto fromBack = [&](llvm::Value *x) {
    return b.CreateSelect(b.CreateICmpSLT(x, zero), b.CreateAdd(x, dim), x);
  };
  auto clamp = [&](llvm::Value *x, llvm::Value *low, llvm::Value *high) {
    return f.max(f.min(x, high), low);
  };
  start = fromBack(start);
  end = fromBack(end);
  llvm::Value *length;
  if (step > 0) {
    start = clamp(start, zero, dim);
    end = clamp(end, zero, dim);
    llvm::Value *span = b.CreateSub(end, start);
    length = b.CreateSelect(
        b.CreateICmpSGT(span, zero),
        b.CreateAdd(b.CreateSDiv(b.CreateSub(span, f.i64(1)), f.i64(step)), f.i64(1)), zero);
  } else {
    llvm::Value *last = b.CreateSub(dim, f.i64(1));
    start = clamp(start, zero, last);
    end = clamp(end, f.i64(-1), last);
    llvm::Value *span = b.CreateSub(start, end);
    llvm::Value *stride = f.i64(step == INT64_MIN ? INT64_MAX : -step);
    length = b.CreateSelect(
        b.CreateICmpSGT(span, zero),
        b.CreateAdd(b.CreateSDiv(b.CreateSub(span, f.i64(1)), stride), f.i64(1)), zero);
  }
  length = b.CreateSelect(b.CreateICmpSGT(dim, zero), length, zero);
  return {start, length};
}

} // namespace

void lowerSlice(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data || !node.operand(1) || !node.operand(2))
    ctx.unsupported(node, "missing data, starts or ends operand");
  const Value *result = node.result(0);
  const Shape &in = data->shape(), &out = result->shape();
  int64_t rank = int64_t(in.rank());
  BoundOperand starts(ctx, node, 1, "starts"), ends(ctx, node, 2, "ends");
  size_t count = starts.count();
  std::vector<int64_t> defaultAxes;
  for (size_t i = 0; i < count; ++i)
    defaultAxes.push_back(int64_t(i));
  std::vector<int64_t> axes = constantIndices(ctx, node, 3, "axes", defaultAxes);
  std::vector<int64_t> steps =
      constantIndices(ctx, node, 4, "steps", std::vector<int64_t>(count, 1));
  if (ends.count() != count || axes.size() != count || steps.size() != count ||
      out.rank() != in.rank())
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
  starts.declare(step);
  ends.declare(step);
  unsigned dst = step.output(result);
  step.setFailure("the slice bounds select other extents than the inferred " + out.str());
  llvm::Value *tasks = setCopyTaskCount(step, out.numElements(), copy.elementSize());
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  // The result's extents were inferred taking run-time bounds to be in
  // range; reading by them when they are not could leave the operand.
  llvm::Value *base = k.i64(0), *inconsistent = b.getFalse();
  for (size_t i = 0; i < count; ++i) {
    size_t axis = size_t(axes[i]);
    auto [start, length] =
        resolveBounds(k, starts.element(k, i), ends.element(k, i), k.dim(in[axis]), steps[i]);
    base = b.CreateAdd(base, b.CreateMul(start, k.dim(inStrides[axis])));
    inconsistent = b.CreateOr(inconsistent, b.CreateICmpNE(length, k.dim(out[axis])));
  }
  k.failIf(inconsistent);
  copy.emit(k, elementPointer(k, k.buffer(src), base, copy.elementSize()), k.buffer(dst), tasks);
  step.finish();
}

} // namespace onnxc::lower
