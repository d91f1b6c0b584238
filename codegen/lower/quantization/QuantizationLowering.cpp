//===- codegen/lower/quantization/QuantizationLowering.cpp - Q/DQ and integer products -===//
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
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"
#include "codegen/lower/quantization/QuantizedGemmLowering.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/Intrinsics.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

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

// --- QuantizeLinear / DequantizeLinear ---------------------------------------

/// Element layout of a per-axis (or per-tensor) parameter over x: rows of
/// `inner` elements, row r using parameter r % axisSize.
struct AxisLayout {
  bool perTensor = true;
  Dim rows = 1, inner = 1, axisSize = 1;
};

AxisLayout axisLayout(LoweringContext &ctx, const Node &node, const Shape &x,
                      const onnxc::Value *scale) {
  AxisLayout layout;
  if (scale->shape().numElements().constant() == 1) {
    layout.inner = x.numElements();
    return layout;
  }
  if (scale->shape().rank() != 1 || x.rank() == 0)
    ctx.unsupported(node, "the scale must be a scalar or 1-D along an axis of x");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 1), int64_t(x.rank())));
  layout.perTensor = false;
  layout.axisSize = x[axis];
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
  k.forRange(
      begin, end,
      [&](Value *row) {
        Value *parameter = b.CreateSRem(row, axisSize);
        Value *start = b.CreateMul(row, inner);
        k.forRange(
            k.i64(0), inner, [&](Value *j) { body(b.CreateAdd(start, j), parameter); }, 1, "j");
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

// --- MatMulInteger / QLinearMatMul -------------------------------------------

/// The quantization parameters of an integer product (null when absent).
struct ProductParameters {
  const onnxc::Value *aZero = nullptr, *bZero = nullptr;
  const onnxc::Value *aScale = nullptr, *bScale = nullptr, *yScale = nullptr, *yZero = nullptr;
  bool requantize() const { return yScale != nullptr; }
};

/// A MatMul of `a` and `b` planned as MatMulProblem does for MatMul, batch
/// kept (rows stay A's rows, so per-row parameters index by row).
MatMulProblem planIntegerMatMul(LoweringContext &ctx, const Node &node, const onnxc::Value *a,
                                const onnxc::Value *b) {
  MatMulProblem problem;
  problem.node = &node;
  problem.a = a;
  problem.b = b;
  problem.result = node.result(0);
  for (const onnxc::Value *v : {a, b, problem.result})
    requireKnownShape(ctx, node, v);
  problem.dtype = a->dtype();
  std::vector<Dim> aDims = a->shape().dims(), bDims = b->shape().dims();
  if (aDims.empty() || bDims.empty())
    ctx.unsupported(node, "matmul of a scalar");
  if (aDims.size() == 1)
    aDims.insert(aDims.begin(), Dim(1));
  if (bDims.size() == 1)
    bDims.push_back(Dim(1));
  problem.m = aDims[aDims.size() - 2];
  problem.k = aDims.back();
  problem.n = bDims.back();
  setBatchDims(ctx, node, problem, aDims, bDims);
  return problem;
}

/// Slots of the parameters (~0u when absent).
struct ParameterSlots {
  unsigned aZero = ~0u, bZero = ~0u, aScale = ~0u, bScale = ~0u, yScale = ~0u, yZero = ~0u;
};

/// A parameter element as double (0 when absent).
Value *loadParameter(KernelBuilder &k, const onnxc::Value *param, unsigned slot, Value *index) {
  if (!param)
    return ConstantFP::get(k.ir().getDoubleTy(), 0.0);
  return toDouble(k, param->dtype(),
                  k.loadElement(param->dtype(), k.buffer(slot), parameterIndex(k, param, index)));
}

/// A zero point as i32 (0 when absent).
Value *loadZeroPoint(KernelBuilder &k, const onnxc::Value *param, unsigned slot, Value *index) {
  if (!param)
    return k.ir().getInt32(0);
  Value *v = k.loadElement(param->dtype(), k.buffer(slot), parameterIndex(k, param, index));
  return k.ir().CreateIntCast(v, k.ir().getInt32Ty(), isSignedInt(param->dtype()));
}

/// a_scale * b_scale / y_scale rounded in the scales' type, as double.
Value *requantizeMultiplier(KernelBuilder &k, DType type, Value *aScale, Value *bScale,
                            Value *yScale) {
  IRBuilder<> &b = k.ir();
  auto asFloat = [&](Value *v) { return b.CreateFPTrunc(v, b.getFloatTy()); };
  Value *product = roundToFloatType(k, type, b.CreateFMul(asFloat(aScale), asFloat(bScale)));
  Value *ratio = roundToFloatType(k, type, b.CreateFDiv(product, asFloat(yScale)));
  return b.CreateFPExt(ratio, b.getDoubleTy());
}

/// An i32 sum requantized into `type`: saturate(rint(sum * multiplier + zero)).
Value *requantize(KernelBuilder &k, DType type, Value *sum, Value *multiplier, Value *zero) {
  IRBuilder<> &b = k.ir();
  Value *scaled = b.CreateFMul(b.CreateSIToFP(sum, b.getDoubleTy()), multiplier);
  return saturateToType(k, type, b.CreateFAdd(scaled, zero));
}

void emitIntegerMatMulRows(KernelBuilder &k, const MatMulProblem &problem,
                           const ProductParameters &params, const ParameterSlots &pslots,
                           const MatMulSlots &slots, const ItemOffsets &offsets, Value *rowBegin,
                           Value *rowEnd) {
  IRBuilder<> &b = k.ir();
  DType aType = problem.a->dtype(), bType = problem.b->dtype(), yType = problem.result->dtype();
  Value *a = k.buffer(slots.a), *bBuf = k.buffer(slots.b), *y = k.buffer(slots.result);
  Value *depth = k.dim(problem.k), *n = k.dim(problem.n);
  k.forRange(
      rowBegin, rowEnd,
      [&](Value *row) {
        Value *aZero = loadZeroPoint(k, params.aZero, pslots.aZero, row);
        Value *aScale =
            params.requantize() ? loadParameter(k, params.aScale, pslots.aScale, row) : nullptr;
        k.forRange(
            k.i64(0), n,
            [&](Value *col) {
              Value *bZero = loadZeroPoint(k, params.bZero, pslots.bZero, col);
              auto step = [&](Value *p, ArrayRef<Value *> sum) {
                Value *aIndex = b.CreateAdd(offsets.a, b.CreateAdd(b.CreateMul(row, depth), p));
                Value *bIndex = b.CreateAdd(offsets.b, b.CreateAdd(b.CreateMul(p, n), col));
                Value *x = b.CreateIntCast(k.loadElement(aType, a, aIndex), b.getInt32Ty(),
                                           isSignedInt(aType));
                Value *w = b.CreateIntCast(k.loadElement(bType, bBuf, bIndex), b.getInt32Ty(),
                                           isSignedInt(bType));
                Value *product = b.CreateMul(b.CreateSub(x, aZero), b.CreateSub(w, bZero));
                return std::vector<Value *>{b.CreateAdd(sum[0], product)};
              };
              Value *sum = k.forRangeCarried(k.i64(0), depth, {b.getInt32(0)}, step, 1, "p")[0];
              Value *index = b.CreateAdd(offsets.result, b.CreateAdd(b.CreateMul(row, n), col));
              if (params.requantize()) {
                Value *bScale = loadParameter(k, params.bScale, pslots.bScale, col);
                Value *yScale = loadParameter(k, params.yScale, pslots.yScale, k.i64(0));
                Value *yZero = loadParameter(k, params.yZero, pslots.yZero, k.i64(0));
                Value *multiplier =
                    requantizeMultiplier(k, params.aScale->dtype(), aScale, bScale, yScale);
                sum = requantize(k, yType, sum, multiplier, yZero);
              }
              k.storeElement(yType, sum, y, index);
            },
            1, "j");
      },
      1, "r");
}

ParameterSlots declareParameters(StepBuilder &step, const ProductParameters &params) {
  ParameterSlots slots;
  auto declare = [&](const onnxc::Value *v, unsigned &slot) {
    if (v)
      slot = step.input(v);
  };
  declare(params.aZero, slots.aZero);
  declare(params.bZero, slots.bZero);
  declare(params.aScale, slots.aScale);
  declare(params.bScale, slots.bScale);
  declare(params.yScale, slots.yScale);
  declare(params.yZero, slots.yZero);
  return slots;
}

const onnxc::Value *operandOrNull(const Node &node, size_t i) {
  return i < node.numOperands() ? node.operand(i) : nullptr;
}

/// The parameters of MatMulInteger / ConvInteger (zero points at 2 and 3) or
/// QLinearMatMul / QLinearConv (scales and zero points at 1, 2, 4, 5, 6, 7).
ProductParameters integerProductParameters(const Node &node, bool qlinear) {
  ProductParameters params;
  if (qlinear) {
    params.aScale = node.operand(1);
    params.aZero = node.operand(2);
    params.bScale = node.operand(4);
    params.bZero = node.operand(5);
    params.yScale = node.operand(6);
    params.yZero = node.operand(7);
  } else {
    params.aZero = operandOrNull(node, 2);
    params.bZero = operandOrNull(node, 3);
  }
  return params;
}

} // namespace

void lowerIntegerMatMul(LoweringContext &ctx, const Node &node) {
  if (lowerIntegerMatMulOnGemm(ctx, node))
    return;
  bool qlinear = node.kind() == OpKind::QLinearMatMul;
  const onnxc::Value *a = node.operand(0), *b = node.operand(qlinear ? 3 : 1);
  ProductParameters params = integerProductParameters(node, qlinear);
  MatMulProblem problem = planIntegerMatMul(ctx, node, a, b);
  StepBuilder step = ctx.beginStep(node, qlinear ? "qlinear_matmul" : "matmul_integer");
  MatMulSlots slots;
  slots.a = step.input(a);
  slots.b = step.input(b);
  ParameterSlots pslots = declareParameters(step, params);
  slots.result = step.output(problem.result);
  splitMatMulLoopRows(step, problem, [&](Value *item, Value *rowBegin, Value *rowEnd) {
    KernelBuilder &kb = step.kernel();
    emitIntegerMatMulRows(kb, problem, params, pslots, slots, itemOffsets(kb, problem, item),
                          rowBegin, rowEnd);
  });
  step.finish();
}

namespace {

/// The window of a compiled ConvInteger / QLinearConv: 2-D, explicit pads,
/// a constant kernel size.
struct IntegerConvWindow {
  int64_t kH = 1, kW = 1, group = 1;
  std::vector<int64_t> strides, dilations, pads;
};

IntegerConvWindow integerConvWindow(LoweringContext &ctx, const Node &node, const Shape &xs,
                                    const Shape &ws, const Shape &ys) {
  if (xs.rank() != 4 || ws.rank() != 4 || ys.rank() != 4)
    ctx.unsupported(node, "only 2-D convolutions (rank-4 x and w) are compiled");
  ConvPadding padding = convPadding(node, 2);
  if (padding.isSame())
    ctx.unsupported(node, "auto_pad " + padding.autoPad + " is not compiled; give explicit pads");
  std::optional<int64_t> kH = ws[2].constant(), kW = ws[3].constant();
  if (!kH || !kW)
    ctx.unsupported(node, "the kernel size must be constant");
  IntegerConvWindow window;
  window.kH = *kH;
  window.kW = *kW;
  window.strides = convSpatialAttr(node, "strides", 2, 1, 1);
  window.dilations = convSpatialAttr(node, "dilations", 2, 1, 1);
  window.pads = padding.pads;
  window.group = node.getInt("group", 1);
  if (window.group <= 0)
    ctx.unsupported(node, "group must be positive");
  return window;
}

/// Where one output's taps read, in the kernel: image n, output channel m
/// (its group's first input channel), the window's top-left corner, x's
/// dims, the group's input channels and the two zero points.
struct IntegerConvOutput {
  Value *n, *m, *firstChannel, *top, *left;
  Value *channels, *height, *width, *groupIn;
  Value *xZero, *wZero;
};

/// sum + (x - xZero) * (w - wZero) for tap t = (c, kh, kw) of the window;
/// taps in the padding add nothing.
Value *emitIntegerConvTap(KernelBuilder &k, const IntegerConvWindow &window,
                          const IntegerConvOutput &out, const onnxc::Value *x,
                          const onnxc::Value *w, unsigned xSlot, unsigned wSlot, Value *t,
                          Value *sum) {
  IRBuilder<> &b = k.ir();
  DType xType = x->dtype(), wType = w->dtype();
  const int64_t kH = window.kH, kW = window.kW;
  Value *c = b.CreateSDiv(t, k.i64(kH * kW));
  Value *kh = b.CreateSRem(b.CreateSDiv(t, k.i64(kW)), k.i64(kH));
  Value *kw = b.CreateSRem(t, k.i64(kW));
  Value *ih = b.CreateAdd(out.top, b.CreateMul(kh, k.i64(window.dilations[0])));
  Value *iw = b.CreateAdd(out.left, b.CreateMul(kw, k.i64(window.dilations[1])));
  Value *inside = b.CreateAnd(b.CreateICmpULT(ih, out.height), b.CreateICmpULT(iw, out.width));
  Value *xIndex =
      b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(out.n, out.channels),
                                                                  b.CreateAdd(out.firstChannel, c)),
                                                      out.height),
                                          ih),
                              out.width),
                  iw);
  xIndex = b.CreateSelect(inside, xIndex, k.i64(0));
  Value *wIndex =
      b.CreateAdd(b.CreateMul(b.CreateAdd(b.CreateMul(out.m, out.groupIn), c), k.i64(kH * kW)),
                  b.CreateAdd(b.CreateMul(kh, k.i64(kW)), kw));
  Value *xv = b.CreateIntCast(k.loadElement(xType, k.buffer(xSlot), xIndex), b.getInt32Ty(),
                              isSignedInt(xType));
  Value *wv = b.CreateIntCast(k.loadElement(wType, k.buffer(wSlot), wIndex), b.getInt32Ty(),
                              isSignedInt(wType));
  Value *product = b.CreateMul(b.CreateSub(xv, out.xZero), b.CreateSub(wv, out.wZero));
  return b.CreateAdd(sum, b.CreateSelect(inside, product, b.getInt32(0)));
}

