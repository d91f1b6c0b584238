//===- codegen/lower/convolution/ConvolutionLowering.cpp - N-D direct convolution -===//
//
// f32 Conv with constant weights goes to the packed GEMM
// (ConvolutionGemmLowering.cpp); everything else (other dtypes, computed
// weights, depthwise) takes the loop nest here.
//
// Conv as ir/eval/ConvolutionKernels.cpp computes it: any number of spatial
// dims, groups, strides, dilations, explicit pads or auto_pad, optional
// bias. One task item per output row (batch x output channel x every
// output spatial index but the last); each output element is a direct sum
// over the group's input channels and the kernel window, skipping taps in
// the padding. Spatial sizes may be symbolic (SAME pads are computed at run
// time from them); a kernel cannot fail, so a window larger than the padded
// input simply yields no output rows, where the reference reports an error.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/convolution/ConvolutionLoweringInternal.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

ConvShape convShape(const LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0), *w = node.operand(1), *bias = node.operand(2);
  ConvShape c;
  c.dtype = x->dtype();
  if (!isFloat(c.dtype) || w->dtype() != c.dtype || (bias && bias->dtype() != c.dtype))
    ctx.unsupported(node, "conv operands must share one floating type");
  const Shape &xs = x->shape(), &ws = w->shape(), &ys = node.result(0)->shape();
  if (xs.rank() < 3 || ws.rank() != xs.rank() || ys.rank() != xs.rank())
    ctx.unsupported(node, "conv needs X [N, C, spatial...] and W of the same rank, got " +
                              xs.str() + " and " + ws.str());
  c.spatialDims = xs.rank() - 2;
  c.batch = xs[0];
  c.inChannels = xs[1];
  c.outChannels = ws[0];
  c.group = node.getInt("group", 1);
  std::optional<int64_t> out = c.outChannels.constant();
  if (c.group <= 0 || !out || *out % c.group != 0 || !xs[1].provablyEqual(ws[1] * Dim(c.group)))
    ctx.unsupported(node, "conv channels of X " + xs.str() + " and W " + ws.str() +
                              " do not provably fit group " + std::to_string(c.group));
  if (bias && (bias->shape().rank() != 1 || !bias->shape()[0].provablyEqual(c.outChannels)))
    ctx.unsupported(node,
                    "conv bias must be [" + c.outChannels.str() + "], got " + bias->shape().str());
  c.inSpatial.assign(xs.dims().begin() + 2, xs.dims().end());
  c.kernel.assign(ws.dims().begin() + 2, ws.dims().end());
  c.outSpatial.assign(ys.dims().begin() + 2, ys.dims().end());
  if (node.hasAttr("kernel_shape")) {
    std::vector<int64_t> attr = node.getInts("kernel_shape");
    for (size_t i = 0; i < c.spatialDims; ++i)
      if (attr.size() != c.spatialDims || !c.kernel[i].provablyEqual(Dim(attr[i])))
        ctx.unsupported(node, "kernel_shape does not match weights " + ws.str());
  }
  c.strides = convSpatialAttr(node, "strides", c.spatialDims, 1, 1);
  c.dilations = convSpatialAttr(node, "dilations", c.spatialDims, 1, 1);
  c.padding = convPadding(node, c.spatialDims);
  return c;
}

std::vector<Value *> convPadsBefore(FunctionBuilder &k, const ConvShape &c) {
  IRBuilder<> &b = k.ir();
  std::vector<Value *> pads;
  for (size_t i = 0; i < c.spatialDims; ++i) {
    if (!c.padding.isSame()) {
      pads.push_back(k.i64(c.padding.pads[i]));
      continue;
    }
    Value *in = k.dim(c.inSpatial[i]), *stride = k.i64(c.strides[i]);
    Value *extent = b.CreateAdd(
        b.CreateMul(b.CreateSub(k.dim(c.kernel[i]), k.i64(1)), k.i64(c.dilations[i])), k.i64(1));
    Value *out = k.ceilDiv(in, stride);
    Value *needed =
        b.CreateSub(b.CreateAdd(b.CreateMul(b.CreateSub(out, k.i64(1)), stride), extent), in);
    Value *total = k.max(needed, k.i64(0));
    // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the start.
    Value *half = b.CreateSDiv(total, k.i64(2));
    pads.push_back(c.padding.autoPad == "SAME_UPPER" ? half : b.CreateSub(total, half));
  }
  return pads;
}

Dim dimProduct(const std::vector<Dim> &dims, size_t begin, size_t end) {
  Dim p(1);
  for (size_t i = begin; i < end; ++i)
    p = p * dims[i];
  return p;
}

