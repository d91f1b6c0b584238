//===- codegen/lower/convolution/ConvolutionGemmLowering.cpp - Conv on the packed GEMM -===//
//
// An f32 Conv with constant weights as a GEMM per group (im2col, blocked):
//
//   patches [P, K]  x  W_g^T [K, Co/g]  =  tile [P, Co/g]     K = Ci/g * taps
//
// P runs over the output positions of one batch item. The weights are the
// GEMM's B, packed at compile time (GemmPacking.h) with the bias (and a Relu
// or Gelu that only reads the Conv) in the kernel's store. A task takes a
// range of positions and works through it in blocks of R rows: it gathers
// the R patch rows into a stack buffer (the bounded workspace: R * K floats,
// never proportional to the image), runs the packed kernel into an R x Co/g
// tile, and transposes the tile into the NCHW output, 8 x 8 in registers.
// A patch row is a copy of one contiguous run of input per (channel, outer
// kernel tap) along the last spatial dim, straight-line when the run lies
// inside the input: the patch-embedding case (stride = kernel, no padding,
// ViT) is then a pure gather of whole rows of the patch, and Whisper's
// kernel-3 Conv1d three loads per channel. Depthwise Conv (fewer than
// kMinGroupColumns output channels per group) stays on the loop nest,
// where a 32-column tile would be mostly padding, as do patches too deep
// (or groups too wide) for six rows of them to fit the stack budget.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/kernels/GemmEmitter.h"
#include "codegen/kernels/GemmPacking.h"
#include "codegen/kernels/VectorTranspose.h"
#include "codegen/lower/convolution/ConvolutionLoweringInternal.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>

namespace onnxc::lower {
namespace {

using llvm::Value;

/// Output channels per group below which the loop nest is kept.
constexpr int64_t kMinGroupColumns = 4;
/// Stack budget of the patch rows and of the output tile (floats each).
constexpr int64_t kMaxPatchFloats = 131072;
constexpr int64_t kMaxTileFloats = 98304;
/// Rows per block: the GEMM streams its packed B once per block.
constexpr int64_t kMaxBlockRows = 96;
/// Last-dim kernel extents up to this are copied straight-line.
constexpr int64_t kMaxUnrolledTaps = 32;

struct ConvGemmPlan {
  int64_t groupIn = 0, groupOut = 0, taps = 0, depth = 0;
  int64_t blockRows = 0;
  GemmBlocking blocking;
  GemmEpilogue epilogue;
  /// A Relu/Gelu computed in the GEMM's store (claimed), or null.
  const Node *activation = nullptr;
  /// 1-D, dilation 1, stride <= kernel: the patch rows are overlapping
  /// windows of the input block transposed to [position, channel] (K in
  /// (tap, channel) order), read by the GEMM in place with lda = stride * Ci.
  bool channelsLast = false;
  /// At --precision=bf16: the bf16 kernel (Bf16Gemm.h) and its weight layout.
  std::optional<Bf16GemmIsa> bf16;

