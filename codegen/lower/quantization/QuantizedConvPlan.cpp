//===- codegen/lower/quantization/QuantizedConvPlan.cpp - A Conv on the integer GEMM, planned -===//
#include "codegen/lower/quantization/QuantizedConvPlan.h"

#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/convolution/ConvolutionLoweringInternal.h"

#include "ir/OpAttributes.h"

#include <algorithm>
#include <optional>

namespace onnxc::lower {
namespace {

/// Explicit pads, or SAME pads from constant sizes; false when neither.
bool resolvePads(const Node &node, const Shape &x, size_t spatial,
                 const std::vector<int64_t> &kernel, const std::vector<int64_t> &strides,
                 const std::vector<int64_t> &dilations, std::vector<int64_t> &pads) {
  ConvPadding padding = convPadding(node, spatial);
  pads = padding.pads;
  if (!padding.isSame())
    return true;
  for (size_t i = 0; i < spatial; ++i) {
    std::optional<int64_t> in = x[2 + i].constant();
    if (!in)
      return false;
    int64_t extent = (kernel[i] - 1) * dilations[i] + 1;
    int64_t out = (*in + strides[i] - 1) / strides[i];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[i] + extent - *in);
    // SAME_UPPER puts the odd extra pad at the end, SAME_LOWER at the start.
    pads[i] = padding.autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    pads[i + spatial] = total - pads[i];
  }
  return true;
}

} // namespace

std::string planQuantizedConvGeometry(QuantizedConvPlan &plan) {
  const Node &node = *plan.node;
  const Shape &x = plan.operands.x->shape(), &w = plan.operands.weights->shape(),
              &y = plan.operands.result->shape();
  if (!x.isRanked() || !w.isRanked() || !y.isRanked() || (x.rank() != 3 && x.rank() != 4) ||
      w.rank() != x.rank() || y.rank() != x.rank())
    return "only 1-D and 2-D convolutions run on the integer GEMM";
  for (const Shape *shape : {&x, &y})
    for (const Dim &d : shape->dims())
      if (d.isUnknown())
        return "a dim is unknown";
  if (node.getInt("group", 1) != 1)
    return "grouped convolutions do not run on the integer GEMM";
  const size_t spatial = x.rank() - 2;
  std::vector<int64_t> kernel;
  for (size_t i = 0; i < spatial; ++i) {
    std::optional<int64_t> extent = w[2 + i].constant();
    if (!extent || *extent <= 0)
      return "the kernel size is not constant";
    kernel.push_back(*extent);
  }
  std::optional<int64_t> channels = x[1].constant(), out = w[0].constant();
  if (!channels || !out || *channels <= 0 || *out <= 0 || !(w[1] == Dim(*channels)))
    return "the channels are not constant";
  std::vector<int64_t> strides = convSpatialAttr(node, "strides", spatial, 1, 1);
  std::vector<int64_t> dilations = convSpatialAttr(node, "dilations", spatial, 1, 1);
  std::vector<int64_t> pads;
  if (!resolvePads(node, x, spatial, kernel, strides, dilations, pads))
    return "auto_pad SAME over symbolic sizes";
  plan.batch = x[0];
  plan.channels = *channels;
  plan.outChannels = *out;
  // The last spatial dim is W; a 1-D Conv has H = 1.
  const size_t last = spatial - 1;
  plan.inW = x[2 + last];
  plan.outW = y[2 + last];
  plan.kW = kernel[last];
  plan.strideW = strides[last];
  plan.dilationW = dilations[last];
  plan.padLeft = pads[last];
  plan.paddedW = plan.inW + Dim(pads[last] + pads[last + spatial]);
  plan.inH = plan.outH = plan.paddedH = Dim(1);
  if (spatial == 2) {
    plan.inH = x[2];
    plan.outH = y[2];
    plan.kH = kernel[0];
    plan.strideH = strides[0];
    plan.dilationH = dilations[0];
    plan.padTop = pads[0];
    plan.paddedH = plan.inH + Dim(pads[0] + pads[2]);
  }
  plan.depth = plan.kH * plan.kW * plan.channels;
  plan.kPadded = integerGemmPaddedDepth(plan.depth);
  plan.rowStride = plan.kPadded;
  const int64_t outputBytes = int64_t(dtypeSize(plan.outputType));
  int64_t rows = std::min({kMaxBlockRows, kMaxPatchBytes / (plan.rowStride + 64),
                           kMaxTileElements * 4 / (plan.outChannels * outputBytes)});
  if (rows < kRowQuantum)
    return "the patches or the output channels are too many for a block of 12 rows";
  plan.blockRows = rows / kRowQuantum * kRowQuantum;
  return {};
}

void packQuantizedConvWeights(LoweringContext &ctx, QuantizedConvPlan &plan,
                              const std::vector<float> &scales, const std::vector<int32_t> &zeros,
                              const std::string &key) {
  const Tensor &weights = requireConstant(ctx, *plan.node, plan.operands.weights, "weight operand");
  const bool unsignedWeights = weights.dtype() == DType::U8;
  plan.spec.k = plan.depth;
  plan.spec.n = plan.outChannels;
  const QuantizedConvPlan &p = plan;
  const int64_t taps = p.kH * p.kW;
  std::vector<uint8_t> permuted(size_t(p.outChannels * p.depth));
  const auto *source = static_cast<const uint8_t *>(weights.rawData());
  for (int64_t m = 0; m < p.outChannels; ++m)
    for (int64_t c = 0; c < p.channels; ++c)
      for (int64_t tap = 0; tap < taps; ++tap)
        permuted[size_t(m * p.depth + tap * p.channels + c)] =
            source[(m * p.channels + c) * taps + tap];
  plan.spec.isa = ctx.integerGemmIsa();
  // The patch rows are padded to groups of 4 (planQuantizedConvGeometry sizes
  // the blocks by them), not to AMX's 64: Conv stays on 512-bit VNNI.
  if (plan.spec.isa == IntegerGemmIsa::Amx)
    plan.spec.isa = IntegerGemmIsa::Avx512Vnni;
  // vpmaddubsw clamps pair sums to s16: weights that can reach the clamp
  // take the exact generic kernel instead (IntegerGemm.h).
  if (plan.spec.isa == IntegerGemmIsa::Avx2 &&
      !integerGemmAvx2IsExact(permuted.data(), unsignedWeights, p.depth, p.outChannels,
                              /*transposed=*/true))
    plan.spec.isa = IntegerGemmIsa::Generic;
  plan.spec.rowSums = weightsNeedRowSums(zeros, unsignedWeights);
  if (plan.spec.rowSums)
    plan.rowStride = (plan.kPadded + 63) / 64 * 64; // whole vectors for the row sums
  plan.packed =
      packedWeightBuffers(ctx, key + ":" + integerGemmIsaName(plan.spec.isa) + ":hwc", [&] {
        return packIntegerGemmWeights(permuted.data(), unsignedWeights, p.depth, p.outChannels,
                                      scales, zeros, p.spec.isa, /*transposed=*/true);
      });
}

} // namespace onnxc::lower