namespace {

void lowerConv(LoweringContext &ctx, const Node &node) {
  ConvShape c = convShape(ctx, node);
  if (lowerConvOnGemm(ctx, node, c))
    return;
  size_t n = c.spatialDims;
  StepBuilder step = ctx.beginStep(node, "conv");
  unsigned x = step.input(node.operand(0));
  unsigned w = step.input(node.operand(1));
  int bias = node.operand(2) ? int(step.input(node.operand(2))) : -1;
  unsigned y = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  DType real = realDType(c.dtype);

  // Items: [batch, outChannels, outSpatial[0 .. n-2]]; each item is a row
  // along the last output spatial dim.
  std::vector<Dim> itemDims = {c.batch, c.outChannels};
  itemDims.insert(itemDims.end(), c.outSpatial.begin(), c.outSpatial.end() - 1);
  Dim items = dimProduct(itemDims, 0, itemDims.size());
  auto [begin, end] = step.splitEvenly([items](FunctionBuilder &f) { return f.dim(items); }, 1);

  std::vector<Value *> pads = convPadsBefore(k, c);
  std::vector<Value *> kernelExtents, kernelStrides(n), inStrides(n);
  for (size_t i = 0; i < n; ++i) {
    kernelExtents.push_back(k.dim(c.kernel[i]));
    kernelStrides[i] = k.dim(dimProduct(c.kernel, i + 1, n));
    inStrides[i] = k.dim(dimProduct(c.inSpatial, i + 1, n));
  }
  Value *inSize = k.dim(dimProduct(c.inSpatial, 0, n));
  Value *kernelSize = k.dim(dimProduct(c.kernel, 0, n));
  Value *groupIn = b.CreateUDiv(k.dim(c.inChannels), k.i64(c.group));
  Value *groupOut = b.CreateUDiv(k.dim(c.outChannels), k.i64(c.group));
  Value *accumulator = stackSlot(k, k.computeType(real), "acc");

  k.forRange(begin, end, [&](Value *item) {
    std::vector<Value *> extents;
    for (const Dim &d : itemDims)
      extents.push_back(k.dim(d));
    std::vector<Value *> index = k.unflatten(item, extents);
    Value *batch = index[0], *channel = index[1];
    Value *firstInput = b.CreateMul(b.CreateUDiv(channel, groupOut), groupIn);
    Value *outputRow = b.CreateMul(item, k.dim(c.outSpatial[n - 1]));
    Value *initial =
        bias >= 0 ? loadReal(k, c.dtype, k.buffer(unsigned(bias)), channel) : k.constant(real, 0.0);
    k.forRange(k.i64(0), k.dim(c.outSpatial[n - 1]), [&](Value *last) {
      std::vector<Value *> outIndex(index.begin() + 2, index.end());
      outIndex.push_back(last);
      b.CreateStore(initial, accumulator);
      k.forRange(k.i64(0), groupIn, [&](Value *inChannel) {
        Value *inputChannel = b.CreateAdd(firstInput, inChannel);
        Value *xBase =
            b.CreateMul(b.CreateAdd(b.CreateMul(batch, k.dim(c.inChannels)), inputChannel), inSize);
        Value *wBase =
            b.CreateMul(b.CreateAdd(b.CreateMul(channel, groupIn), inChannel), kernelSize);
        k.loopNest(kernelExtents, [&](ArrayRef<Value *> tap) {
          Value *inside = b.getTrue();
          std::vector<Value *> position(n);
          for (size_t i = 0; i < n; ++i) {
            position[i] =
                b.CreateAdd(b.CreateSub(b.CreateMul(outIndex[i], k.i64(c.strides[i])), pads[i]),
                            b.CreateMul(tap[i], k.i64(c.dilations[i])));
            // One unsigned compare covers both 0 <= pos and pos < size.
            inside = b.CreateAnd(inside, b.CreateICmpULT(position[i], k.dim(c.inSpatial[i])));
          }
          k.ifThen(inside, [&] {
            Value *xv = loadReal(k, c.dtype, k.buffer(x),
                                 b.CreateAdd(xBase, k.offset(position, inStrides)));
            Value *wv =
                loadReal(k, c.dtype, k.buffer(w), b.CreateAdd(wBase, k.offset(tap, kernelStrides)));
            Value *sum = b.CreateLoad(k.computeType(real), accumulator);
            b.CreateStore(b.CreateFAdd(sum, b.CreateFMul(xv, wv)), accumulator);
          });
        });
      });
      storeReal(k, c.dtype, b.CreateLoad(k.computeType(real), accumulator), k.buffer(y),
                b.CreateAdd(outputRow, last));
    });
  });
  step.finish();
}

} // namespace

void registerConvolutionLowerings(LoweringTable &table) { table.add(OpKind::Conv, lowerConv); }

} // namespace onnxc::lower