  /// Packed weight elements per group (floats, or bf16 values).
  int64_t groupElements() const {
    return bf16 ? bf16GemmPackedSize(depth, groupOut)
                : packedGemmWeightsSize(depth, groupOut, blocking.nr());
  }
};

/// The Relu or Gelu that alone reads the Conv's result, as a GEMM epilogue.
const Node *fusableActivation(const LoweringContext &ctx, const Node &conv,
                              GemmActivation &activation) {
  const onnxc::Value *result = conv.result(0);
  if (result->numUses() != 1 || ctx.graph().isOutput(result))
    return nullptr;
  const Node *user = result->uses()[0].user;
  if (user->numOperands() != 1 || user->result(0)->dtype() != DType::F32 ||
      !(user->result(0)->shape() == result->shape()))
    return nullptr;
  if (user->kind() == OpKind::Relu)
    activation = GemmActivation::Relu;
  else if (user->kind() == OpKind::Gelu && user->getString("approximate", "none") == "none")
    activation = GemmActivation::GeluErf;
  else if (user->kind() == OpKind::Gelu && user->getString("approximate", "none") == "tanh")
    activation = GemmActivation::GeluTanh;
  else
    return nullptr;
  return user;
}

std::optional<ConvGemmPlan> planConvGemm(const LoweringContext &ctx, const Node &node,
                                         const ConvShape &c, const Tensor *weights) {
  if (c.dtype != DType::F32 || !ctx.hasAvx2Fma() || !weights || !weights->hasData())
    return std::nullopt;
  const Shape &ws = node.operand(1)->shape();
  std::optional<int64_t> groupIn = ws[1].constant(), out = c.outChannels.constant();
  if (!groupIn || !out || *groupIn <= 0)
    return std::nullopt;
  ConvGemmPlan plan;
  plan.groupIn = *groupIn;
  plan.groupOut = *out / c.group;
  plan.taps = 1;
  for (const Dim &d : c.kernel) {
    if (!d.constant() || *d.constant() <= 0)
      return std::nullopt;
    plan.taps *= *d.constant();
  }
  plan.depth = plan.groupIn * plan.taps;
  // A block of one tile's rows must fit the stack budgets.
  plan.blocking = chooseGemmBlocking(plan.depth, ctx.gemmLanes());
  plan.bf16 = ctx.bf16GemmIsa();
  // Blocks of whole AMX tiles (32 rows) on the AMX kernel.
  const int64_t mr = plan.bf16 == Bf16GemmIsa::Amx ? 32 : plan.blocking.mr();
  if (plan.groupOut < kMinGroupColumns || plan.depth * mr > kMaxPatchFloats ||
      plan.groupOut * mr > kMaxTileFloats)
    return std::nullopt;
  int64_t rows =
      std::min({kMaxBlockRows, kMaxPatchFloats / plan.depth, kMaxTileFloats / plan.groupOut});
  plan.blockRows = std::max<int64_t>(mr, rows / mr * mr);
  plan.epilogue.bias = node.operand(2) != nullptr;
  plan.activation = fusableActivation(ctx, node, plan.epilogue.activation);
  plan.channelsLast =
      c.spatialDims == 1 && c.dilations[0] == 1 && c.strides[0] <= *c.kernel[0].constant();
  return plan;
}

/// Each group's [Co/g, K] rows of W packed as a [K, Co/g] B operand.
ConstantBytes packConvWeights(const Tensor &weights, const ConvGemmPlan &plan, int64_t groups) {
  const int64_t groupElements = plan.groupElements();
  const size_t elementBytes = plan.bf16 ? 2 : sizeof(float);
  auto bytes =
      std::make_shared<std::vector<uint8_t>>(size_t(groups * groupElements) * elementBytes);
  const float *source = weights.data<float>();
  // The channels-last form reads K in (tap, channel) order.
  std::vector<float> permuted;
  if (plan.channelsLast) {
    permuted.resize(size_t(weights.numElements()));
    for (int64_t row = 0; row < groups * plan.groupOut; ++row)
      for (int64_t channel = 0; channel < plan.groupIn; ++channel)
        for (int64_t tap = 0; tap < plan.taps; ++tap)
          permuted[size_t(row * plan.depth + tap * plan.groupIn + channel)] =
              source[row * plan.depth + channel * plan.taps + tap];
    source = permuted.data();
  }
  for (int64_t g = 0; g < groups; ++g) {
    const float *group = source + g * plan.groupOut * plan.depth;
    uint8_t *target = bytes->data() + size_t(g * groupElements) * elementBytes;
    if (plan.bf16) {
      std::vector<uint16_t> packed =
          packBf16GemmWeights(group, plan.depth, plan.groupOut, /*transposed=*/true);
      std::memcpy(target, packed.data(), packed.size() * 2);
    } else {
      packGemmWeights(group, plan.depth, plan.groupOut, /*transposed=*/true, plan.blocking,
                      reinterpret_cast<float *>(target));
    }
  }
  return ConstantBytes(bytes);
}

/// Emits the gather of `count` patch rows (output positions `first`...) of
/// group `group` into `patches` ([count, depth] floats, channel-major
/// like the weights' rows).
class PatchGather {
public:
  PatchGather(KernelBuilder &k, const ConvShape &c, const ConvGemmPlan &plan)
      : k_(k), c_(c), plan_(plan), pads_(convPadsBefore(k, c)) {
    const size_t n = c.spatialDims;
    for (size_t i = 0; i < n; ++i) {
      outExtents_.push_back(k.dim(c.outSpatial[i]));
      inExtents_.push_back(k.dim(c.inSpatial[i]));
      inStrides_.push_back(k.dim(dimProduct(c.inSpatial, i + 1, n)));
      kernelStrides_.push_back(k.i64(*dimProduct(c.kernel, i + 1, n).constant()));
      kernelExtents_.push_back(k.i64(*c.kernel[i].constant()));
    }
    inSize_ = k.dim(dimProduct(c.inSpatial, 0, n));
  }

