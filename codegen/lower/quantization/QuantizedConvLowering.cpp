//===- codegen/lower/quantization/QuantizedConvLowering.cpp - Convs on the integer GEMM -===//
//
// QuantizedConv, and ConvInteger / QLinearConv with constant weights, as the
// integer GEMM of IntegerGemm.h over patches (im2col) of the quantized input:
//
//   prepare  tasks over the rows of the padded input: X [N, C, H, W] (f32
//            quantized by the constant scale and zero point, u8 as it is, i8
//            plus 128) into a u8 scratch [N, H + pads, W + pads, C], channels
//            last, the padding filled with the stored zero point (a padded
//            tap then contributes (zero - zero) * w = 0, as in the Conv of
//            the dequantized values); 8 channels x 8 positions at a time
//            through a register transpose
//   gemm     tasks over the output positions, in blocks of R rows: each
//            patch row is kH runs of kW * C bytes (dilation 1; else kH * kW
//            runs of C bytes) copied out of the scratch (K in (kh, kw, c)
//            order, the weights permuted to match at compile time), then the
//            integer GEMM into an R x M tile whose store dequantizes (f32
//            with the bias), keeps s32 sums (ConvInteger) or requantizes
//            (QLinearConv, with its s32 bias), and the tile transposed into
//            the NCHW output
//
// Stride == kernel (a ViT's patch embedding) is the same gather: each patch
// row is kH runs of the patch's kW * C bytes, with no overlap. A 1-D Conv is
// the 2-D one with H = 1. Grouped and 3-D convolutions, and patches too
// large for the stack blocks, keep QuantizationLowering.cpp's loop nest
// (fuse-static-quantized-conv makes no QuantizedConv of them). The plan and the
// weight packing are in QuantizedConvPlan.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/VectorTranspose.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/convolution/ConvolutionLoweringInternal.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"
#include "codegen/lower/quantization/QuantizedConvPlan.h"
#include "codegen/lower/quantization/QuantizedGemmLowering.h"
#include "codegen/lower/quantization/QuantizedGemmSupport.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>
#include <sstream>

namespace onnxc::lower {
namespace {

using llvm::Value;

/// The stored zero point (zero + offset) as i32, in the kernel.
Value *storedZero(KernelBuilder &k, const QuantizedConvPlan &plan, int zeroSlot) {
  llvm::IRBuilder<> &b = k.ir();
  Value *zero = b.getInt32(uint32_t(plan.zero));
  if (plan.runtimeZero) {
    DType type = plan.operands.xZero->dtype();
    zero = k.convert(k.loadElement(type, k.buffer(unsigned(zeroSlot)), k.i64(0)), type, DType::I32);
  }
  return b.CreateAdd(zero, b.getInt32(uint32_t(plan.bytes.storedOffset)));
}

/// Step 1: X into the padded channels-last u8 scratch.
class ConvPrepareStep {
public:
  ConvPrepareStep(LoweringContext &ctx, const QuantizedConvPlan &plan, int32_t scratch)
      : plan_(plan), step_(ctx.beginStep(*plan.node, "qconv_prepare")), k_(step_.kernel()),
        b_(k_.ir()) {
    step_.setName(std::string(plan.node->opName()) + " prepare" +
                  (plan.node->name().empty() ? "" : " " + plan.node->name()));
    xSlot_ = step_.input(plan.operands.x);
    scratchSlot_ = step_.bufferSlot(scratch);
    zeroSlot_ = plan.runtimeZero ? int(step_.input(plan.operands.xZero)) : -1;
  }

