//===- codegen/lower/movement/ResizeLowering.cpp - Resize -----------------===//
//
// Resize as ir/eval/ResizeKernels.cpp computes it, with the scales or sizes
// (and a tf_crop_and_resize roi) constant at compile time; the input dims
// may be symbolic (a sizes-derived scale is then computed at run time).
// One task item per output row: the taps (1, 2 or 4 clamped indices and
// their weights, in f64; more for an antialiased downscale, whose scale must
// then be known at compile time) of each resized outer axis are computed once per
// row, those of the last axis per element, and every combination of taps is
// emitted inline (axes outside `axes` are copied, so a 2-D resize of NCHW
// reads 1, 4 or 16 elements per output).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/OpLowerings.h"

#include "ir/PoolingAttributes.h"

#include "llvm/IR/Intrinsics.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

struct TapValues {
  std::vector<Value *> index, weight;
  Value *outside = nullptr;
};

/// Per-axis constants: the scale (or how to compute it) and the roi.
struct AxisPlan {
  bool resized = false;
  double scale = 1.0;       // when !sizeDerived
  bool sizeDerived = false; // scale = targetSize / in (or the aspect policy's pick)
  int64_t targetSize = 0;   // when sizeDerived
  double roiStart = 0, roiEnd = 1;
  int taps = 1;         // per output element
  double stretch = 1.0; // antialias: the filter's scale, min(scale, 1)
};

const Tensor *givenConstant(const LoweringContext &ctx, const Node &node, size_t i) {
  const onnxc::Value *v = node.operand(i);
  if (!v)
    return nullptr;
  if (v->shape().isRanked() && v->shape().rank() == 1 && v->shape()[0] == Dim(0))
    return nullptr;
  const Tensor *t = ctx.constantValue(v);
  if (!t || !t->hasData())
    ctx.unsupported(node, "resize roi, scales and sizes must be constants");
  return t->numElements() == 0 ? nullptr : t;
}

class ResizeEmitter {
public:
  ResizeEmitter(FunctionBuilder &k, const ResizeAttributes &a) : k_(k), b_(k.ir()), a_(a) {}

  Value *f64(double v) { return ConstantFP::get(b_.getDoubleTy(), v); }
  Value *toF64(Value *i) { return b_.CreateSIToFP(i, b_.getDoubleTy()); }

  Value *sourceCoordinate(Value *o, Value *scale, Value *in, Value *out, const AxisPlan &p) {
    Value *x = toF64(o), *inD = toF64(in), *outD = toF64(out);
    Value *width = b_.CreateFMul(scale, inD);
    Value *halfPixel = b_.CreateFSub(b_.CreateFDiv(b_.CreateFAdd(x, f64(0.5)), scale), f64(0.5));
    Value *several = b_.CreateICmpSGT(out, k_.i64(1));
    Value *inLess1 = b_.CreateFSub(inD, f64(1));
    switch (a_.coordinates) {
    case ResizeCoordinates::HalfPixel:
      return halfPixel;
    case ResizeCoordinates::HalfPixelSymmetric: {
      Value *adjustment = b_.CreateFDiv(outD, width);
      Value *offset =
          b_.CreateFMul(b_.CreateFMul(inD, f64(0.5)), b_.CreateFSub(f64(1), adjustment));
      return b_.CreateFAdd(offset, halfPixel);
    }
    case ResizeCoordinates::PytorchHalfPixel:
      return b_.CreateSelect(several, halfPixel, f64(-0.5));
    case ResizeCoordinates::AlignCorners:
      return b_.CreateSelect(
          several, b_.CreateFDiv(b_.CreateFMul(x, inLess1), b_.CreateFSub(width, f64(1))), f64(0));
    case ResizeCoordinates::Asymmetric:
      return b_.CreateFDiv(x, scale);
    case ResizeCoordinates::TfCropAndResize: {
      Value *start = b_.CreateFMul(f64(p.roiStart), inLess1);
      Value *span = b_.CreateFMul(f64(p.roiEnd - p.roiStart), inLess1);
      Value *many =
          b_.CreateFAdd(start, b_.CreateFDiv(b_.CreateFMul(x, span), b_.CreateFSub(width, f64(1))));
      Value *one = b_.CreateFAdd(start, b_.CreateFMul(span, f64(0.5)));
      return b_.CreateSelect(several, many, one);
    }
    }
    return halfPixel;
  }

