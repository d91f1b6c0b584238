//===- codegen/lower/normalization/NormalizationLoops.cpp - General norm loop nests -===//
//
// The cases the row kernels do not cover: other dtypes, a softmax axis with
// later dims, broadcast scale/bias, LayerNorm's Mean/InvStdDev outputs.
// Correctness first, mirroring ir/eval/NormalizationKernels.cpp: sums are
// kept in double; LayerNorm/RMSNorm compute every element in double (as
// the evaluator does, whatever stash_type says); softmax computes its
// exponentials in float (double for f64, through libm) and divides in
// double.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/VectorMath.h"
#include "codegen/lower/normalization/NormalizationLowering.h"
#include "codegen/lower/reduction/ReductionSupport.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

Value *exponential(IRBuilder<> &b, Value *x) {
  if (x->getType()->isDoubleTy())
    return b.CreateUnaryIntrinsic(Intrinsic::exp, x);
  return vmath::emitExp(b, x);
}

Value *logarithm(IRBuilder<> &b, Value *x) {
  if (x->getType()->isDoubleTy())
    return b.CreateUnaryIntrinsic(Intrinsic::log, x);
  return vmath::emitLog(b, x);
}

} // namespace

Shape normalizationOperandShape(const LoweringContext &ctx, const Node &node,
                                const onnxc::Value *operand, const Shape &normalized,
                                const char *what) {
  std::vector<Dim> dims = operand->shape().dims();
  while (dims.size() > normalized.rank() && isConstantDim(dims.front(), 1))
    dims.erase(dims.begin());
  bool fits = dims.size() <= normalized.rank();
  size_t lead = normalized.rank() - std::min(dims.size(), normalized.rank());
  for (size_t i = 0; fits && i < dims.size(); ++i) {
    const Dim &target = normalized[lead + i];
    auto a = dims[i].constant(), b = target.constant();
    // A symbolic pair is left to broadcastStrides (stride 0 exactly when 1).
    fits = !(a && b && *a != 1 && *a != *b);
  }
  if (!fits)
    ctx.unsupported(node, std::string(what) + " of shape " + operand->shape().str() +
                              " does not broadcast to the normalized shape " + normalized.str());
  return Shape(std::move(dims));
}

void emitGeneralSoftmax(LoweringContext &ctx, const Node &node, bool logarithmic, int64_t axis) {
  const onnxc::Value *x = node.operand(0);
  const onnxc::Value *y = node.result(0);
  const Shape &shape = x->shape();
  DType dtype = x->dtype();
  DType compute = dtype == DType::F64 ? DType::F64 : DType::F32;
  Dim outer = dimProduct(shape, 0, size_t(axis));
  Dim size = shape[size_t(axis)];
  Dim inner = dimProduct(shape, size_t(axis) + 1, shape.rank());

  StepBuilder step = ctx.beginStep(node, logarithmic ? "log_softmax" : "softmax");
  unsigned in = step.input(x);
  unsigned out = step.output(y);
  auto [begin, end] = splitByWork(step, outer * inner, size * Dim(3));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *sizeValue = k.dim(size);
  Value *innerValue = k.dim(inner);
  Value *input = k.buffer(in);
  Value *output = k.buffer(out);
  Type *computeType = k.computeType(compute);

  k.forRange(begin, end, [&](Value *line) {
    Value *o = b.CreateUDiv(line, innerValue);
    Value *base = b.CreateAdd(b.CreateMul(o, b.CreateMul(sizeValue, innerValue)),
                              b.CreateURem(line, innerValue));
    auto element = [&](Value *j) {
      Value *at = b.CreateAdd(base, b.CreateMul(j, innerValue));
      return std::pair{at, k.convert(k.loadElement(dtype, input, at), dtype, compute)};
    };
    // std::max(maximum, v) as the evaluator: a NaN element does not become
    // the maximum, it reaches the output through exp.
    Value *maximum = k.forRangeCarried(
        k.i64(0), sizeValue, {ConstantFP::getInfinity(computeType, true)},
        [&](Value *j, ArrayRef<Value *> carried) -> std::vector<Value *> {
          Value *v = element(j).second;
          return {b.CreateSelect(b.CreateFCmpOLT(carried[0], v), v, carried[0])};
        },
        1, "max")[0];
    Value *sum = k.forRangeCarried(
        k.i64(0), sizeValue, {ConstantFP::get(b.getDoubleTy(), 0.0)},
        [&](Value *j, ArrayRef<Value *> carried) -> std::vector<Value *> {
          Value *e = exponential(b, b.CreateFSub(element(j).second, maximum));
          return {b.CreateFAdd(carried[0], b.CreateFPExt(e, b.getDoubleTy()))};
        },
        1, "sum")[0];
    Value *logSum = logarithmic ? logarithm(b, b.CreateFPTrunc(sum, computeType)) : nullptr;
    k.forRange(k.i64(0), sizeValue, [&](Value *j) {
      auto [at, v] = element(j);
      Value *shifted = b.CreateFSub(v, maximum);
      Value *result;
      if (logarithmic) {
        result = b.CreateFSub(shifted, logSum);
      } else {
        Value *e = b.CreateFPExt(exponential(b, shifted), b.getDoubleTy());
        result = k.convert(b.CreateFDiv(e, sum), DType::F64, compute);
      }
      k.storeElement(dtype, k.convert(result, compute, dtype), output, at);
    });
  });
  step.finish();
}

