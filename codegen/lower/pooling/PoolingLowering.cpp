//===- codegen/lower/pooling/PoolingLowering.cpp - Pools and ConvTranspose ===//
//
// Loop nests computing what ir/eval/PoolingKernels.cpp computes, over any
// number of spatial dims, any dtype the shape rule accepts (integers pool
// in f64, floats in f32 or f64). One task item per output row (every
// output index but the last spatial one); each output element loops over
// its window, skipping taps in the padding. SAME pads are computed at run
// time from the (possibly symbolic) input size.
//
// ConvTranspose is the gather form of the scatter the spec describes:
// output position o takes input position (o + pad - tap * dilation) /
// stride of every tap where that division is exact and lands inside the
// input, summed over the group's input channels.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/OpLowerings.h"

#include "ir/PoolingAttributes.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

Dim dimProductOf(const std::vector<Dim> &dims, size_t begin, size_t end) {
  Dim p(1);
  for (size_t i = begin; i < end; ++i)
    p = p * dims[i];
  return p;
}

/// The leading pad and the end of the padded extent (input + end pad) of
/// each spatial dim of a pool.
void poolPads(FunctionBuilder &k, const PoolAttributes &a, const std::vector<Dim> &in,
              const std::vector<Dim> &out, std::vector<Value *> &begin,
              std::vector<Value *> &paddedEnd) {
  IRBuilder<> &b = k.ir();
  size_t n = in.size();
  for (size_t i = 0; i < n; ++i) {
    Value *inSize = k.dim(in[i]);
    if (!a.padding.isSame()) {
      begin.push_back(k.i64(a.padding.pads[i]));
      paddedEnd.push_back(b.CreateAdd(inSize, k.i64(a.padding.pads[n + i])));
      continue;
    }
    Value *needed = b.CreateSub(
        b.CreateAdd(b.CreateMul(b.CreateSub(k.dim(out[i]), k.i64(1)), k.i64(a.strides[i])),
                    k.i64(a.extent(i))),
        inSize);
    Value *total = k.max(needed, k.i64(0));
    Value *half = b.CreateSDiv(total, k.i64(2));
    // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the start.
    Value *lead = a.padding.autoPad == "SAME_UPPER" ? half : b.CreateSub(total, half);
    begin.push_back(lead);
    paddedEnd.push_back(b.CreateAdd(inSize, b.CreateSub(total, lead)));
  }
}

/// A pool's window as its kernel walks it: the attributes, the per-axis
/// pads and strides (emitted once), and the stack slots of one output
/// element's accumulator and its counts of taps inside the input and
/// inside the pads.
struct PoolWindow {
  const PoolAttributes &a;
  DType dtype, real;
  bool isMax;
  unsigned x;
  const std::vector<Dim> &inSpatial;
  std::vector<Value *> padBegin, paddedEnd, inStrides;
  Type *realType;
  Value *accumulator, *inside, *counted;
};

/// One tap of the window of output `outIndex` (spatial) into the slots.
void emitPoolTap(KernelBuilder &k, const PoolWindow &w, ArrayRef<Value *> outIndex, Value *xBase,
                 ArrayRef<Value *> tap) {
  IRBuilder<> &b = k.ir();
  const PoolAttributes &a = w.a;
  size_t n = w.inSpatial.size();
  Value *within = b.getTrue(), *withinPads = b.getTrue();
  std::vector<Value *> position(n);
  for (size_t i = 0; i < n; ++i) {
    position[i] =
        b.CreateAdd(b.CreateSub(b.CreateMul(outIndex[i], k.i64(a.strides[i])), w.padBegin[i]),
                    b.CreateMul(tap[i], k.i64(a.dilations[i])));
    // One unsigned compare covers both 0 <= pos and pos < size.
    within = b.CreateAnd(within, b.CreateICmpULT(position[i], k.dim(w.inSpatial[i])));
    withinPads = b.CreateAnd(withinPads, b.CreateICmpSLT(position[i], w.paddedEnd[i]));
  }
  if (!w.isMax)
    b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), w.counted),
                              b.CreateZExt(withinPads, b.getInt64Ty())),
                  w.counted);
  k.ifThen(within, [&] {
    Value *v = k.convert(
        k.loadElement(w.dtype, k.buffer(w.x), b.CreateAdd(xBase, k.offset(position, w.inStrides))),
        w.dtype, w.real);
    Value *acc = b.CreateLoad(w.realType, w.accumulator);
    Value *next =
        w.isMax ? b.CreateSelect(b.CreateOr(b.CreateFCmpOGT(v, acc), b.CreateFCmpUNO(v, v)), v, acc)
                : b.CreateFAdd(acc, v);
    b.CreateStore(next, w.accumulator);
    b.CreateStore(b.CreateAdd(b.CreateLoad(b.getInt64Ty(), w.inside), k.i64(1)), w.inside);
  });
}