  void emit() {
    Dim rows = plan_.batch * plan_.paddedH;
    std::optional<int64_t> width = plan_.paddedW.constant();
    int64_t grain = std::max<int64_t>(1, 16384 / (width.value_or(64) * plan_.channels));
    auto [begin, end] =
        step_.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, grain);
    element_ = plan_.bytes.source == DType::F32 ? b_.getFloatTy() : b_.getInt8Ty();
    stored_ = storedZero(k_, plan_, zeroSlot_);
    if (plan_.bytes.source == DType::F32) {
      scales_ = b_.CreateVectorSplat(8, llvm::ConstantFP::get(b_.getFloatTy(), plan_.scale));
      zeros_ = b_.CreateVectorSplat(8, llvm::ConstantFP::get(b_.getFloatTy(), plan_.zero));
    }
    Value *rowBytes = b_.CreateMul(k_.dim(plan_.paddedW), k_.i64(plan_.channels));
    Value *zeroByte = b_.CreateTrunc(stored_, b_.getInt8Ty());
    k_.forRange(begin, end, [&](Value *row) {
      Value *n = b_.CreateSDiv(row, k_.dim(plan_.paddedH));
      Value *h = b_.CreateSub(b_.CreateSRem(row, k_.dim(plan_.paddedH)), k_.i64(plan_.padTop));
      Value *target = b_.CreateInBoundsGEP(b_.getInt8Ty(), k_.buffer(scratchSlot_),
                                           b_.CreateMul(row, rowBytes));
      k_.ifThenElse(
          b_.CreateICmpULT(h, k_.dim(plan_.inH)),
          [&] {
            Value *left = k_.i64(plan_.padLeft * plan_.channels);
            b_.CreateMemSet(target, zeroByte, left, llvm::MaybeAlign(1));
            Value *right =
                b_.CreateAdd(left, b_.CreateMul(k_.dim(plan_.inW), k_.i64(plan_.channels)));
            b_.CreateMemSet(b_.CreateInBoundsGEP(b_.getInt8Ty(), target, right), zeroByte,
                            b_.CreateSub(rowBytes, right), llvm::MaybeAlign(1));
            emitRow(n, h, b_.CreateInBoundsGEP(b_.getInt8Ty(), target, left));
          },
          [&] { b_.CreateMemSet(target, zeroByte, rowBytes, llvm::MaybeAlign(1)); });
    });
    step_.finish();
  }

private:
  /// Input row (n, h) into `target` (position w at w * C): blocks of 8
  /// channels x 8 positions transposed in registers, a last block of the
  /// C % 8 remaining channels the same way, scalar leftover positions.
  void emitRow(Value *n, Value *h, Value *target) {
    Value *width = k_.dim(plan_.inW);
    Value *plane = b_.CreateMul(k_.dim(plan_.inH), width);
    // Element offset of (n, c = 0, h, w = 0) in X.
    Value *origin = b_.CreateAdd(b_.CreateMul(b_.CreateMul(n, k_.i64(plan_.channels)), plane),
                                 b_.CreateMul(h, width));
    Value *fullWidth = b_.CreateAnd(width, k_.i64(~int64_t(7)));
    const int64_t C = plan_.channels, fullChannels = C / 8 * 8;
    auto block = [&](Value *channel, int64_t count) {
      k_.forRange(
          k_.i64(0), fullWidth,
          [&](Value *w) { emitBlock(origin, plane, channel, count, w, target); }, 8, "w");
      k_.forRange(fullWidth, width, [&](Value *w) {
        for (int64_t i = 0; i < count; ++i)
          emitScalar(origin, plane, b_.CreateAdd(channel, k_.i64(i)), w, target);
      });
    };
    if (fullChannels > 0)
      k_.forRange(
          k_.i64(0), k_.i64(fullChannels), [&](Value *channel) { block(channel, 8); }, 8, "c");
    if (C != fullChannels)
      block(k_.i64(fullChannels), C - fullChannels);
  }

  /// The stored bytes of `x` (8 source elements) as <8 x i8>.
  Value *storedBytes(Value *x) {
    Value *q = storedActivation(b_, plan_.bytes, x, scales_, zeros_);
    return b_.CreateTrunc(q, llvm::FixedVectorType::get(b_.getInt8Ty(), 8));
  }