namespace {

/// Element `index` of `v` (at `base`) as f64.
Value *loadAsDouble(KernelBuilder &k, const onnxc::Value *v, Value *base, Value *index) {
  return k.convert(k.loadElement(v->dtype(), base, index), v->dtype(), DType::F64);
}

/// The f64 sum over the row of x at `rowBase` of its elements (`shift`
/// null) or of their squared distances to `shift`.
Value *emitRowSum(KernelBuilder &k, const onnxc::Value *x, Value *input, Value *length,
                  Value *rowBase, Value *shift) {
  IRBuilder<> &b = k.ir();
  return k.forRangeCarried(
      k.i64(0), length, {ConstantFP::get(b.getDoubleTy(), 0.0)},
      [&](Value *j, ArrayRef<Value *> carried) -> std::vector<Value *> {
        Value *v = loadAsDouble(k, x, input, b.CreateAdd(rowBase, j));
        if (!shift)
          return {b.CreateFAdd(carried[0], v)};
        Value *d = b.CreateFSub(v, shift);
        return {b.CreateFAdd(carried[0], b.CreateFMul(d, d))};
      },
      1, "j")[0];
}

} // namespace

void emitGeneralNormalization(LoweringContext &ctx, const Node &node,
                              const NormalizationSpec &spec) {
  const Shape &shape = spec.x->shape();
  size_t axis = size_t(spec.axis);
  Shape normalized(std::vector<Dim>(shape.dims().begin() + long(axis), shape.dims().end()));
  Shape scaleShape = normalizationOperandShape(ctx, node, spec.scale, normalized, "scale");
  Shape biasShape =
      spec.bias ? normalizationOperandShape(ctx, node, spec.bias, normalized, "bias") : Shape();
  Dim rows = dimProduct(shape, 0, axis);
  Dim rowSize = dimProduct(shape, axis, shape.rank());

  StepBuilder step = ctx.beginStep(node, spec.isLayerNorm ? "layer_norm" : "rms_norm");
  unsigned in = step.input(spec.x);
  unsigned scaleSlot = step.input(spec.scale);
  unsigned biasSlot = spec.bias ? step.input(spec.bias) : 0;
  unsigned out = step.output(spec.y);
  unsigned meanSlot = spec.mean ? step.output(spec.mean) : 0;
  unsigned invSlot = spec.invStdDev ? step.output(spec.invStdDev) : 0;
  auto [begin, end] = splitByWork(step, rows, rowSize * Dim(3));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Type *f64 = b.getDoubleTy();
  Value *length = k.dim(rowSize);
  Value *count = b.CreateSIToFP(length, f64);
  Value *epsilon = ConstantFP::get(f64, double(spec.epsilon));
  std::vector<Value *> extents = k.dims(normalized);
  std::vector<Value *> rowStrides = k.strides(normalized);
  std::vector<Value *> scaleStrides = k.broadcastStrides(scaleShape, normalized);
  std::vector<Value *> biasStrides =
      spec.bias ? k.broadcastStrides(biasShape, normalized) : std::vector<Value *>{};
  Value *input = k.buffer(in);
  auto loadDouble = [&](const onnxc::Value *v, Value *base, Value *index) {
    return loadAsDouble(k, v, base, index);
  };
  auto rowSum = [&](Value *rowBase, Value *shift) {
    return emitRowSum(k, spec.x, input, length, rowBase, shift);
  };

  k.forRange(begin, end, [&](Value *row) {
    Value *rowBase = b.CreateMul(row, length);
    Value *mean = spec.isLayerNorm ? b.CreateFDiv(rowSum(rowBase, nullptr), count)
                                   : ConstantFP::get(f64, 0.0);
    Value *squares = rowSum(rowBase, mean);
    Value *root = b.CreateUnaryIntrinsic(Intrinsic::sqrt,
                                         b.CreateFAdd(b.CreateFDiv(squares, count), epsilon));
    Value *inverse = b.CreateFDiv(ConstantFP::get(f64, 1.0), root);
    k.loopNest(extents, [&](ArrayRef<Value *> index) {
      Value *at = b.CreateAdd(rowBase, k.offset(index, rowStrides));
      Value *v = loadDouble(spec.x, input, at);
      Value *gamma = loadDouble(spec.scale, k.buffer(scaleSlot), k.offset(index, scaleStrides));
      Value *result;
      if (spec.isLayerNorm) {
        result = b.CreateFMul(b.CreateFMul(b.CreateFSub(v, mean), inverse), gamma);
        if (spec.bias)
          result = b.CreateFAdd(
              result, loadDouble(spec.bias, k.buffer(biasSlot), k.offset(index, biasStrides)));
      } else {
        result = b.CreateFMul(b.CreateFMul(v, inverse), gamma);
      }
      k.storeElement(spec.y->dtype(), k.convert(result, DType::F64, spec.y->dtype()), k.buffer(out),
                     at);
    });
    if (spec.mean)
      k.storeElement(spec.mean->dtype(), k.convert(mean, DType::F64, spec.mean->dtype()),
                     k.buffer(meanSlot), row);
    if (spec.invStdDev)
      k.storeElement(spec.invStdDev->dtype(),
                     k.convert(inverse, DType::F64, spec.invStdDev->dtype()), k.buffer(invSlot),
                     row);
  });
  step.finish();
}

} // namespace onnxc::lower