  /// `xBatch` is the element offset of the batch item in `input`.
  void emit(Value *input, Value *xBatch, Value *group, Value *first, Value *count, Value *patches) {
    llvm::IRBuilder<> &b = k_.ir();
    const size_t n = c_.spatialDims;
    Value *firstChannel = b.CreateMul(group, k_.i64(plan_.groupIn));
    k_.forRange(k_.i64(0), count, [&](Value *row) {
      std::vector<Value *> out = k_.unflatten(b.CreateAdd(first, row), outExtents_);
      std::vector<Value *> origin(n);
      for (size_t i = 0; i < n; ++i)
        origin[i] = b.CreateSub(b.CreateMul(out[i], k_.i64(c_.strides[i])), pads_[i]);
      Value *rowBase = b.CreateMul(row, k_.i64(plan_.depth));
      std::vector<Value *> outerExtents(kernelExtents_.begin(), kernelExtents_.end() - 1);
      k_.loopNest(outerExtents, [&](llvm::ArrayRef<Value *> tap) {
        Value *inside = b.getTrue();
        Value *inOffset = k_.i64(0), *tapOffset = k_.i64(0);
        for (size_t i = 0; i + 1 < n; ++i) {
          Value *position = b.CreateAdd(origin[i], b.CreateMul(tap[i], k_.i64(c_.dilations[i])));
          // One unsigned compare covers both 0 <= position and position < size.
          inside = b.CreateAnd(inside, b.CreateICmpULT(position, inExtents_[i]));
          inOffset = b.CreateAdd(inOffset, b.CreateMul(position, inStrides_[i]));
          tapOffset = b.CreateAdd(tapOffset, b.CreateMul(tap[i], kernelStrides_[i]));
        }
        Value *destination = b.CreateAdd(rowBase, tapOffset);
        k_.ifThenElse(
            inside,
            [&] {
              Value *channel = b.CreateAdd(xBatch, b.CreateMul(firstChannel, inSize_));
              emitRuns(input, b.CreateAdd(channel, b.CreateAdd(inOffset, origin[n - 1])),
                       origin[n - 1], destination, patches);
            },
            [&] { emitZeroRuns(destination, patches); });
      });
    });
  }

private:
  /// For every channel of the group: patches[destination + ci*taps + kw] =
  /// x[source + ci*inSize + kw*dilation] for kw in the last kernel dim, 0
  /// where the tap falls into the padding. `start` is the first tap's
  /// input position along the last dim.
  void emitRuns(Value *input, Value *source, Value *start, Value *destination, Value *patches) {
    llvm::IRBuilder<> &b = k_.ir();
    const size_t n = c_.spatialDims;
    const int64_t extent = *c_.kernel[n - 1].constant(), dilation = c_.dilations[n - 1];
    Value *size = inExtents_[n - 1];
    Value *lastTap = b.CreateAdd(start, k_.i64((extent - 1) * dilation));
    Value *interior =
        b.CreateAnd(b.CreateICmpSGE(start, k_.i64(0)), b.CreateICmpSLT(lastTap, size));
    auto perChannel = [&](llvm::function_ref<void(Value *, Value *)> body) {
      k_.forRange(k_.i64(0), k_.i64(plan_.groupIn), [&](Value *channel) {
        Value *from = b.CreateAdd(source, b.CreateMul(channel, inSize_));
        Value *to = b.CreateAdd(destination, b.CreateMul(channel, k_.i64(plan_.taps)));
        body(from, to);
      });
    };
    auto copyTap = [&](Value *from, Value *to, Value *tap) {
      Value *value =
          k_.loadElement(DType::F32, input, b.CreateAdd(from, b.CreateMul(tap, k_.i64(dilation))));
      k_.storeElement(DType::F32, value, patches, b.CreateAdd(to, tap));
    };
    auto general = [&] {
      // Taps [lo, hi) read the input, the rest are padding.
      Value *lo = k_.ceilDiv(k_.max(b.CreateNeg(start), k_.i64(0)), k_.i64(dilation));
      Value *hi = k_.ceilDiv(k_.max(b.CreateSub(size, start), k_.i64(0)), k_.i64(dilation));
      lo = k_.min(lo, k_.i64(extent));
      hi = k_.max(k_.min(hi, k_.i64(extent)), lo);
      perChannel([&](Value *from, Value *to) {
        auto zero = [&](Value *tap) {
          k_.storeElement(DType::F32, k_.constant(DType::F32, 0.0), patches, b.CreateAdd(to, tap));
        };
        k_.forRange(k_.i64(0), lo, zero, 1, "pad");
        k_.forRange(
            lo, hi, [&](Value *tap) { copyTap(from, to, tap); }, 1, "tap");
        k_.forRange(hi, k_.i64(extent), zero, 1, "pad");
      });
    };
    if (extent > kMaxUnrolledTaps)
      return general();
    k_.ifThenElse(
        interior,
        [&] {
          perChannel([&](Value *from, Value *to) {
            for (int64_t tap = 0; tap < extent; ++tap)
              copyTap(from, to, k_.i64(tap));
          });
        },
        general);
  }