/// QLinearConv's i32 sum of output channel m requantized into `yType`.
Value *requantizeConvSum(KernelBuilder &k, const ProductParameters &params,
                         const ParameterSlots &pslots, DType yType, Value *sum, Value *m) {
  Value *multiplier = requantizeMultiplier(
      k, params.aScale->dtype(), loadParameter(k, params.aScale, pslots.aScale, k.i64(0)),
      loadParameter(k, params.bScale, pslots.bScale, m),
      loadParameter(k, params.yScale, pslots.yScale, k.i64(0)));
  return requantize(k, yType, sum, multiplier,
                    loadParameter(k, params.yZero, pslots.yZero, k.i64(0)));
}

} // namespace

/// ConvInteger / QLinearConv over 2-D images: one task row per (n, m, oh),
/// each output a sum over the group's channels and the kernel window, taps
/// in the padding skipped (they would read x_zero_point - x_zero_point = 0).
void lowerIntegerConv(LoweringContext &ctx, const Node &node) {
  if (lowerIntegerConvOnGemm(ctx, node))
    return;
  bool qlinear = node.kind() == OpKind::QLinearConv;
  const onnxc::Value *x = node.operand(0), *w = node.operand(qlinear ? 3 : 1);
  const onnxc::Value *y = node.result(0);
  ProductParameters params = integerProductParameters(node, qlinear);
  const onnxc::Value *bias = qlinear ? operandOrNull(node, 8) : nullptr;
  for (const onnxc::Value *v : {x, w, y})
    requireKnownShape(ctx, node, v);
  const Shape &xs = x->shape(), &ys = y->shape();
  IntegerConvWindow window = integerConvWindow(ctx, node, xs, w->shape(), ys);

  StepBuilder step = ctx.beginStep(node, qlinear ? "qlinear_conv" : "conv_integer");
  unsigned xSlot = step.input(x), wSlot = step.input(w);
  ParameterSlots pslots = declareParameters(step, params);
  unsigned biasSlot = bias ? step.input(bias) : ~0u;
  unsigned ySlot = step.output(y);
  Dim rows = ys[0] * ys[1] * ys[2];
  std::optional<int64_t> outWidth = ys[3].constant();
  int64_t grain = std::max<int64_t>(
      1, 2048 / std::max<int64_t>(1, outWidth.value_or(64) * window.kH * window.kW));
  auto [begin, end] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, grain);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  DType yType = y->dtype();
  IntegerConvOutput out;
  out.channels = k.dim(xs[1]), out.height = k.dim(xs[2]), out.width = k.dim(xs[3]);
  Value *outChannels = k.dim(ys[1]), *outHeight = k.dim(ys[2]), *outW = k.dim(ys[3]);
  out.groupIn = b.CreateSDiv(out.channels, k.i64(window.group));
  Value *groupOut = b.CreateSDiv(outChannels, k.i64(window.group));
  Value *taps = b.CreateMul(out.groupIn, k.i64(window.kH * window.kW));
  out.xZero = loadZeroPoint(k, params.aZero, pslots.aZero, k.i64(0));
  k.forRange(
      begin, end,
      [&](Value *row) {
        Value *oh = b.CreateSRem(row, outHeight);
        Value *nm = b.CreateSDiv(row, outHeight);
        out.m = b.CreateSRem(nm, outChannels), out.n = b.CreateSDiv(nm, outChannels);
        out.firstChannel = b.CreateMul(b.CreateSDiv(out.m, groupOut), out.groupIn);
        out.wZero = loadZeroPoint(k, params.bZero, pslots.bZero, out.m);
        out.top = b.CreateSub(b.CreateMul(oh, k.i64(window.strides[0])), k.i64(window.pads[0]));
        k.forRange(
            k.i64(0), outW,
            [&](Value *ow) {
              out.left =
                  b.CreateSub(b.CreateMul(ow, k.i64(window.strides[1])), k.i64(window.pads[1]));
              auto tap = [&](Value *t, ArrayRef<Value *> sum) {
                return std::vector<Value *>{
                    emitIntegerConvTap(k, window, out, x, w, xSlot, wSlot, t, sum[0])};
              };
              Value *init =
                  bias ? k.loadElement(DType::I32, k.buffer(biasSlot), out.m) : b.getInt32(0);
              Value *sum = k.forRangeCarried(k.i64(0), taps, {init}, tap, 1, "t")[0];
              if (params.requantize())
                sum = requantizeConvSum(k, params, pslots, yType, sum, out.m);
              k.storeElement(yType, sum, k.buffer(ySlot), b.CreateAdd(b.CreateMul(row, outW), ow));
            },
            1, "ow");
      },
      1, "row");
  step.finish();
}

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
