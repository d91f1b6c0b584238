//===- codegen/lower/movement/MovementLowering.cpp - Views, Concat, Split, Expand, Tile -===//
//
// Ops that only change the shape (Reshape, Squeeze, Unsqueeze, Flatten,
// Identity, inference Dropout) are views, and so is BitCast (the same
// bytes as another type): their result aliases the operand's buffer and
// costs no step. Concat, Split, Expand and Tile are
// strided copies (StridedCopy.h) whose strides make contiguous blocks
// merge into memcpy rows.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/attention/AttentionLoweringInternal.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/IRBuilder.h"

using namespace llvm;

namespace onnxc::lower {

bool isNeeded(const LoweringContext &context, const Value *value) {
  return value && (value->hasUses() || context.graph().isOutput(value));
}

namespace {

void lowerView(LoweringContext &ctx, const Node &node) {
  if (!node.operand(0))
    ctx.unsupported(node, "missing data operand");
  ctx.alias(node.result(0), node.operand(0));
}

/// BitCast reads the same bytes as another type of one size: a view too.
void lowerBitCast(LoweringContext &ctx, const Node &node) {
  const Value *x = node.operand(0);
  if (!x || dtypeSize(x->dtype()) != dtypeSize(node.result(0)->dtype()) || isFourBit(x->dtype()) ||
      isFourBit(node.result(0)->dtype()))
    ctx.unsupported(node, "the two types must be of one size in bytes");
  ctx.alias(node.result(0), x);
}

/// The scalar value of a constant operand, or nullopt when it is absent.
std::optional<double> constantScalar(const LoweringContext &ctx, const Node &node, size_t i,
                                     const char *what) {
  const Value *value = node.operand(i);
  if (!value)
    return std::nullopt;
  const Tensor *tensor = ctx.constantValue(value);
  if (!tensor || !tensor->hasData())
    ctx.unsupported(node, std::string(what) + " must be a constant");
  return tensor->numElements() == 1 ? std::optional(tensor->elementAsDouble(0)) : std::nullopt;
}

/// Inference dropout is the identity, and its mask all true. Training mode
/// is refused unless it provably drops nothing (ratio 0), as in the evaluator.
void lowerDropout(LoweringContext &ctx, const Node &node) {
  if (node.operand(2)) {
    std::optional<double> ratio = constantScalar(ctx, node, 1, "dropout ratio in training mode");
    const Tensor *training = ctx.constantValue(node.operand(2));
    bool zeroRatio = node.operand(1) && ratio && *ratio == 0.0;
    if (!zeroRatio) {
      if (!training || !training->hasData())
        ctx.unsupported(node, "training_mode must be a constant");
      if (training->numElements() == 1 && training->elementAsDouble(0) != 0.0)
        ctx.unsupported(node, "training-mode dropout is not supported");
    }
  }
  ctx.alias(node.result(0), node.operand(0));
  if (node.numResults() < 2 || !isNeeded(ctx, node.result(1)))
    return;
  const Value *mask = node.result(1);
  StepBuilder step = ctx.beginStep(node, "dropout_mask");
  unsigned out = step.output(mask);
  Dim total = mask->shape().numElements();
  auto [begin, end] =
      step.splitEvenly([total](FunctionBuilder &f) { return f.dim(total); }, kCopyGrainBytes);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  b.CreateMemSet(elementPointer(k, k.buffer(out), begin, 1), b.getInt8(1), b.CreateSub(end, begin),
                 MaybeAlign(1));
  step.finish();
}

/// Operands per concat step: LLVM's optimizer takes time quadratic in the
/// copy loops of one function, so a Concat of thousands of inputs is cut
/// into steps of this many (each one kernel), linear in the input count.
constexpr size_t kConcatOperandsPerStep = 64;

/// One step copying operands [first, last) of `node` to their place in the
/// result, the first starting at `offset` along `axis`.
void lowerConcatPart(LoweringContext &ctx, const Node &node, size_t first, size_t last, size_t axis,
                     const Dim &offset) {
  const Value *result = node.result(0);
  size_t size = dtypeSize(result->dtype());
  // A KV cache updated in place (CachePairs.h) is laid out for its capacity.
  std::vector<Dim> outStrides = contiguousStrides(ctx.layoutOf(result));
  bool inPlaceCache = ctx.hasCacheLayout(result);

  StepBuilder step = ctx.beginStep(node, inPlaceCache ? "concat_cache" : "concat");
  std::vector<unsigned> inputs;
  Dim elements(0);
  for (size_t i = first; i < last; ++i) {
    inputs.push_back(step.input(node.operand(i)));
    elements = elements + node.operand(i)->shape().numElements();
  }
  unsigned out = step.output(result);
  llvm::Value *tasks = setCopyTaskCount(
      step, last - first == node.numOperands() ? result->shape().numElements() : elements, size);
  KernelBuilder &k = step.kernel();
  // A graph output is not read again by this run: a large one (a KV cache's
  // present, rewritten whole every decode step) bypasses the cache.
  bool streaming = ctx.graph().isOutput(result) && ctx.hasAvx2Fma();
  // Summed in the kernel, part by part: the offsets as Dims would grow by a
  // term per part, their code with them.
  IRBuilder<> &b = k.ir();
  llvm::Value *position = k.dim(offset), *stride = k.dim(outStrides[axis]);
  for (size_t i = first; i < last; ++i) {
    const Shape &part = node.operand(i)->shape();
    std::vector<Dim> partStrides = contiguousStrides(ctx.layoutOf(node.operand(i)));
    StridedCopy copy(size);
    for (size_t d = 0; d < part.rank(); ++d)
      copy.addAxis({part[d], partStrides[d], outStrides[d]});
    copy.simplify();
    copy.setStreaming(streaming);
    llvm::Value *dst = elementPointer(k, k.buffer(out), b.CreateMul(position, stride), size);
    llvm::Value *source = k.buffer(inputs[i - first]);
    if (inPlaceCache && i == 0) {
      // Bound to one buffer, the past's rows are already where the
      // present's go; only two buffers need them copied.
      k.ifThen(b.CreateICmpNE(source, k.buffer(out)), [&] { copy.emit(k, source, dst, tasks); });
    } else {
      copy.emit(k, source, dst, tasks);
    }
    position = b.CreateAdd(position, k.dim(part[axis]));
  }
  step.finish();
}

void lowerConcat(LoweringContext &ctx, const Node &node) {
  if (node.numOperands() == 0)
    ctx.unsupported(node, "concat needs at least one operand");
  const Shape &shape = node.result(0)->shape();
  size_t axis = size_t(normalizeAxisOrFail(node, node.requireInt("axis"), int64_t(shape.rank())));
  for (const Value *operand : node.operands())
    if (!operand || operand->shape().rank() != shape.rank())
      ctx.unsupported(node, "operands must all be present and of the result's rank");
  Dim offset(0);
  for (size_t first = 0; first < node.numOperands(); first += kConcatOperandsPerStep) {
    size_t last = std::min(node.numOperands(), first + kConcatOperandsPerStep);
    lowerConcatPart(ctx, node, first, last, axis, offset);
    for (size_t i = first; i < last; ++i)
      offset = offset + node.operand(i)->shape()[axis];
  }
}

void lowerSplit(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data)
    ctx.unsupported(node, "missing input operand");
  // The fused attention reads a packed Q/K/V projection in place.
  if (attentionReadingSplitInPlace(ctx, node))
    return;
  const Shape &shape = data->shape();
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(shape.rank())));
  size_t size = dtypeSize(data->dtype());
  std::vector<Dim> inStrides = contiguousStrides(shape);

  StepBuilder step = ctx.beginStep(node, "split");
  unsigned in = step.input(data);
  // Unused parts are not written (their dims may not even be bound).
  std::vector<std::optional<unsigned>> outputs;
  for (const Value *result : node.results())
    outputs.push_back(isNeeded(ctx, result) ? std::optional(step.output(result)) : std::nullopt);
  llvm::Value *tasks = setCopyTaskCount(step, shape.numElements(), size);
  KernelBuilder &k = step.kernel();
  Dim offset(0);
  for (size_t i = 0; i < node.numResults(); ++i) {
    const Shape &part = node.result(i)->shape();
    if (!outputs[i]) {
      offset = offset + part[axis];
      continue;
    }
    std::vector<Dim> partStrides = contiguousStrides(part);
    StridedCopy copy(size);
    for (size_t d = 0; d < part.rank(); ++d)
      copy.addAxis({part[d], inStrides[d], partStrides[d]});
    copy.simplify();
    llvm::Value *src = elementPointer(k, k.buffer(in), k.dim(offset * inStrides[axis]), size);
    copy.emit(k, src, k.buffer(*outputs[i]), tasks);
    offset = offset + part[axis];
  }
  step.finish();
}