  void emitBlock(Value *origin, Value *plane, Value *channel, int64_t count, Value *w,
                 Value *target) {
    auto *vector = llvm::FixedVectorType::get(element_, 8);
    std::array<Value *, 8> rows;
    for (int64_t i = 0; i < 8; ++i) {
      if (i >= count) {
        rows[size_t(i)] = llvm::PoisonValue::get(llvm::FixedVectorType::get(b_.getInt8Ty(), 8));
        continue;
      }
      Value *at = b_.CreateAdd(
          origin, b_.CreateAdd(b_.CreateMul(b_.CreateAdd(channel, k_.i64(i)), plane), w));
      Value *x = b_.CreateAlignedLoad(vector, b_.CreateInBoundsGEP(element_, k_.buffer(xSlot_), at),
                                      llvm::Align(1));
      rows[size_t(i)] = storedBytes(x);
    }
    std::array<Value *, 8> columns = transpose8x8(b_, rows);
    for (int64_t i = 0; i < 8; ++i) {
      Value *at =
          b_.CreateAdd(b_.CreateMul(b_.CreateAdd(w, k_.i64(i)), k_.i64(plan_.channels)), channel);
      Value *to = b_.CreateInBoundsGEP(b_.getInt8Ty(), target, at);
      Value *column = columns[size_t(i)];
      if (count < 8) {
        std::vector<int> lanes;
        for (int64_t j = 0; j < count; ++j)
          lanes.push_back(int(j));
        column = b_.CreateShuffleVector(column, lanes);
      }
      b_.CreateAlignedStore(column, to, llvm::Align(1));
    }
  }

  void emitScalar(Value *origin, Value *plane, Value *channel, Value *w, Value *target) {
    Value *at = b_.CreateAdd(origin, b_.CreateAdd(b_.CreateMul(channel, plane), w));
    Value *x = b_.CreateLoad(element_, b_.CreateInBoundsGEP(element_, k_.buffer(xSlot_), at));
    Value *lane = b_.CreateVectorSplat(8, x);
    Value *q = b_.CreateExtractElement(storedBytes(lane), uint64_t(0));
    Value *to = b_.CreateAdd(b_.CreateMul(w, k_.i64(plan_.channels)), channel);
    b_.CreateStore(q, b_.CreateInBoundsGEP(b_.getInt8Ty(), target, to));
  }

  const QuantizedConvPlan &plan_;
  StepBuilder step_;
  KernelBuilder &k_;
  llvm::IRBuilder<> &b_;
  unsigned xSlot_ = 0, scratchSlot_ = 0;
  int zeroSlot_ = -1;
  llvm::Type *element_ = nullptr;
  Value *stored_ = nullptr, *scales_ = nullptr, *zeros_ = nullptr;
};

/// Step 2: patches, GEMM, transposed store.
class ConvGemmStep {
public:
  ConvGemmStep(LoweringContext &ctx, const QuantizedConvPlan &plan, int32_t scratch)
      : plan_(plan), step_(ctx.beginStep(*plan.node, "qconv")), k_(step_.kernel()), b_(k_.ir()) {
    scratchSlot_ = step_.bufferSlot(scratch);
    bSlot_ = step_.bufferSlot(plan.packed.packed);
    columnsSlot_ = step_.bufferSlot(plan.packed.columns);
    biasSlot_ = plan.operands.bias ? int(step_.input(plan.operands.bias)) : -1;
    zeroSlot_ = plan.runtimeZero ? int(step_.input(plan.operands.xZero)) : -1;
    ySlot_ = step_.output(plan.operands.result);
    IntegerGemmSpec spec = plan.spec;
    spec.name = ctx.uniqueName("qconv_kernel");
    spec.bias = plan.operands.bias != nullptr;
    gemm_ = emitIntegerGemm(ctx.module(), spec);
    gemm_->setLinkage(llvm::GlobalValue::InternalLinkage);
  }