/// The output element from the slots after its window (in `real`).
Value *emitPoolResult(KernelBuilder &k, const PoolWindow &w) {
  IRBuilder<> &b = k.ir();
  Value *result = b.CreateLoad(w.realType, w.accumulator);
  // As the reference: an integer window wholly in the padding gives 0.
  if (w.isMax && !isFloat(w.dtype))
    result = b.CreateSelect(b.CreateICmpEQ(b.CreateLoad(b.getInt64Ty(), w.inside), k.i64(0)),
                            k.constant(w.real, 0.0), result);
  if (!w.isMax) {
    Value *count = b.CreateLoad(b.getInt64Ty(), w.a.countIncludePad ? w.counted : w.inside);
    result = b.CreateFDiv(result, b.CreateSIToFP(count, w.realType));
  }
  return result;
}

void lowerPool(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *input = node.operand(0);
  const Shape &xs = input->shape(), &ys = node.result(0)->shape();
  if (!xs.isRanked() || xs.rank() < 3 || ys.rank() != xs.rank())
    ctx.unsupported(node, "pool needs X [N, C, spatial...]");
  DType dtype = input->dtype();
  DType real = isFloat(dtype) ? realDType(dtype) : DType::F64;
  bool isMax = node.kind() == OpKind::MaxPool;
  size_t n = xs.rank() - 2;
  PoolAttributes a = poolAttributes(node, n);
  std::vector<Dim> inSpatial(xs.dims().begin() + 2, xs.dims().end());
  std::vector<Dim> outSpatial(ys.dims().begin() + 2, ys.dims().end());

  StepBuilder step = ctx.beginStep(node, isMax ? "maxpool" : "averagepool");
  unsigned x = step.input(input);
  unsigned y = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  std::vector<Dim> itemDims = {xs[0], xs[1]};
  itemDims.insert(itemDims.end(), outSpatial.begin(), outSpatial.end() - 1);
  Dim items = dimProductOf(itemDims, 0, itemDims.size());
  auto [first, last] = step.splitEvenly([items](FunctionBuilder &f) { return f.dim(items); }, 1);

  PoolWindow w{a,       dtype,   real,    isMax,  x, inSpatial, {}, {}, std::vector<Value *>(n),
               nullptr, nullptr, nullptr, nullptr};
  std::vector<Value *> kernelExtents;
  poolPads(k, a, inSpatial, outSpatial, w.padBegin, w.paddedEnd);
  for (size_t i = 0; i < n; ++i) {
    kernelExtents.push_back(k.i64(a.kernel[i]));
    w.inStrides[i] = k.dim(dimProductOf(inSpatial, i + 1, n));
  }
  Value *inSize = k.dim(dimProductOf(inSpatial, 0, n));
  w.realType = k.computeType(real);
  w.accumulator = stackSlot(k, w.realType, "acc");
  w.inside = stackSlot(k, b.getInt64Ty(), "inside");
  w.counted = stackSlot(k, b.getInt64Ty(), "counted");

  k.forRange(first, last, [&](Value *item) {
    std::vector<Value *> extents;
    for (const Dim &d : itemDims)
      extents.push_back(k.dim(d));
    std::vector<Value *> index = k.unflatten(item, extents);
    Value *plane = b.CreateAdd(b.CreateMul(index[0], k.dim(xs[1])), index[1]);
    Value *xBase = b.CreateMul(plane, inSize);
    Value *outputRow = b.CreateMul(item, k.dim(outSpatial[n - 1]));
    k.forRange(k.i64(0), k.dim(outSpatial[n - 1]), [&](Value *lastIndex) {
      std::vector<Value *> outIndex(index.begin() + 2, index.end());
      outIndex.push_back(lastIndex);
      b.CreateStore(isMax ? minusInfinity(k.constant(real, 0.0)) : k.constant(real, 0.0),
                    w.accumulator);
      b.CreateStore(k.i64(0), w.inside);
      b.CreateStore(k.i64(0), w.counted);
      k.loopNest(kernelExtents,
                 [&](ArrayRef<Value *> tap) { emitPoolTap(k, w, outIndex, xBase, tap); });
      Value *result = emitPoolResult(k, w);
      k.storeElement(dtype, k.convert(result, real, dtype), k.buffer(y),
                     b.CreateAdd(outputRow, lastIndex));
    });
  });
  step.finish();
}