  TapValues taps(Value *o, Value *scale, Value *in, Value *out, const AxisPlan &p) {
    TapValues t;
    Value *source = sourceCoordinate(o, scale, in, out, p);
    t.outside = b_.getFalse();
    if (a_.coordinates == ResizeCoordinates::TfCropAndResize)
      t.outside = b_.CreateOr(b_.CreateFCmpOLT(source, f64(0)),
                              b_.CreateFCmpOGT(source, toF64(b_.CreateSub(in, k_.i64(1)))));
    Value *base = b_.CreateUnaryIntrinsic(Intrinsic::floor, source);
    Value *ratio = b_.CreateFSub(source, base);
    // Far outside coordinates (tf_crop_and_resize) are clamped before the
    // conversion so that it stays defined; their result is the extrapolation.
    Value *baseIndex = b_.CreateFPToSI(b_.CreateSelect(t.outside, f64(0), base), b_.getInt64Ty());
    Value *last = b_.CreateSub(in, k_.i64(1));
    auto clampIndex = [&](Value *i) { return k_.max(k_.min(i, last), k_.i64(0)); };
    if (a_.mode == ResizeMode::Nearest) {
      Value *up = b_.getFalse();
      switch (a_.rounding) {
      case ResizeRounding::RoundPreferFloor:
        up = b_.CreateFCmpOGT(ratio, f64(0.5));
        break;
      case ResizeRounding::RoundPreferCeil:
        up = b_.CreateFCmpOGE(ratio, f64(0.5));
        break;
      case ResizeRounding::Floor:
        break;
      case ResizeRounding::Ceil:
        up = b_.CreateFCmpOGT(ratio, f64(0));
        break;
      }
      t.index.push_back(clampIndex(b_.CreateAdd(baseIndex, b_.CreateZExt(up, b_.getInt64Ty()))));
      t.weight.push_back(f64(1));
      return t;
    }
    int first = resizeFirstTap(p.taps);
    std::vector<Value *> positions;
    for (int i = 0; i < p.taps; ++i) {
      Value *distance = b_.CreateFMul(f64(p.stretch), b_.CreateFSub(f64(first + i), ratio));
      Value *d = b_.CreateUnaryIntrinsic(Intrinsic::fabs, distance);
      Value *w = a_.mode == ResizeMode::Linear ? linearWeight(d) : cubicWeight(d);
      positions.push_back(b_.CreateAdd(baseIndex, k_.i64(first + i)));
      t.index.push_back(clampIndex(positions.back()));
      t.weight.push_back(w);
    }
    if (a_.antialias)
      normalize(t.weight);
    if (a_.excludeOutside) {
      for (int i = 0; i < p.taps; ++i)
        t.weight[size_t(i)] = b_.CreateSelect(b_.CreateICmpULT(positions[size_t(i)], in),
                                              t.weight[size_t(i)], f64(0));
      normalize(t.weight);
    }
    return t;
  }

private:
  /// max(0, 1 - |d|).
  Value *linearWeight(Value *d) {
    Value *w = b_.CreateFSub(f64(1), d);
    return b_.CreateSelect(b_.CreateFCmpOLT(w, f64(0)), f64(0), w);
  }

  /// Keys' cubic convolution kernel at |d|.
  Value *cubicWeight(Value *d) {
    double A = a_.cubicA;
    Value *near = b_.CreateFAdd(
        b_.CreateFMul(b_.CreateFMul(b_.CreateFSub(b_.CreateFMul(f64(A + 2), d), f64(A + 3)), d), d),
        f64(1));
    Value *far = b_.CreateFSub(f64(5 * A), b_.CreateFMul(f64(A), d)); // negated inner term
    far = b_.CreateFSub(b_.CreateFMul(b_.CreateFSub(f64(8 * A), b_.CreateFMul(far, d)), d),
                        f64(4 * A));
    return b_.CreateSelect(b_.CreateFCmpOLE(d, f64(1)), near,
                           b_.CreateSelect(b_.CreateFCmpOLT(d, f64(2)), far, f64(0)));
  }

  void normalize(std::vector<Value *> &weights) {
    Value *sum = f64(0);
    for (Value *w : weights)
      sum = b_.CreateFAdd(sum, w);
    Value *divisor = b_.CreateSelect(b_.CreateFCmpOEQ(sum, f64(0)), f64(1), sum);
    for (Value *&w : weights)
      w = b_.CreateFDiv(w, divisor);
  }