  void emitZeroRuns(Value *destination, Value *patches) {
    llvm::IRBuilder<> &b = k_.ir();
    const int64_t extent = *c_.kernel[c_.spatialDims - 1].constant();
    k_.forRange(k_.i64(0), k_.i64(plan_.groupIn), [&](Value *channel) {
      Value *to = b.CreateAdd(destination, b.CreateMul(channel, k_.i64(plan_.taps)));
      k_.forRange(k_.i64(0), k_.i64(extent), [&](Value *tap) {
        k_.storeElement(DType::F32, k_.constant(DType::F32, 0.0), patches, b.CreateAdd(to, tap));
      });
    });
  }

  KernelBuilder &k_;
  const ConvShape &c_;
  const ConvGemmPlan &plan_;
  std::vector<Value *> pads_;
  std::vector<Value *> outExtents_, inExtents_, inStrides_, kernelStrides_, kernelExtents_;
  Value *inSize_ = nullptr;
};

/// The channels-last block of a 1-D Conv: rows[t * channels + ci] =
/// x[channel ci, start + t] (0 outside [0, length)) for t in [0, positions),
/// 8 x 8 through registers where a block lies inside the input.
void emitChannelsLastBlock(KernelBuilder &k, Value *input, Value *channelBase, int64_t channels,
                           Value *length, Value *start, Value *positions, Value *rows) {
  llvm::IRBuilder<> &b = k.ir();
  auto *vector = llvm::FixedVectorType::get(b.getFloatTy(), 8);
  auto scalar = [&](Value *t, Value *channel) {
    Value *position = b.CreateAdd(start, t);
    Value *to = b.CreateAdd(b.CreateMul(t, k.i64(channels)), channel);
    k.ifThenElse(
        b.CreateICmpULT(position, length),
        [&] {
          Value *from =
              b.CreateAdd(channelBase, b.CreateAdd(b.CreateMul(channel, length), position));
          k.storeElement(DType::F32, k.loadElement(DType::F32, input, from), rows, to);
        },
        [&] { k.storeElement(DType::F32, k.constant(DType::F32, 0.0), rows, to); });
  };
  const int64_t fullChannels = channels / 8 * 8;
  Value *fullPositions = b.CreateAnd(positions, k.i64(~int64_t(7)));
  k.forRange(
      k.i64(0), k.i64(fullChannels),
      [&](Value *channel) {
        k.forRange(
            k.i64(0), fullPositions,
            [&](Value *t) {
              Value *position = b.CreateAdd(start, t);
              Value *inside = b.CreateAnd(b.CreateICmpSGE(position, k.i64(0)),
                                          b.CreateICmpSLE(b.CreateAdd(position, k.i64(8)), length));
              k.ifThenElse(
                  inside,
                  [&] {
                    std::array<Value *, 8> lanes;
                    for (int64_t i = 0; i < 8; ++i) {
                      Value *from = b.CreateAdd(
                          channelBase,
                          b.CreateAdd(b.CreateMul(b.CreateAdd(channel, k.i64(i)), length),
                                      position));
                      lanes[size_t(i)] = b.CreateAlignedLoad(
                          vector, k.elementAddress(DType::F32, input, from), llvm::Align(4));
                    }
                    std::array<Value *, 8> transposed = transpose8x8(b, lanes);
                    for (int64_t i = 0; i < 8; ++i) {
                      Value *to = b.CreateAdd(
                          b.CreateMul(b.CreateAdd(t, k.i64(i)), k.i64(channels)), channel);
                      b.CreateAlignedStore(transposed[size_t(i)],
                                           k.elementAddress(DType::F32, rows, to), llvm::Align(4));
                    }
                  },
                  [&] {
                    for (int64_t i = 0; i < 8; ++i)
                      for (int64_t j = 0; j < 8; ++j)
                        scalar(b.CreateAdd(t, k.i64(j)), b.CreateAdd(channel, k.i64(i)));
                  });
            },
            8, "t");
        k.forRange(fullPositions, positions, [&](Value *t) {
          for (int64_t i = 0; i < 8; ++i)
            scalar(t, b.CreateAdd(channel, k.i64(i)));
        });
      },
      8, "channel");
  k.forRange(k.i64(fullChannels), k.i64(channels), [&](Value *channel) {
    k.forRange(k.i64(0), positions, [&](Value *t) { scalar(t, channel); });
  });
}

} // namespace

void emitTileTranspose(KernelBuilder &k, DType type, Value *tile, int64_t columns, Value *count,
                       Value *output, Value *ldOutput) {
  llvm::IRBuilder<> &b = k.ir();
  auto *vector = llvm::FixedVectorType::get(k.storageType(type), 8);
  const llvm::Align align(uint64_t(dtypeSize(type)));
  const int64_t fullColumns = columns / 8 * 8;
  Value *fullRows = b.CreateAnd(count, k.i64(~int64_t(7)));
  auto scalar = [&](Value *row, Value *column) {
    Value *value = k.loadElement(type, tile, b.CreateAdd(b.CreateMul(row, k.i64(columns)), column));
    k.storeElement(type, value, output, b.CreateAdd(b.CreateMul(column, ldOutput), row));
  };
  k.forRange(
      k.i64(0), k.i64(fullColumns),
      [&](Value *column) {
        k.forRange(
            k.i64(0), fullRows,
            [&](Value *row) {
              std::array<Value *, 8> rows;
              for (int64_t i = 0; i < 8; ++i) {
                Value *at =
                    b.CreateAdd(b.CreateMul(b.CreateAdd(row, k.i64(i)), k.i64(columns)), column);
                rows[size_t(i)] =
                    b.CreateAlignedLoad(vector, k.elementAddress(type, tile, at), align);
              }
              std::array<Value *, 8> transposed = transpose8x8(b, rows);
              for (int64_t i = 0; i < 8; ++i) {
                Value *at = b.CreateAdd(b.CreateMul(b.CreateAdd(column, k.i64(i)), ldOutput), row);
                b.CreateAlignedStore(transposed[size_t(i)], k.elementAddress(type, output, at),
                                     align);
              }
            },
            8, "row");
        k.forRange(fullRows, count, [&](Value *row) {
          for (int64_t i = 0; i < 8; ++i)
            scalar(row, b.CreateAdd(column, k.i64(i)));
        });
      },
      8, "column");
  k.forRange(k.i64(fullColumns), k.i64(columns), [&](Value *column) {
    k.forRange(k.i64(0), count, [&](Value *row) { scalar(row, column); });
  });
}

namespace {

/// The step's slots and GEMM kernel.
struct ConvGemmSlots {
  unsigned x = 0, w = 0, y = 0;
  int bias = -1;
  llvm::Function *gemm = nullptr;
};

/// Declares the step's buffers (the weights packed once per weight and
/// layout), claims a fused activation and emits the GEMM kernel.
ConvGemmSlots declareConvGemm(LoweringContext &ctx, StepBuilder &step, const Node &node,
                              const ConvGemmPlan &plan, const Tensor &weights, int64_t groups) {
  ConvGemmSlots slots;
  slots.x = step.input(node.operand(0));
  std::ostringstream key;
  key << "conv-gemm-weights:" << node.operand(1)->name() << ":g" << groups << ":kc"
      << plan.blocking.kc << ":nr" << plan.blocking.nr() << (plan.channelsLast ? ":tap-major" : "")
      << (plan.bf16 ? ":bf16" : "");
  slots.w = step.bufferSlot(
      ctx.sharedConstant(key.str(), [&] { return packConvWeights(weights, plan, groups); }));
  slots.bias = node.operand(2) ? int(step.input(node.operand(2))) : -1;
  const onnxc::Value *result = node.result(0);
  if (plan.activation) {
    ctx.claim(*plan.activation);
    result = plan.activation->result(0);
    step.setName("Conv+" + std::string(plan.activation->opName()) +
                 (node.name().empty() ? "" : " " + node.name()));
  }
  slots.y = step.output(result);
  if (plan.bf16) {
    Bf16GemmSpec spec{ctx.uniqueName("conv_gemm_bf16_kernel"), plan.depth, plan.groupOut,
                      plan.epilogue, *plan.bf16};
    slots.gemm = emitBf16Gemm(ctx.module(), spec);
    requireBf16GemmFeatures(ctx, *plan.bf16);
  } else {
    PackedGemmSpec spec{ctx.uniqueName("conv_gemm_kernel"), plan.depth, plan.groupOut,
                        plan.epilogue, plan.blocking};
    slots.gemm = emitPackedGemm(ctx.module(), spec);
  }
  slots.gemm->setLinkage(llvm::GlobalValue::InternalLinkage);
  return slots;
}

/// Emits, in the step's kernel, one block of output positions of one group:
/// patch rows, GEMM into the tile, tile into the output.
class ConvGemmBlock {
public:
  ConvGemmBlock(KernelBuilder &k, const ConvShape &c, const ConvGemmPlan &plan,
                const ConvGemmSlots &slots)
      : k_(k), c_(c), plan_(plan), slots_(slots), gather_(k, c, plan), pads_(convPadsBefore(k, c)) {
    patches_ = stackFloats(plan.blockRows * plan.depth, "patches");
    tile_ = stackFloats(plan.blockRows * plan.groupOut, "tile");
    positions_ = k.dim(dimProduct(c.outSpatial, 0, c.spatialDims));
    inSize_ = k.dim(dimProduct(c.inSpatial, 0, c.spatialDims));
    null_ = llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(k.context()));
  }