  void emit() {
    Dim positions = plan_.outH * plan_.outW, batch = plan_.batch;
    // Tasks of whole tiles doing >= 256K multiply-adds; a thread's
    // consecutive tasks merge into one range, walked in blocks.
    const int64_t taskRows = std::clamp<int64_t>(
        (262144 / (plan_.depth * plan_.outChannels) + kRowQuantum - 1) / kRowQuantum * kRowQuantum,
        kRowQuantum, plan_.blockRows);
    RowsFn rows = [positions](FunctionBuilder &f) { return f.dim(positions); };
    RowsFn perChunk = [=](FunctionBuilder &f) {
      return chunkRows(f, f.dim(batch), f.dim(positions), taskRows, 0);
    };
    patches_ = stackBuffer(b_.getInt8Ty(), plan_.blockRows * plan_.rowStride, "patches");
    tile_ =
        stackBuffer(k_.storageType(plan_.outputType), plan_.blockRows * plan_.outChannels, "tile");
    rowSums_ = plan_.spec.rowSums ? stackBuffer(b_.getInt32Ty(), plan_.blockRows, "row_sums")
                                  : llvm::ConstantPointerNull::get(b_.getPtrTy());
    stored_ = storedZero(k_, plan_, zeroSlot_);
    // The patch rows' bytes past K stay zero (the kernel and the row sums
    // read them); the gathers never write there.
    if (plan_.rowStride > plan_.depth)
      k_.forRange(k_.i64(0), k_.i64(plan_.blockRows), [&](Value *row) {
        Value *tail = b_.CreateAdd(b_.CreateMul(row, k_.i64(plan_.rowStride)), k_.i64(plan_.depth));
        b_.CreateMemSet(b_.CreateInBoundsGEP(b_.getInt8Ty(), patches_, tail), b_.getInt8(0),
                        k_.i64(plan_.rowStride - plan_.depth), llvm::MaybeAlign(1));
      });
    splitItemsAndRows(
        step_, batch, rows, perChunk, [&](Value *item, Value *rowBegin, Value *rowEnd) {
          k_.forRange(
              rowBegin, rowEnd,
              [&](Value *first) {
                Value *count = k_.min(k_.i64(plan_.blockRows), b_.CreateSub(rowEnd, first));
                emitBlock(item, first, count);
              },
              plan_.blockRows, "block");
        });
    step_.finish();
  }

private:
  Value *stackBuffer(llvm::Type *type, int64_t count, const char *name) {
    auto *buffer =
        k_.hoisted().CreateAlloca(llvm::ArrayType::get(type, uint64_t(count)), nullptr, name);
    buffer->setAlignment(llvm::Align(64));
    return buffer;
  }

  /// Patch row `row` of the block for output position `position` of item `item`.
  void emitPatchRow(Value *item, Value *position, Value *row) {
    Value *oh = b_.CreateSDiv(position, k_.dim(plan_.outW));
    Value *ow = b_.CreateSRem(position, k_.dim(plan_.outW));
    const int64_t C = plan_.channels;
    Value *paddedW = k_.dim(plan_.paddedW);
    // Byte offset of the window's first tap in the scratch.
    Value *top = b_.CreateAdd(b_.CreateMul(item, k_.dim(plan_.paddedH)),
                              b_.CreateMul(oh, k_.i64(plan_.strideH)));
    Value *origin = b_.CreateMul(
        b_.CreateAdd(b_.CreateMul(top, paddedW), b_.CreateMul(ow, k_.i64(plan_.strideW))),
        k_.i64(C));
    Value *source = b_.CreateInBoundsGEP(b_.getInt8Ty(), k_.buffer(scratchSlot_), origin);
    Value *target =
        b_.CreateInBoundsGEP(b_.getInt8Ty(), patches_, b_.CreateMul(row, k_.i64(plan_.rowStride)));
    Value *tapRow = b_.CreateMul(b_.CreateMul(paddedW, k_.i64(plan_.dilationH)), k_.i64(C));
    auto copy = [&](Value *from, int64_t to, int64_t bytes) {
      b_.CreateMemCpy(b_.CreateInBoundsGEP(b_.getInt8Ty(), target, k_.i64(to)), llvm::MaybeAlign(1),
                      from, llvm::MaybeAlign(1), k_.i64(bytes));
    };
    for (int64_t kh = 0; kh < plan_.kH; ++kh) {
      Value *from = b_.CreateInBoundsGEP(b_.getInt8Ty(), source, b_.CreateMul(tapRow, k_.i64(kh)));
      if (plan_.dilationW == 1) {
        copy(from, kh * plan_.kW * C, plan_.kW * C);
        continue;
      }
      for (int64_t kw = 0; kw < plan_.kW; ++kw)
        copy(b_.CreateInBoundsGEP(b_.getInt8Ty(), from, k_.i64(kw * plan_.dilationW * C)),
             (kh * plan_.kW + kw) * C, C);
    }
    if (plan_.spec.rowSums)
      emitRowSum(target, row);
  }

