//===- passes/quantization/FuseStaticQuantizedConv.cpp - QDQ graphs' Convs ---===//
//
// A static QDQ graph writes each quantized Conv as
//
//   %q   = QuantizeLinear(%x, %s, %z)          s, z: constant scalars
//   %xq  = DequantizeLinear(%q, %s, %z)        the same s and z
//   %wq  = DequantizeLinear(%w, %ws[, %wz])    w: constant i8/u8 [M, C, k...];
//                                              ws, wz: [] or [M] (axis 0)
//   %y   = Conv(%xq, %wq[, %b]) {strides, pads, dilations, ...}
//
// (b f32 [M], usually DequantizeLinear of an i32 constant), which becomes
//
//   %y = QuantizedConv(%x, %s, %z, %w, %ws[, %wz][, %b]) {Conv's attributes}
//
// computed on the integer GEMM (codegen/lower/quantization/QuantizedConvLowering.cpp):
// the activation quantized once, its patches multiplied by the weights
// packed at compile time, the dequantization and the bias in the store.
// The integer sum is exact; the unfused Conv rounds each dequantized product
// to f32, so the two agree to f32 rounding.
//
// Left alone, with a reason under --explain: an activation quantized at run
// time, weights quantized along another axis than the output channels,
// grouped convolutions, spatial ranks other than 1 and 2, and auto_pad SAME
// over symbolic spatial sizes. Like fuse-static-quantized-matmul it must run
// before fold-constants.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/quantization/QdqMatch.h"

#include "ir/OpAttributes.h"

namespace onnxc {

using namespace match;

namespace {

/// Whether the compiled kernel takes the convolution's geometry, or why not.
MatchStatus checkGeometry(const Node &conv) {
  const Shape &x = conv.operand(0)->shape();
  if (!x.isRanked() || (x.rank() != 3 && x.rank() != 4))
    return Rejection{"only 1-D and 2-D convolutions are fused"};
  if (int64_t group = conv.getInt("group", 1); group != 1)
    return Rejection::built("a grouped convolution (group = " + std::to_string(group) +
                            ") is left to the f32 path");
  if (!x[1].constant())
    return Rejection{"the input channels are not a constant"};
  ConvPadding padding = convPadding(conv, x.rank() - 2);
  if (padding.isSame())
    for (size_t i = 2; i < x.rank(); ++i)
      if (!x[i].constant())
        return Rejection::built("auto_pad " + padding.autoPad + " over symbolic spatial sizes");
  const Value *bias = conv.operand(2);
  if (bias &&
      (bias->dtype() != DType::F32 || !bias->shape().isRanked() || bias->shape().rank() != 1))
    return Rejection{"its bias is not f32 [M]"};
  return matched();
}

/// A quantized convolution's operands, read from its dequantized ones.
struct ConvMatch {
  QuantizedActivation activation;
  QuantizedWeights weights;
};

MatchResult<ConvMatch> matchConv(const Node &conv) {
  MatchResult<QuantizedActivation> activation = matchQuantizedActivation(conv.operand(0), false);
  if (!activation)
    return activation.rejection();
  MatchResult<QuantizedWeights> weights =
      matchQuantizedWeights(conv.operand(1), 0, 0, "[M, C, kernel...] tensor");
  if (!weights)
    return weights.rejection();
  if (MatchStatus geometry = checkGeometry(conv); !geometry)
    return geometry.rejection();
  return ConvMatch{*activation, *weights};
}

class FuseStaticQuantizedConv : public Pass {
public:
  std::string_view name() const override { return "fuse-static-quantized-conv"; }
  std::string_view description() const override {
    return "fold QDQ graphs' QuantizeLinear -> DequantizeLinear -> Conv <- DequantizeLinear "
           "(constant weights) into one QuantizedConv";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false;
    for (Node *conv : graph.nodesOfKind(OpKind::Conv)) {
      MatchResult<ConvMatch> match = matchConv(*conv);
      if (!match) {
        if (definedBy(conv->operand(0), OpKind::DequantizeLinear) ||
            definedBy(conv->operand(1), OpKind::DequantizeLinear))
          context.reject(*conv, match.rejection().reason);
        continue;
      }
      const auto &[activation, weights] = *match;
      Value *bias = conv->operand(2);
      std::vector<Value *> operands = {activation.x, activation.scale, activation.zero,
                                       weights.weights, weights.scale};
      if (weights.zero || bias)
        operands.push_back(weights.zero); // null: no zero point, a bias follows
      if (bias)
        operands.push_back(bias);
      Node *fused = graph.createNode(OpKind::QuantizedConv, operands, 1, conv->name(), {}, conv);
      for (const auto &[name, value] : conv->attributes())
        fused->setAttr(name, value);
      Value *y = conv->result(0);
      std::string yName = y->name();
      fused->result(0)->setType(y->type());
      graph.replaceAllUsesWith(y, fused->result(0));
      graph.eraseNode(conv);
      graph.renameValue(fused->result(0), yName);
      context.count("fused");
      changed = true;
    }
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseStaticQuantizedConvPass() {
  return std::make_unique<FuseStaticQuantizedConv>();
}

} // namespace onnxc