  /// The input offset of batch item `item`.
  Value *batchOffset(Value *item) {
    return k_.ir().CreateMul(item, k_.ir().CreateMul(k_.dim(c_.inChannels), inSize_));
  }

  /// Output positions [first, first + count) of `group` in batch `item`.
  void emit(Value *item, Value *xBatch, Value *first, Value *count, Value *group) {
    llvm::IRBuilder<> &b = k_.ir();
    Value *lda = k_.i64(plan_.depth);
    if (plan_.channelsLast) {
      // Input positions of the block's windows: (count - 1) * stride + kernel.
      Value *stride = k_.i64(c_.strides[0]);
      Value *start = b.CreateSub(b.CreateMul(first, stride), pads_[0]);
      Value *span =
          b.CreateAdd(b.CreateMul(b.CreateSub(count, k_.i64(1)), stride), k_.i64(plan_.taps));
      Value *channelBase =
          b.CreateAdd(xBatch, b.CreateMul(b.CreateMul(group, k_.i64(plan_.groupIn)), inSize_));
      emitChannelsLastBlock(k_, k_.buffer(slots_.x), channelBase, plan_.groupIn, inSize_, start,
                            span, patches_);
      lda = k_.i64(c_.strides[0] * plan_.groupIn);
    } else {
      gather_.emit(k_.buffer(slots_.x), xBatch, group, first, count, patches_);
    }
    Value *packed = k_.elementAddress(plan_.bf16 ? DType::BF16 : DType::F32, k_.buffer(slots_.w),
                                      b.CreateMul(group, k_.i64(plan_.groupElements())));
    Value *firstColumn = b.CreateMul(group, k_.i64(plan_.groupOut));
    Value *bias = slots_.bias >= 0
                      ? k_.elementAddress(DType::F32, k_.buffer(unsigned(slots_.bias)), firstColumn)
                      : null_;
    b.CreateCall(slots_.gemm, {patches_, lda, packed, tile_, k_.i64(plan_.groupOut), k_.i64(0),
                               count, bias, null_, k_.i64(0), k_.i64(0), k_.i64(plan_.groupOut)});
    Value *outChannels = k_.i64(plan_.groupOut * c_.group);
    Value *outputOffset = b.CreateAdd(
        b.CreateMul(b.CreateAdd(b.CreateMul(item, outChannels), firstColumn), positions_), first);
    emitTileTranspose(k_, DType::F32, tile_, plan_.groupOut, count,
                      k_.elementAddress(DType::F32, k_.buffer(slots_.y), outputOffset), positions_);
  }

private:
  Value *stackFloats(int64_t count, const char *name) {
    auto *buffer = k_.hoisted().CreateAlloca(
        llvm::ArrayType::get(k_.ir().getFloatTy(), uint64_t(count)), nullptr, name);
    buffer->setAlignment(llvm::Align(64));
    return buffer;
  }

