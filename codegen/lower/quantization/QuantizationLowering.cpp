//===- codegen/lower/quantization/QuantizationLowering.cpp - Q/DQ, integer products -===//
//
// Straightforward kernels that compute exactly what ir/eval/
// QuantizationKernels.cpp computes (same roundings, same order), so the
// compiled path matches the oracle bit for bit:
//
//   QuantizeLinear / DequantizeLinear   an element loop; per axis, tasks take
//                                       rows of the axis and load the scale
//                                       and zero point once per row
//   DynamicQuantizeLinear               one task: min/max pass, then quantize
//   MatMulInteger / QLinearMatMul       a loop nest over MatMul's items x rows
//                                       split, accumulating in wrapping i32
//   ConvInteger / QLinearConv           a direct 2-D loop nest (rank-4 only,
//                                       explicit pads)
//
// The integer products take these loop nests only when their weights (or
// parameters) are computed at run time, as in ONNX's node tests: with
// constant weights they run on the integer GEMM (QuantizedGemmLowering.h).
// Their loop nests are in IntegerProductLowering.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/quantization/QuantizationLoweringInternal.h"

#include "codegen/lower/OpLowerings.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/Intrinsics.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

void requireKnownShape(LoweringContext &ctx, const Node &node, const onnxc::Value *value) {
  if (!value->shape().isRanked())
    ctx.unsupported(node, "value '" + value->name() + "' has no known rank");
  for (const Dim &d : value->shape().dims())
    if (d.isUnknown())
      ctx.unsupported(node, "value '" + value->name() + "' has an unknown dim");
}

Value *callIntrinsic(FunctionBuilder &f, Intrinsic::ID id, ArrayRef<Value *> args) {
  Function *fn = Intrinsic::getDeclaration(&f.module(), id, {args[0]->getType()});
  return f.ir().CreateCall(fn, args);
}

/// A value (integer or float computeType of `type`) as double.
Value *toDouble(FunctionBuilder &f, DType type, Value *value) {
  IRBuilder<> &b = f.ir();
  if (isFloat(type))
    return b.CreateFPExt(value, b.getDoubleTy());
  return isSignedInt(type) ? b.CreateSIToFP(value, b.getDoubleTy())
                           : b.CreateUIToFP(value, b.getDoubleTy());
}

/// A float as the nearest value of `type` (f16/bf16 round; f32 unchanged).
Value *roundToFloatType(FunctionBuilder &f, DType type, Value *value) {
  IRBuilder<> &b = f.ir();
  if (type == DType::F16)
    return b.CreateFPExt(b.CreateFPTrunc(value, b.getHalfTy()), b.getFloatTy());
  if (type == DType::BF16)
    return b.CreateFPExt(b.CreateFPTrunc(value, b.getBFloatTy()), b.getFloatTy());
  return value;
}

/// roundeven(value) clamped to `type`'s range, converted to computeType(type).
/// `value` is a double; NaN never reaches here. `type` is quantized: the
/// callers' result types, which the shape rules keep to i8, u8, i16, u16.
Value *saturateToType(FunctionBuilder &f, DType type, Value *value) {
  IRBuilder<> &b = f.ir();
  auto [lowest, highest] = quantizedRange(type).value();
  Value *rounded = callIntrinsic(f, Intrinsic::roundeven, {value});
  Value *low = ConstantFP::get(b.getDoubleTy(), lowest);
  Value *high = ConstantFP::get(b.getDoubleTy(), highest);
  Value *clamped = callIntrinsic(f, Intrinsic::minnum,
                                 {callIntrinsic(f, Intrinsic::maxnum, {rounded, low}), high});
  return b.CreateTrunc(b.CreateFPToSI(clamped, b.getInt32Ty()), f.computeType(type));
}

/// The element of a scale or zero point for `index`: element 0 when it has
/// one element (per tensor).
Value *parameterIndex(FunctionBuilder &f, const onnxc::Value *param, Value *index) {
  return param->shape().numElements().constant() == 1 ? f.i64(0) : index;
}

namespace {

// --- QuantizeLinear / DequantizeLinear ---------------------------------------

/// Element layout of a per-tensor, per-axis or blocked parameter over x:
/// rows of `inner` elements, one row per index of x's dims up to `axis`.
/// Row r uses parameter r % axisSize (per axis); blocked, element j of row
/// r uses ((r / axisSize) * blocks + (r % axisSize) / blockSize) * inner + j.
struct AxisLayout {
  bool perTensor = true;
  int64_t blockSize = 0, blocks = 1;
  Dim rows = 1, inner = 1, axisSize = 1;
};

AxisLayout axisLayout(LoweringContext &ctx, const Node &node, const Shape &x,
                      const onnxc::Value *scale) {
  AxisLayout layout;
  layout.blockSize = node.getInt("block_size", 0);
  if (layout.blockSize == 0 && scale->shape().numElements().constant() == 1) {
    layout.inner = x.numElements();
    return layout;
  }
  bool blocked = layout.blockSize > 0;
  if (x.rank() == 0 || (blocked ? scale->shape().rank() != x.rank() : scale->shape().rank() != 1))
    ctx.unsupported(node, "the scale must be a scalar, 1-D along an axis of x, or blocked");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 1), int64_t(x.rank())));
  layout.perTensor = false;
  layout.axisSize = x[axis];
  if (blocked) {
    std::optional<int64_t> blocks = scale->shape()[axis].constant();
    if (!blocks)
      ctx.unsupported(node, "a blocked scale needs a known block count");
    layout.blocks = *blocks;
  }
  for (size_t i = 0; i <= axis; ++i)
    layout.rows = layout.rows * x[i];
  for (size_t i = axis + 1; i < x.rank(); ++i)
    layout.inner = layout.inner * x[i];
  return layout;
}