  /// rowSums[row] = the sum of the patch row's bytes (rowStride, a multiple
  /// of 64, zero past K).
  void emitRowSum(Value *target, Value *row) {
    auto *bytes = llvm::FixedVectorType::get(b_.getInt8Ty(), 64);
    auto *wide = llvm::FixedVectorType::get(b_.getInt32Ty(), 64);
    Value *sum = k_.forRangeCarried(
        k_.i64(0), k_.i64(plan_.rowStride), {b_.getInt32(0)},
        [&](Value *at, llvm::ArrayRef<Value *> carried) {
          Value *chunk = b_.CreateAlignedLoad(
              bytes, b_.CreateInBoundsGEP(b_.getInt8Ty(), target, at), llvm::Align(1));
          Value *total = b_.CreateAddReduce(b_.CreateZExt(chunk, wide));
          return std::vector<Value *>{b_.CreateAdd(carried[0], total)};
        },
        64, "sum")[0];
    b_.CreateAlignedStore(sum, b_.CreateInBoundsGEP(b_.getInt32Ty(), rowSums_, row),
                          llvm::Align(4));
  }

  void emitBlock(Value *item, Value *first, Value *count) {
    k_.forRange(k_.i64(0), count,
                [&](Value *row) { emitPatchRow(item, b_.CreateAdd(first, row), row); });
    Value *scale = llvm::ConstantFP::get(b_.getFloatTy(), double(plan_.scale));
    Value *bias = biasSlot_ >= 0 ? k_.buffer(unsigned(biasSlot_))
                                 : llvm::ConstantPointerNull::get(b_.getPtrTy());
    b_.CreateCall(gemm_, {patches_, k_.i64(plan_.rowStride), k_.buffer(bSlot_), tile_,
                          k_.i64(plan_.outChannels), k_.i64(0), count, rowSums_, stored_, scale,
                          k_.buffer(columnsSlot_), bias});
    Value *positions = k_.dim(plan_.outH * plan_.outW);
    Value *offset =
        b_.CreateAdd(b_.CreateMul(b_.CreateMul(item, k_.i64(plan_.outChannels)), positions), first);
    emitTileTranspose(k_, plan_.outputType, tile_, plan_.outChannels, count,
                      k_.elementAddress(plan_.outputType, k_.buffer(ySlot_), offset), positions);
  }

  const QuantizedConvPlan &plan_;
  StepBuilder step_;
  KernelBuilder &k_;
  llvm::IRBuilder<> &b_;
  unsigned scratchSlot_ = 0, bSlot_ = 0, columnsSlot_ = 0, ySlot_ = 0;
  int biasSlot_ = -1, zeroSlot_ = -1;
  llvm::Function *gemm_ = nullptr;
  Value *patches_ = nullptr, *tile_ = nullptr, *rowSums_ = nullptr, *stored_ = nullptr;
};

/// The scratch and both steps.
void emitQuantizedConv(LoweringContext &ctx, const QuantizedConvPlan &plan) {
  PlanBuffer scratchBuffer;
  scratchBuffer.kind = BufferKind::Intermediate;
  scratchBuffer.sizeBytes = plan.batch * plan.paddedH * plan.paddedW * Dim(plan.channels);
  int32_t scratch = ctx.addBuffer(scratchBuffer);
  ConvPrepareStep(ctx, plan, scratch).emit();
  ConvGemmStep(ctx, plan, scratch).emit();
}

/// A zero point of one element: its value (0 when absent), or nullopt.
std::optional<int32_t> scalarZeroPoint(const LoweringContext &ctx, const onnxc::Value *value) {
  if (!value)
    return 0;
  const Tensor *tensor = ctx.constantValue(value);
  if (!tensor || !tensor->hasData() || tensor->numElements() != 1)
    return std::nullopt;
  return int32_t(tensor->elementAsInt64(0));
}

void lowerQuantizedConv(LoweringContext &ctx, const Node &node) {
  QuantizedConvPlan plan;
  plan.node = &node;
  plan.operands = {node.operand(0), node.operand(3), node.operand(6), node.result(0),
                   node.operand(2), node.operand(4), node.operand(5)};
  plan.bytes = ActivationBytes::of(DType::F32, node.operand(2)->dtype());
  plan.scale =
      float(requireConstant(ctx, node, node.operand(1), "activation scale").elementAsDouble(0));
  plan.zero = int32_t(
      requireConstant(ctx, node, node.operand(2), "activation zero point").elementAsInt64(0));
  if (!(std::isfinite(plan.scale) && plan.scale > 0))
    ctx.unsupported(node, "the activation scale must be positive and finite");
  if (std::string reason = planQuantizedConvGeometry(plan); !reason.empty())
    ctx.unsupported(node, reason);
  std::vector<float> scales =
      constantFloats(requireConstant(ctx, node, plan.operands.wScale, "weight scale"));
  std::vector<int32_t> zeros = {0};
  if (plan.operands.wZero)
    zeros = constantInts(requireConstant(ctx, node, plan.operands.wZero, "weight zero point"));
  std::ostringstream key;
  key << "qconv:" << plan.operands.weights->name() << ":" << plan.operands.wScale->name() << ":"
      << (plan.operands.wZero ? plan.operands.wZero->name() : "-");
  packQuantizedConvWeights(ctx, plan, scales, zeros, key.str());
  emitQuantizedConv(ctx, plan);
}

} // namespace