/// Emits a step copying `copy` from `node`'s operand 0 to its result 0.
void emitCopyStep(LoweringContext &ctx, const Node &node, StridedCopy copy, const char *kind) {
  const Value *result = node.result(0);
  StepBuilder step = ctx.beginStep(node, kind);
  unsigned in = step.input(node.operand(0));
  unsigned out = step.output(result);
  copy.simplify();
  llvm::Value *tasks = setCopyTaskCount(step, result->shape().numElements(), copy.elementSize());
  KernelBuilder &k = step.kernel();
  copy.emit(k, k.buffer(in), k.buffer(out), tasks);
  step.finish();
}

/// Expand broadcasts by reading with stride 0 along the expanded axes.
void lowerExpand(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data)
    ctx.unsupported(node, "missing input operand");
  const Shape &in = data->shape(), &out = node.result(0)->shape();
  if (in.rank() > out.rank())
    ctx.unsupported(node, "result rank below the operand's");
  std::vector<Dim> inStrides = contiguousStrides(in), outStrides = contiguousStrides(out);
  StridedCopy copy(dtypeSize(data->dtype()));
  size_t lead = out.rank() - in.rank();
  for (size_t i = 0; i < out.rank(); ++i) {
    CopyAxis axis{out[i], Dim(0), outStrides[i]};
    if (i >= lead) {
      const Dim &inDim = in[i - lead];
      if (inDim != Dim(1))
        axis.srcStride = inStrides[i - lead];
      if (inDim != Dim(1) && inDim != out[i])
        axis.zeroStrideWhenOne = inDim;
    }
    copy.addAxis(axis);
  }
  emitCopyStep(ctx, node, std::move(copy), "expand");
}