  KernelBuilder &k_;
  const ConvShape &c_;
  const ConvGemmPlan &plan_;
  const ConvGemmSlots &slots_;
  PatchGather gather_;
  std::vector<Value *> pads_;
  Value *patches_ = nullptr, *tile_ = nullptr, *positions_ = nullptr, *inSize_ = nullptr;
  Value *null_ = nullptr;
};

} // namespace

bool lowerConvOnGemm(LoweringContext &ctx, const Node &node, const ConvShape &c) {
  const Tensor *weights = ctx.constantValue(node.operand(1));
  std::optional<ConvGemmPlan> planned = planConvGemm(ctx, node, c, weights);
  if (!planned)
    return false;
  const ConvGemmPlan &plan = *planned;
  StepBuilder step = ctx.beginStep(node, "conv_gemm");
  ConvGemmSlots slots = declareConvGemm(ctx, step, node, plan, *weights, c.group);

  Dim positions = dimProduct(c.outSpatial, 0, c.spatialDims);
  Dim batch = c.batch;
  // Tasks of whole tiles doing >= 64K multiply-adds each; a thread's
  // consecutive tasks merge into one range, walked in blocks of R rows.
  const int64_t mr = plan.blocking.mr();
  const int64_t taskRows = std::clamp<int64_t>(
      (65536 / (plan.depth * plan.groupOut * c.group) + mr - 1) / mr * mr, mr, plan.blockRows);
  RowsFn rows = [positions](FunctionBuilder &f) { return f.dim(positions); };
  RowsFn perChunk = [=](FunctionBuilder &f) {
    return chunkRows(f, f.dim(batch), f.dim(positions), taskRows, 0, mr);
  };

  KernelBuilder &k = step.kernel();
  ConvGemmBlock block(k, c, plan, slots);
  splitItemsAndRows(step, batch, rows, perChunk, [&](Value *item, Value *rowBegin, Value *rowEnd) {
    Value *xBatch = block.batchOffset(item);
    k.forRange(
        rowBegin, rowEnd,
        [&](Value *first) {
          Value *count = k.min(k.i64(plan.blockRows), k.ir().CreateSub(rowEnd, first));
          k.forRange(
              k.i64(0), k.i64(c.group),
              [&](Value *group) { block.emit(item, xBatch, first, count, group); }, 1, "group");
        },
        plan.blockRows, "block");
  });
  step.finish();
  return true;
}

} // namespace onnxc::lower