/// The leading pad of each spatial dim of a ConvTranspose (negative when
/// output_shape asks for more than the full result).
std::vector<Value *> convTransposePads(FunctionBuilder &k, const ConvTransposeAttributes &a,
                                       const std::vector<Dim> &in, const std::vector<Dim> &out) {
  IRBuilder<> &b = k.ir();
  std::vector<Value *> pads;
  for (size_t i = 0; i < in.size(); ++i) {
    if (a.outputShape.empty() && !a.padding.isSame()) {
      pads.push_back(k.i64(a.padding.pads[i]));
      continue;
    }
    Value *full = b.CreateAdd(b.CreateMul(k.i64(a.strides[i]), b.CreateSub(k.dim(in[i]), k.i64(1))),
                              k.i64(a.outputPadding[i] + a.extent(i)));
    Value *total = b.CreateSub(full, k.dim(out[i]));
    Value *half = b.CreateAShr(total, k.i64(1)); // floor(total / 2)
    pads.push_back(a.padding.autoPad == "SAME_UPPER" ? half : b.CreateSub(total, half));
  }
  return pads;
}

/// A ConvTranspose's constant kernel dims, attributes and output channels
/// per group; refuses what the loop nest does not compile.
struct ConvTransposePlan {
  std::vector<int64_t> kernel;
  ConvTransposeAttributes a;
  int64_t groupOut = 0;
};

ConvTransposePlan planConvTranspose(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *input = node.operand(0), *weights = node.operand(1), *bias = node.operand(2);
  const Shape &xs = input->shape(), &ws = weights->shape(), &ys = node.result(0)->shape();
  DType dtype = input->dtype();
  if (!isFloat(dtype) || weights->dtype() != dtype || (bias && bias->dtype() != dtype))
    ctx.unsupported(node, "convtranspose operands must share one floating type");
  if (!xs.isRanked() || xs.rank() < 3 || ws.rank() != xs.rank() || ys.rank() != xs.rank())
    ctx.unsupported(node, "convtranspose needs X [N, C, spatial...] and W of the same rank");
  size_t n = xs.rank() - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < n; ++i) {
    std::optional<int64_t> c = ws[2 + i].constant();
    if (!c)
      ctx.unsupported(node, "convtranspose kernel dims must be constant, got " + ws.str());
    kernel.push_back(*c);
  }
  ConvTransposeAttributes a = convTransposeAttributes(node, kernel);
  std::optional<int64_t> groupOutConst = ws[1].constant();
  if (!groupOutConst)
    ctx.unsupported(node, "convtranspose output channels must be constant, got " + ws.str());
  return {std::move(kernel), std::move(a), *groupOutConst};
}

/// Whether tap `tap` of output `outIndex` reads the input, and where
/// (`position`): (o + pad - tap * dilation) / stride exact and inside it.
Value *convTransposeHit(KernelBuilder &k, const ConvTransposeAttributes &a,
                        const std::vector<Dim> &inSpatial, const std::vector<Value *> &pads,
                        ArrayRef<Value *> outIndex, ArrayRef<Value *> tap,
                        std::vector<Value *> &position) {
  IRBuilder<> &b = k.ir();
  Value *hit = b.getTrue();
  for (size_t i = 0; i < position.size(); ++i) {
    Value *q =
        b.CreateSub(b.CreateAdd(outIndex[i], pads[i]), b.CreateMul(tap[i], k.i64(a.dilations[i])));
    Value *stride = k.i64(a.strides[i]);
    hit = b.CreateAnd(hit, b.CreateICmpSGE(q, k.i64(0)));
    hit = b.CreateAnd(hit, b.CreateICmpEQ(b.CreateSRem(q, stride), k.i64(0)));
    position[i] = b.CreateSDiv(q, stride);
    hit = b.CreateAnd(hit, b.CreateICmpULT(position[i], k.dim(inSpatial[i])));
  }
  return hit;
}

/// What one output's sum over the group's input channels reads: the
/// accumulator slot, the X and W slots, X's channel dim and spatial size,
/// the channels per group in and out, and the taps per kernel.
struct ConvTransposeChannels {
  DType dtype;
  Type *realType;
  Value *accumulator;
  unsigned x, w;
  Dim inChannels;
  Value *inSize, *groupIn;
  int64_t groupOut, kernelSize;
};

/// accumulator += x[batch, firstInput + c, inOffset] * w[firstInput + c,
/// channelInGroup, tapOffset] over the group's input channels c.
void emitConvTransposeChannels(KernelBuilder &k, const ConvTransposeChannels &s, Value *batch,
                               Value *firstInput, Value *channelInGroup, Value *inOffset,
                               Value *tapOffset) {
  IRBuilder<> &b = k.ir();
  k.forRange(k.i64(0), s.groupIn, [&](Value *c) {
    Value *inputChannel = b.CreateAdd(firstInput, c);
    Value *xIndex = b.CreateAdd(
        b.CreateMul(b.CreateAdd(b.CreateMul(batch, k.dim(s.inChannels)), inputChannel), s.inSize),
        inOffset);
    Value *wIndex = b.CreateAdd(
        b.CreateMul(b.CreateAdd(b.CreateMul(inputChannel, k.i64(s.groupOut)), channelInGroup),
                    k.i64(s.kernelSize)),
        tapOffset);
    Value *product = b.CreateFMul(loadReal(k, s.dtype, k.buffer(s.x), xIndex),
                                  loadReal(k, s.dtype, k.buffer(s.w), wIndex));
    b.CreateStore(b.CreateFAdd(b.CreateLoad(s.realType, s.accumulator), product), s.accumulator);
  });
}

