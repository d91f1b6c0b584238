//===- codegen/lower/quantization/IntegerProductLowering.cpp - Integer MatMul and Conv loop nests
//-===//
//
// MatMulInteger / QLinearMatMul as a loop nest over MatMul's items x rows
// split, accumulating in wrapping i32, and ConvInteger / QLinearConv as a
// direct 2-D loop nest (rank-4 only, explicit pads): what
// ir/eval/QuantizationKernels.cpp computes, in the same order. They run
// when the weights (or parameters) are computed at run time; with constant
// weights the integer GEMM takes them first (QuantizedGemmLowering.h).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/quantization/QuantizationLoweringInternal.h"

#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"
#include "codegen/lower/quantization/QuantizedGemmLowering.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/Intrinsics.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

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

} // namespace onnxc::lower