/// Emits `body(element, parameter)` over x's elements, split into tasks.
void forEachQuantizedElement(StepBuilder &step, const AxisLayout &layout,
                             function_ref<void(Value *, Value *)> body) {
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  if (layout.perTensor) {
    Dim total = layout.inner;
    auto [begin, end] =
        step.splitEvenly([total](FunctionBuilder &f) { return f.dim(total); }, 8192);
    k.forRange(begin, end, [&](Value *i) { body(i, k.i64(0)); });
    return;
  }
  Dim rows = layout.rows;
  int64_t grain = 1;
  if (std::optional<int64_t> inner = layout.inner.constant())
    grain = std::max<int64_t>(1, 8192 / std::max<int64_t>(1, *inner));
  auto [begin, end] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, grain);
  Value *inner = k.dim(layout.inner), *axisSize = k.dim(layout.axisSize);
  bool blocked = layout.blockSize > 0;
  k.forRange(
      begin, end,
      [&](Value *row) {
        Value *parameter = b.CreateSRem(row, axisSize);
        if (blocked) {
          // The row's block, then the first parameter of its row of blocks.
          Value *outer = b.CreateSDiv(row, axisSize);
          Value *block = b.CreateSDiv(parameter, k.i64(layout.blockSize));
          parameter =
              b.CreateMul(b.CreateAdd(b.CreateMul(outer, k.i64(layout.blocks)), block), inner);
        }
        Value *start = b.CreateMul(row, inner);
        k.forRange(
            k.i64(0), inner,
            [&](Value *j) {
              body(b.CreateAdd(start, j), blocked ? b.CreateAdd(parameter, j) : parameter);
            },
            1, "j");
      },
      1, "row");
}

void lowerQuantizeLinear(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0), *scale = node.operand(1);
  const onnxc::Value *zero = node.numOperands() > 2 ? node.operand(2) : nullptr;
  const onnxc::Value *y = node.result(0);
  requireKnownShape(ctx, node, x);
  DType xType = x->dtype(), sType = scale->dtype(), yType = y->dtype();
  if (!quantizedRange(yType))
    ctx.unsupported(node, "result type " + std::string(dtypeName(yType)) + " is not quantized");
  AxisLayout layout = axisLayout(ctx, node, x->shape(), scale);
  StepBuilder step = ctx.beginStep(node, "quantize_linear");
  unsigned xSlot = step.input(x), sSlot = step.input(scale);
  unsigned zSlot = zero ? step.input(zero) : ~0u;
  unsigned ySlot = step.output(y);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  forEachQuantizedElement(step, layout, [&](Value *i, Value *p) {
    Value *xv = k.loadElement(xType, k.buffer(xSlot), i);
    Value *sv = k.loadElement(sType, k.buffer(sSlot), p);
    Value *quotient;
    if (xType == DType::F64) {
      quotient = b.CreateFDiv(xv, toDouble(k, sType, sv));
    } else {
      Value *xf =
          isFloat(xType) ? b.CreateFPCast(xv, b.getFloatTy()) : b.CreateSIToFP(xv, b.getFloatTy());
      Value *sf = b.CreateFPCast(sv, b.getFloatTy());
      quotient = b.CreateFPExt(roundToFloatType(k, xType, b.CreateFDiv(xf, sf)), b.getDoubleTy());
    }
    Value *zv = zero ? toDouble(k, yType, k.loadElement(yType, k.buffer(zSlot), p))
                     : ConstantFP::get(b.getDoubleTy(), 0.0);
    Value *shifted = b.CreateFAdd(callIntrinsic(k, Intrinsic::roundeven, {quotient}), zv);
    // A NaN quantizes to the zero point (as the evaluator decides).
    Value *isNaN = b.CreateFCmpUNO(quotient, quotient);
    k.storeElement(yType, saturateToType(k, yType, b.CreateSelect(isNaN, zv, shifted)),
                   k.buffer(ySlot), i);
  });
  step.finish();
}

