//===- codegen/lower/creation/CreationLowering.cpp - Shape, Size, Range, constants -===//
//
// Results computed from dims or small operands rather than moved: Shape and
// Size store dim() values (the operand's bytes are not read, so no buffer
// dependency), Range evaluates start + i * delta as the evaluator does (in
// double for floats, in int64 for integers), ConstantOfShape fills the
// attribute's bytes, and Constant copies its value from a constant buffer.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"

#include "ir/infer/KnownContents.h"

#include "llvm/IR/IRBuilder.h"

#include <cstring>

using namespace llvm;

namespace onnxc::lower {

void lowerShape(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data || !data->shape().isRanked())
    ctx.unsupported(node, "the operand's rank is unknown");
  const Shape &shape = data->shape();
  auto [first, last] = shapeOpRange(node, int64_t(shape.rank()));
  StepBuilder step = ctx.beginStep(node, "shape");
  unsigned out = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  for (int64_t i = first; i < last; ++i)
    k.storeElement(DType::I64, k.dim(shape[size_t(i)]), k.buffer(out), k.i64(i - first));
  step.finish();
}

void lowerSize(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data || !data->shape().isRanked())
    ctx.unsupported(node, "the operand's rank is unknown");
  StepBuilder step = ctx.beginStep(node, "size");
  unsigned out = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  k.storeElement(DType::I64, k.dim(data->shape().numElements()), k.buffer(out), k.i64(0));
  step.finish();
}

void lowerRange(LoweringContext &ctx, const Node &node) {
  const Value *start = node.operand(0), *limit = node.operand(1), *delta = node.operand(2);
  if (!start || !limit || !delta)
    ctx.unsupported(node, "missing start, limit or delta operand");
  const Value *result = node.result(0);
  DType type = result->dtype();
  if (type == DType::Bool || start->dtype() != type || delta->dtype() != type)
    ctx.unsupported(node, "start, limit and delta must be numbers of the result's dtype");
  // The count is the result's (inferred) length; the elements need only
  // start and delta.
  bool floating = isFloat(type);
  DType wide = floating ? DType::F64 : DType::I64;
  StepBuilder step = ctx.beginStep(node, "range");
  auto operandSlot = [&](const Value *value) -> std::optional<unsigned> {
    if (ctx.constantValue(value))
      return std::nullopt;
    return step.input(value);
  };
  std::optional<unsigned> startSlot = operandSlot(start), deltaSlot = operandSlot(delta);
  unsigned out = step.output(result);
  Dim length = result->shape().rank() == 1 ? result->shape()[0] : Dim(1);
  auto [begin, end] =
      step.splitEvenly([length](FunctionBuilder &f) { return f.dim(length); }, 16384);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  auto scalar = [&](const Value *value, std::optional<unsigned> slot) -> llvm::Value * {
    if (!slot) {
      const Tensor *tensor = ctx.constantValue(value);
      if (tensor->numElements() != 1)
        ctx.unsupported(node, "start, limit and delta must be scalars");
      return floating ? k.constant(DType::F64, tensor->elementAsDouble(0))
                      : k.i64(tensor->elementAsInt64(0));
    }
    return k.convert(k.loadElement(type, k.buffer(*slot), k.i64(0)), type, wide);
  };
  llvm::Value *first = scalar(start, startSlot), *increment = scalar(delta, deltaSlot);
  k.forRange(begin, end, [&](llvm::Value *i) {
    llvm::Value *value =
        floating ? b.CreateFAdd(first, b.CreateFMul(b.CreateSIToFP(i, b.getDoubleTy()), increment))
                 : b.CreateAdd(first, b.CreateMul(i, increment));
    k.storeElement(type, k.convert(value, wide, type), k.buffer(out), i);
  });
  step.finish();
}

void lowerConstantOfShape(LoweringContext &ctx, const Node &node) {
  Tensor fill = Tensor::scalar<float>(0.0f);
  if (const Attribute *value = node.findAttr("value")) {
    if (value->kind() != Attribute::Kind::Tensor || value->asTensor().numElements() != 1 ||
        !value->asTensor().hasData())
      ctx.unsupported(node, "attribute 'value' must be a one-element tensor");
    fill = value->asTensor();
  }
  const Value *result = node.result(0);
  size_t size = dtypeSize(fill.dtype());
  if (fill.dtype() != result->dtype())
    ctx.unsupported(node, "the fill value's dtype differs from the result's");
  uint64_t pattern = 0;
  std::memcpy(&pattern, fill.rawData(), size);
  StepBuilder step = ctx.beginStep(node, "constant_of_shape");
  unsigned out = step.output(result);
  Dim total = result->shape().numElements();
  auto [begin, end] = step.splitEvenly([total](FunctionBuilder &f) { return f.dim(total); },
                                       kCopyGrainBytes / int64_t(size));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  llvm::Value *to = elementPointer(k, k.buffer(out), begin, size);
  llvm::Value *count = b.CreateSub(end, begin);
  if (pattern == 0) {
    zeroElements(k, to, count, size);
  } else {
    Type *bits = elementBitsType(k, size);
    llvm::Value *value = ConstantInt::get(bits, pattern);
    k.forRange(k.i64(0), count,
               [&](llvm::Value *i) { b.CreateStore(value, b.CreateGEP(bits, to, i)); });
  }
  step.finish();
}

namespace {

/// The value of a Constant node, read like the evaluator reads it.
Tensor constantNodeValue(const LoweringContext &ctx, const Node &node) {
  if (node.hasAttr("value")) {
    const Tensor &value = node.requireTensor("value");
    if (!value.hasData() && value.numElements() != 0)
      ctx.unsupported(node, "constant value has no data (elided)");
    return value;
  }
  if (node.hasAttr("value_float"))
    return Tensor::scalar<float>(node.getFloat("value_float", 0));
  if (node.hasAttr("value_floats")) {
    std::vector<float> values = node.getFloats("value_floats");
    return Tensor::fromVector<float>({int64_t(values.size())}, values);
  }
  if (node.hasAttr("value_int"))
    return Tensor::scalar<int64_t>(node.getInt("value_int", 0));
  if (node.hasAttr("value_ints")) {
    std::vector<int64_t> values = node.getInts("value_ints");
    return Tensor::fromVector<int64_t>({int64_t(values.size())}, values);
  }
  ctx.unsupported(node, "constant has no supported value attribute");
}

} // namespace

void lowerConstant(LoweringContext &ctx, const Node &node) {
  Tensor value = constantNodeValue(ctx, node);
  const auto *raw = static_cast<const uint8_t *>(value.rawData());
  auto bytes = std::make_shared<std::vector<uint8_t>>(raw, raw + (raw ? value.byteSize() : 0));
  int64_t byteCount = int64_t(bytes->size());
  StepBuilder step = ctx.beginStep(node, "constant");
  unsigned out = step.output(node.result(0));
  // An empty value has no bytes to embed (and a constant buffer must have some).
  if (byteCount > 0) {
    unsigned in = step.constant(ConstantBytes(bytes));
    KernelBuilder &k = step.kernel();
    copyElements(k, k.buffer(out), k.buffer(in), k.i64(byteCount), 1);
  }
  step.finish();
}

} // namespace onnxc::lower