  FunctionBuilder &k_;
  IRBuilder<> &b_;
  const ResizeAttributes &a_;
};

/// Each axis' plan from the constant operands, checked; the tap counts are
/// static, so an antialiased downscale needs its scale at compile time.
std::vector<AxisPlan> planAxes(const LoweringContext &ctx, const Node &node,
                               const ResizeAttributes &a, const std::vector<int64_t> &axes,
                               const Shape &xs) {
  const Tensor *roi = givenConstant(ctx, node, 1);
  const Tensor *scales = givenConstant(ctx, node, 2);
  const Tensor *sizes = givenConstant(ctx, node, 3);
  if (!scales == !sizes)
    ctx.unsupported(node, "resize needs exactly one of scales and sizes");
  size_t given = size_t((scales ? scales : sizes)->numElements());
  if (given != axes.size())
    ctx.unsupported(node, "resize scales or sizes do not match its axes");
  std::vector<AxisPlan> plan(xs.rank());
  for (size_t i = 0; i < axes.size(); ++i) {
    AxisPlan &p = plan[size_t(axes[i])];
    p.resized = true;
    if (scales)
      p.scale = double(float(scales->elementAsDouble(int64_t(i))));
    else {
      p.sizeDerived = true;
      p.targetSize = sizes->toInt64Vector()[i];
    }
    if (a.coordinates == ResizeCoordinates::TfCropAndResize) {
      if (!roi || roi->numElements() != int64_t(2 * axes.size()))
        ctx.unsupported(node, "tf_crop_and_resize needs a constant roi of 2 values per axis");
      p.roiStart = roi->elementAsDouble(int64_t(i));
      p.roiEnd = roi->elementAsDouble(int64_t(axes.size() + i));
    }
  }

  // Tap counts are static: an antialiased downscale needs its scale now.
  bool wideFilter = a.antialias && a.mode != ResizeMode::Nearest;
  std::vector<double> staticScales(xs.rank(), 1.0);
  if (wideFilter && scales) {
    for (int64_t axis : axes)
      staticScales[size_t(axis)] = plan[size_t(axis)].scale;
  } else if (wideFilter) {
    std::optional<std::vector<int64_t>> inDims = xs.staticDims();
    if (!inDims)
      ctx.unsupported(node, "resize antialias with sizes needs static input dims, got " + xs.str());
    std::vector<int64_t> sizeValues = sizes->toInt64Vector();
    staticScales = resizeShape(node, a, *inDims, nullptr, &sizeValues).scales;
  }
  for (int64_t axis : axes) {
    AxisPlan &p = plan[size_t(axis)];
    p.taps = resizeTapCount(a, staticScales[size_t(axis)]);
    if (wideFilter)
      p.stretch = std::min(staticScales[size_t(axis)], 1.0);
  }

  int64_t footprint = 1;
  for (int64_t axis : axes)
    footprint *= plan[size_t(axis)].taps;
  if (footprint > 256)
    ctx.unsupported(node, "resize reads " + std::to_string(footprint) +
                              " inputs per output (antialias of a steep downscale); at most 256 "
                              "are compiled");
  return plan;
}

/// The scale of every resized axis, as f64 (the aspect policies pick one
/// ratio for all of them).
std::vector<Value *> emitScales(ResizeEmitter &emit, IRBuilder<> &b, const ResizeAttributes &a,
                                const std::vector<int64_t> &axes, const std::vector<AxisPlan> &plan,
                                const std::vector<Value *> &inDims) {
  std::vector<Value *> scaleOf(inDims.size(), nullptr);
  Value *picked = nullptr;
  for (int64_t axis : axes) {
    size_t d = size_t(axis);
    if (!plan[d].sizeDerived) {
      scaleOf[d] = emit.f64(plan[d].scale);
      continue;
    }
    scaleOf[d] = b.CreateFDiv(emit.f64(double(plan[d].targetSize)), emit.toF64(inDims[d]));
    if (a.aspect != ResizeAspect::Stretch)
      picked = !picked ? scaleOf[d]
               : a.aspect == ResizeAspect::NotLarger
                   ? b.CreateSelect(b.CreateFCmpOLT(scaleOf[d], picked), scaleOf[d], picked)
                   : b.CreateSelect(b.CreateFCmpOGT(scaleOf[d], picked), scaleOf[d], picked);
  }
  if (picked)
    for (int64_t axis : axes)
      scaleOf[size_t(axis)] = picked;
  return scaleOf;
}