/// Tile: each result axis of length r * d is read as [r, d] with the source
/// stride 0 along the repeats.
void lowerTile(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data)
    ctx.unsupported(node, "missing input operand");
  const Shape &in = data->shape(), &out = node.result(0)->shape();
  if (in.rank() != out.rank())
    ctx.unsupported(node, "result rank differs from the operand's");
  const Tensor *repeats = node.operand(1) ? ctx.constantValue(node.operand(1)) : nullptr;
  std::vector<int64_t> repeatValues;
  if (repeats && repeats->hasData())
    repeatValues = repeats->toInt64Vector();
  std::vector<Dim> inStrides = contiguousStrides(in), outStrides = contiguousStrides(out);
  StridedCopy copy(dtypeSize(data->dtype()));
  for (size_t i = 0; i < in.rank(); ++i) {
    std::optional<Dim> count;
    if (repeatValues.size() == in.rank())
      count = Dim(repeatValues[i]);
    else if (in[i] == Dim(0) || out[i] == Dim(0))
      count = Dim(0);
    else
      count = out[i].divideExactly(in[i]);
    if (!count)
      ctx.unsupported(node, "repeat count of axis " + std::to_string(i) + " (" + out[i].str() +
                                " / " + in[i].str() + ") is not known at compile time");
    copy.addAxis({*count, Dim(0), in[i] * outStrides[i]});
    copy.addAxis({in[i], inStrides[i], outStrides[i]});
  }
  emitCopyStep(ctx, node, std::move(copy), "tile");
}

} // namespace

void registerMovementLowerings(LoweringTable &table) {
  for (OpKind view :
       {OpKind::Reshape, OpKind::Squeeze, OpKind::Unsqueeze, OpKind::Flatten, OpKind::Identity})
    table.add(view, lowerView);
  table.add(OpKind::BitCast, lowerBitCast);
  table.add(OpKind::Dropout, lowerDropout);
  table.add(OpKind::Concat, lowerConcat);
  table.add(OpKind::Split, lowerSplit);
  table.add(OpKind::Expand, lowerExpand);
  table.add(OpKind::Tile, lowerTile);
  table.add(OpKind::Transpose, lowerTranspose);
  table.add(OpKind::Slice, lowerSlice);
  table.add(OpKind::Gather, lowerGather);
  table.add(OpKind::Trilu, lowerTrilu);
  table.add(OpKind::Shape, lowerShape);
  table.add(OpKind::Size, lowerSize);
  table.add(OpKind::Range, lowerRange);
  table.add(OpKind::ConstantOfShape, lowerConstantOfShape);
  table.add(OpKind::Constant, lowerConstant);
}

} // namespace onnxc::lower