bool lowerIntegerConvOnGemm(LoweringContext &ctx, const Node &node) {
  const bool qlinear = node.kind() == OpKind::QLinearConv;
  QuantizedConvPlan plan;
  plan.node = &node;
  plan.operands.x = node.operand(0);
  plan.operands.weights = node.operand(qlinear ? 3 : 1);
  plan.operands.xZero = node.operand(2);
  plan.operands.wZero = node.operand(qlinear ? 5 : 3);
  plan.operands.bias = qlinear ? node.operand(8) : nullptr;
  plan.operands.result = node.result(0);
  plan.outputType = plan.operands.result->dtype();
  const Tensor *weights = ctx.constantValue(plan.operands.weights);
  if (!weights || !weights->hasData() || !planQuantizedConvGeometry(plan).empty())
    return false;
  DType xType = plan.operands.x->dtype();
  plan.bytes = ActivationBytes::of(xType, xType);
  std::optional<int32_t> zero = scalarZeroPoint(ctx, plan.operands.xZero);
  if (zero)
    plan.zero = *zero;
  else if (plan.operands.xZero->shape().numElements() == Dim(1))
    plan.runtimeZero = true;
  else
    return false;
  const Tensor *wZero = plan.operands.wZero ? ctx.constantValue(plan.operands.wZero) : nullptr;
  if (plan.operands.wZero && (!wZero || !wZero->hasData()))
    return false;
  std::vector<int32_t> zeros = wZero ? constantInts(*wZero) : std::vector<int32_t>{0};
  std::vector<float> scales = {1.0f};
  std::ostringstream key;
  key << node.opName() << ":" << plan.operands.weights->name() << ":"
      << (plan.operands.wZero ? plan.operands.wZero->name() : "-");
  if (qlinear) {
    std::optional<float> xScale = constantScale(ctx, node.operand(1));
    std::optional<float> yScale = constantScale(ctx, node.operand(6));
    const Tensor *wScale = ctx.constantValue(node.operand(4));
    std::optional<int32_t> yZero = scalarZeroPoint(ctx, node.operand(7));
    if (!xScale || !yScale || plan.runtimeZero || !yZero || !wScale || !wScale->hasData() ||
        wScale->dtype() != DType::F32)
      return false;
    scales = requantizeMultipliers(*xScale, constantFloats(*wScale), *yScale);
    plan.spec.store = IntegerGemmStore::Requantize;
    plan.spec.outputZero = *yZero;
    plan.spec.signedOutput = plan.outputType == DType::I8;
    key << ":" << node.operand(4)->name() << ":" << node.operand(1)->name() << ":"
        << node.operand(6)->name();
  } else {
    plan.spec.store = IntegerGemmStore::Int32;
  }
  if ((scales.size() != 1 && int64_t(scales.size()) != plan.outChannels) ||
      (zeros.size() != 1 && int64_t(zeros.size()) != plan.outChannels))
    return false;
  packQuantizedConvWeights(ctx, plan, scales, zeros, key.str());
  emitQuantizedConv(ctx, plan);
  return true;
}

void registerQuantizedConvLowerings(LoweringTable &table) {
  table.add(OpKind::QuantizedConv, lowerQuantizedConv);
}

} // namespace onnxc::lower