void lowerDequantizeLinear(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0), *scale = node.operand(1);
  const onnxc::Value *zero = node.numOperands() > 2 ? node.operand(2) : nullptr;
  const onnxc::Value *y = node.result(0);
  requireKnownShape(ctx, node, x);
  DType xType = x->dtype(), sType = scale->dtype(), yType = y->dtype();
  if (!isInteger(xType) || !isFloat(yType))
    ctx.unsupported(node, "needs integer x and a float result");
  AxisLayout layout = axisLayout(ctx, node, x->shape(), scale);
  StepBuilder step = ctx.beginStep(node, "dequantize_linear");
  unsigned xSlot = step.input(x), sSlot = step.input(scale);
  unsigned zSlot = zero ? step.input(zero) : ~0u;
  unsigned ySlot = step.output(y);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  forEachQuantizedElement(step, layout, [&](Value *i, Value *p) {
    // x as float first (i32 x rounds there, as in the evaluator), then the
    // subtraction and product in double, rounded once to float.
    Value *xv = k.loadElement(xType, k.buffer(xSlot), i);
    Value *xf = isSignedInt(xType) ? b.CreateSIToFP(xv, b.getFloatTy())
                                   : b.CreateUIToFP(xv, b.getFloatTy());
    Value *shifted = b.CreateFPExt(xf, b.getDoubleTy());
    if (zero)
      shifted = b.CreateFSub(shifted, toDouble(k, xType, k.loadElement(xType, k.buffer(zSlot), p)));
    Value *product =
        b.CreateFMul(shifted, toDouble(k, sType, k.loadElement(sType, k.buffer(sSlot), p)));
    Value *asFloat = b.CreateFPTrunc(product, b.getFloatTy());
    k.storeElement(yType, k.convert(asFloat, DType::F32, yType), k.buffer(ySlot), i);
  });
  step.finish();
}

void lowerDynamicQuantizeLinear(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0);
  requireKnownShape(ctx, node, x);
  if (x->dtype() != DType::F32)
    ctx.unsupported(node, "needs f32 input");
  StepBuilder step = ctx.beginStep(node, "dynamic_quantize_linear");
  unsigned xSlot = step.input(x);
  unsigned ySlot = step.output(node.result(0)), sSlot = step.output(node.result(1)),
           zSlot = step.output(node.result(2));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *total = k.numElements(x->shape());
  Value *data = k.buffer(xSlot);
  Value *zeroF = ConstantFP::get(b.getFloatTy(), 0.0);
  // The range always includes 0; NaNs are skipped by the ordered compares.
  std::vector<Value *> range =
      k.forRangeCarried(k.i64(0), total, {zeroF, zeroF}, [&](Value *i, ArrayRef<Value *> carried) {
        Value *v = k.loadElement(DType::F32, data, i);
        Value *low = b.CreateSelect(b.CreateFCmpOLT(v, carried[0]), v, carried[0]);
        Value *high = b.CreateSelect(b.CreateFCmpOLT(carried[1], v), v, carried[1]);
        return std::vector<Value *>{low, high};
      });
  Value *width =
      b.CreateSelect(b.CreateFCmpOEQ(range[1], range[0]), ConstantFP::get(b.getFloatTy(), 1.0),
                     b.CreateFSub(range[1], range[0]));
  Value *scale = b.CreateFDiv(width, ConstantFP::get(b.getFloatTy(), 255.0));
  Value *initialZero = b.CreateFSub(zeroF, b.CreateFDiv(range[0], scale));
  Value *zeroPoint = saturateToType(k, DType::U8, b.CreateFPExt(initialZero, b.getDoubleTy()));
  Value *zeroD = b.CreateUIToFP(zeroPoint, b.getDoubleTy());
  k.storeElement(DType::F32, scale, k.buffer(sSlot), k.i64(0));
  k.storeElement(DType::U8, zeroPoint, k.buffer(zSlot), k.i64(0));
  k.forRange(k.i64(0), total, [&](Value *i) {
    Value *quotient = b.CreateFDiv(k.loadElement(DType::F32, data, i), scale);
    Value *qd = b.CreateFPExt(quotient, b.getDoubleTy());
    Value *shifted = b.CreateFAdd(callIntrinsic(k, Intrinsic::roundeven, {qd}), zeroD);
    Value *value = b.CreateSelect(b.CreateFCmpUNO(qd, qd), zeroD, shifted);
    k.storeElement(DType::U8, saturateToType(k, DType::U8, value), k.buffer(ySlot), i);
  });
  step.finish();
}

} // namespace

void registerQuantizationLowerings(LoweringTable &table) {
  table.add(OpKind::QuantizeLinear, lowerQuantizeLinear);
  table.add(OpKind::DequantizeLinear, lowerDequantizeLinear);
  table.add(OpKind::DynamicQuantizeLinear, lowerDynamicQuantizeLinear);
  table.add(OpKind::MatMulInteger, lowerIntegerMatMul);
  table.add(OpKind::QLinearMatMul, lowerIntegerMatMul);
  table.add(OpKind::ConvInteger, lowerIntegerConv);
  table.add(OpKind::QLinearConv, lowerIntegerConv);
}

} // namespace onnxc::lower