void lowerResize(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *input = node.operand(0);
  const Shape &xs = input->shape(), &ys = node.result(0)->shape();
  size_t rank = xs.rank();
  if (!xs.isRanked() || ys.rank() != rank || rank == 0)
    ctx.unsupported(node, "resize needs a ranked input");
  DType dtype = input->dtype();
  ResizeAttributes a = resizeAttributes(node);
  std::vector<int64_t> axes = resizeAxes(node, a, int64_t(rank));
  std::vector<AxisPlan> plan = planAxes(ctx, node, a, axes, xs);

  StepBuilder step = ctx.beginStep(node, "resize");
  unsigned x = step.input(input);
  unsigned y = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  ResizeEmitter emit(k, a);
  Dim rows(1);
  for (size_t i = 0; i + 1 < rank; ++i)
    rows = rows * ys[i];
  auto [first, last] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, 1);
  std::vector<Value *> inDims = k.dims(xs), outDims = k.dims(ys), inStrides(rank);
  Value *stride = k.i64(1);
  for (size_t i = rank; i-- > 0;) {
    inStrides[i] = stride;
    stride = b.CreateMul(stride, inDims[i]);
  }
  std::vector<Value *> scaleOf = emitScales(emit, b, a, axes, plan, inDims);
  std::vector<Value *> outerExtents(outDims.begin(), outDims.end() - 1);

  k.forRange(first, last, [&](Value *row) {
    std::vector<Value *> index = k.unflatten(row, outerExtents);
    std::vector<TapValues> taps(rank);
    Value *base = k.i64(0), *outside = b.getFalse();
    for (size_t d = 0; d + 1 < rank; ++d) {
      if (!plan[d].resized) {
        base = b.CreateAdd(base, b.CreateMul(index[d], inStrides[d]));
        continue;
      }
      taps[d] = emit.taps(index[d], scaleOf[d], inDims[d], outDims[d], plan[d]);
      outside = b.CreateOr(outside, taps[d].outside);
    }
    Value *outRow = b.CreateMul(row, outDims[rank - 1]);
    k.forRange(k.i64(0), outDims[rank - 1], [&](Value *j) {
      size_t d = rank - 1;
      Value *rowBase = base, *isOutside = outside;
      std::vector<TapValues> all = taps;
      if (plan[d].resized) {
        all[d] = emit.taps(j, scaleOf[d], inDims[d], outDims[d], plan[d]);
        isOutside = b.CreateOr(isOutside, all[d].outside);
      } else {
        rowBase = b.CreateAdd(rowBase, j);
      }
      // Every combination of the resized axes' taps.
      std::vector<size_t> resized;
      for (size_t i = 0; i < rank; ++i)
        if (plan[i].resized)
          resized.push_back(i);
      Value *sum = emit.f64(0);
      int64_t combinations = 1;
      for (size_t i = 0; i < resized.size(); ++i)
        combinations *= plan[resized[i]].taps;
      for (int64_t c = 0; c < combinations; ++c) {
        Value *weight = nullptr, *offset = rowBase;
        int64_t code = c;
        for (size_t axis : resized) {
          size_t tap = size_t(code % plan[axis].taps);
          code /= plan[axis].taps;
          weight = weight ? b.CreateFMul(weight, all[axis].weight[tap]) : all[axis].weight[tap];
          offset = b.CreateAdd(offset, b.CreateMul(all[axis].index[tap], inStrides[axis]));
        }
        Value *v = k.convert(k.loadElement(dtype, k.buffer(x), offset), dtype, DType::F64);
        sum = weight ? b.CreateFAdd(sum, b.CreateFMul(weight, v)) : v;
      }
      sum = b.CreateSelect(isOutside, emit.f64(a.extrapolation), sum);
      k.storeElement(dtype, k.convert(sum, DType::F64, dtype), k.buffer(y), b.CreateAdd(outRow, j));
    });
  });
  step.finish();
}

} // namespace

void registerResizeLowerings(LoweringTable &table) { table.add(OpKind::Resize, lowerResize); }

} // namespace onnxc::lower