void lowerConvTranspose(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *input = node.operand(0), *weights = node.operand(1), *bias = node.operand(2);
  const Shape &xs = input->shape(), &ys = node.result(0)->shape();
  DType dtype = input->dtype();
  ConvTransposePlan plan = planConvTranspose(ctx, node);
  const ConvTransposeAttributes &a = plan.a;
  const std::vector<int64_t> &kernel = plan.kernel;
  const int64_t groupOut = plan.groupOut;
  size_t n = xs.rank() - 2;
  DType real = realDType(dtype);
  std::vector<Dim> inSpatial(xs.dims().begin() + 2, xs.dims().end());
  std::vector<Dim> outSpatial(ys.dims().begin() + 2, ys.dims().end());

  StepBuilder step = ctx.beginStep(node, "convtranspose");
  unsigned x = step.input(input);
  unsigned w = step.input(weights);
  int biasSlot = bias ? int(step.input(bias)) : -1;
  unsigned y = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  std::vector<Dim> itemDims = {xs[0], ys[1]};
  itemDims.insert(itemDims.end(), outSpatial.begin(), outSpatial.end() - 1);
  Dim items = dimProductOf(itemDims, 0, itemDims.size());
  auto [first, last] = step.splitEvenly([items](FunctionBuilder &f) { return f.dim(items); }, 1);

  std::vector<Value *> pads = convTransposePads(k, a, inSpatial, outSpatial);
  std::vector<Value *> kernelExtents, kernelStrides(n), inStrides(n);
  int64_t kernelSize = 1;
  for (size_t i = n; i-- > 0;) {
    kernelStrides[i] = k.i64(kernelSize);
    kernelSize *= kernel[i];
  }
  for (size_t i = 0; i < n; ++i) {
    kernelExtents.push_back(k.i64(kernel[i]));
    inStrides[i] = k.dim(dimProductOf(inSpatial, i + 1, n));
  }
  Value *inSize = k.dim(dimProductOf(inSpatial, 0, n));
  Value *groupIn = b.CreateUDiv(k.dim(xs[1]), k.i64(a.group));
  Type *realType = k.computeType(real);
  Value *accumulator = stackSlot(k, realType, "acc");
  const ConvTransposeChannels sum{dtype, realType, accumulator, x,        w,
                                  xs[1], inSize,   groupIn,     groupOut, kernelSize};

  k.forRange(first, last, [&](Value *item) {
    std::vector<Value *> extents;
    for (const Dim &d : itemDims)
      extents.push_back(k.dim(d));
    std::vector<Value *> index = k.unflatten(item, extents);
    Value *batch = index[0], *channel = index[1];
    Value *groupIndex = b.CreateUDiv(channel, k.i64(groupOut));
    Value *channelInGroup = b.CreateURem(channel, k.i64(groupOut));
    Value *firstInput = b.CreateMul(groupIndex, groupIn);
    Value *outputRow = b.CreateMul(item, k.dim(outSpatial[n - 1]));
    Value *initial = biasSlot >= 0 ? loadReal(k, dtype, k.buffer(unsigned(biasSlot)), channel)
                                   : k.constant(real, 0.0);
    k.forRange(k.i64(0), k.dim(outSpatial[n - 1]), [&](Value *lastIndex) {
      std::vector<Value *> outIndex(index.begin() + 2, index.end());
      outIndex.push_back(lastIndex);
      b.CreateStore(initial, accumulator);
      k.loopNest(kernelExtents, [&](ArrayRef<Value *> tap) {
        std::vector<Value *> position(n);
        Value *hit = convTransposeHit(k, a, inSpatial, pads, outIndex, tap, position);
        k.ifThen(hit, [&] {
          Value *inOffset = k.offset(position, inStrides);
          Value *tapOffset = k.offset(tap, kernelStrides);
          emitConvTransposeChannels(k, sum, batch, firstInput, channelInGroup, inOffset, tapOffset);
        });
      });
      storeReal(k, dtype, b.CreateLoad(realType, accumulator), k.buffer(y),
                b.CreateAdd(outputRow, lastIndex));
    });
  });
  step.finish();
}

} // namespace

void registerPoolingLowerings(LoweringTable &table) {
  table.add(OpKind::MaxPool, lowerPool);
  table.add(OpKind::AveragePool, lowerPool);
  table.add(OpKind::ConvTranspose, lowerConvTranspose);
}

} // namespace onnxc::lower
