//===- frontend/ops/CausalConvOps.cpp - CausalConvWithState as Concat and Conv -===//
//
// CausalConvWithState (opset 27), the stateful depthwise 1-D convolution of
// Mamba and Gated DeltaNet, is imported as the expansion ONNX gives it, so
// the shape rules, the evaluator and Conv's lowering serve it unchanged:
//
//   padded  = Concat(past_state or zeros [B, C, k-1], input [B, C, L], axis 2)
//   output  = Conv(padded, weight [C, 1, k], [bias]) {group = C}   [B, C, L]
//             then, for activation silu / swish, y * Sigmoid(y) in f32
//   present = the last k-1 positions of padded                      [B, C, k-1]
//
// With L < k-1 and no past the present state holds zeros then the input; with
// k = 1 it is empty. The channel count C and the kernel size k must be known
// at import (Conv's group is an attribute): from the weight's shape (an
// initializer, or an input the file types), else C from the input's.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"

#include <limits>

namespace onnxc {

namespace {

Value *indexConstant(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

/// Dim `axis` of input `index` when the import sees it as a number, else -1.
int64_t knownDim(OnnxNode &node, size_t index, size_t axis) {
  std::vector<int64_t> dims = node.knownDims(index);
  return axis < dims.size() ? dims[axis] : -1;
}

/// The activation attribute: whether it asks for SiLU.
bool silu(OnnxNode &node) {
  for (const onnx::AttributeProto &attr : node.proto().attribute()) {
    if (attr.name() != "activation")
      fail(node.describe(), ": attribute '", attr.name(),
           "' of CausalConvWithState is not supported");
    if (attr.type() != onnx::AttributeProto::STRING)
      fail(node.describe(), ": attribute 'activation' must be a string");
    if (attr.s() == "silu" || attr.s() == "swish")
      return true;
    if (attr.s() != "none")
      fail(node.describe(), ": activation '", attr.s(),
           "' of CausalConvWithState is not one of none, silu, swish");
  }
  return false;
}

/// The [B, C, k-1] zeros standing for an absent past state.
Value *zeroState(OnnxNode &node, Value *input, int64_t kernel) {
  Value *leading =
      node.emitStep(OpKind::Shape, {input}, "batch_channels",
                    {{"start", Attribute(int64_t(0))}, {"end", Attribute(int64_t(2))}});
  Value *shape =
      node.emitStep(OpKind::Concat, {leading, indexConstant(node, "state_length", {kernel - 1})},
                    "state_shape", {{"axis", Attribute(int64_t(0))}});
  Value *zeros = node.emitStep(OpKind::ConstantOfShape, {shape}, "zero_state",
                               {{"value", Attribute(Tensor::fromVector<float>({1}, {0.0f}))}});
  return node.emitStep(OpKind::CastLike, {zeros, input}, "zero_state");
}

void importCausalConvWithState(OnnxNode &node) {
  bool activate = silu(node);
  std::vector<Value *> operands = node.operands();
  operands.resize(4);
  Value *input = operands[0], *weight = operands[1], *bias = operands[2], *past = operands[3];
  if (!input || !weight)
    fail(node.describe(), ": CausalConvWithState needs input and weight");
  if (node.proto().output_size() > 2)
    fail(node.describe(), ": CausalConvWithState has 2 outputs, got ", node.proto().output_size());
  std::vector<int64_t> weightDims = node.knownDims(1), inputDims = node.knownDims(0);
  if ((!weightDims.empty() && weightDims.size() != 3) ||
      (!inputDims.empty() && inputDims.size() != 3))
    fail(node.describe(), ": CausalConvWithState takes a rank-3 input and weight [C, 1, k]");
  int64_t channels = knownDim(node, 1, 0), kernel = knownDim(node, 1, 2);
  if (channels < 0)
    channels = knownDim(node, 0, 1);
  if (channels <= 0 || kernel <= 0)
    fail(node.describe(), ": CausalConvWithState needs its channel count and kernel size at import "
                          "(give the weight as an initializer or a typed input)");
  if (knownDim(node, 1, 1) > 1 ||
      (inputDims.size() == 3 && inputDims[1] >= 0 && inputDims[1] != channels))
    fail(node.describe(), ": CausalConvWithState weight must be [", channels, ", 1, ", kernel,
         "] for an input of ", channels, " channels");
  if (int64_t pastLength = knownDim(node, 3, 2);
      past && pastLength >= 0 && pastLength != kernel - 1)
    fail(node.describe(), ": past_state holds ", pastLength,
         " positions, expected k - 1 = ", kernel - 1);

  Value *state = past ? past : zeroState(node, input, kernel);
  Value *padded =
      node.emitStep(OpKind::Concat, {state, input}, "padded", {{"axis", Attribute(int64_t(2))}});
  std::vector<Value *> convOperands{padded, weight};
  if (bias)
    convOperands.push_back(bias);
  AttributeMap conv = {{"group", Attribute(channels)},
                       {"kernel_shape", Attribute(std::vector<int64_t>{kernel})}};
  if (!activate) {
    node.emitOutput(0, OpKind::Conv, convOperands, conv);
  } else {
    // As the reference computes it: in f32 whatever the input's type.
    Value *y = node.emitStep(OpKind::Conv, convOperands, "conv", conv);
    Value *wide = node.emitStep(OpKind::Cast, {y}, "conv_f32", {{"to", Attribute(int64_t(1))}});
    Value *gated = node.emitStep(OpKind::Mul,
                                 {wide, node.emitStep(OpKind::Sigmoid, {wide}, "sigmoid")}, "silu");
    node.emitOutput(0, OpKind::CastLike, {gated, y});
  }
  if (node.proto().output_size() < 2 || node.proto().output(1).empty())
    return;
  // The last k-1 positions; with k = 1 a start past the end leaves none.
  constexpr int64_t kEnd = std::numeric_limits<int64_t>::max();
  int64_t start = kernel > 1 ? -(kernel - 1) : kEnd;
  node.emitOutput(1, OpKind::Slice,
                  {padded, indexConstant(node, "state_start", {start}),
                   indexConstant(node, "state_end", {kEnd}),
                   indexConstant(node, "state_axis", {2})});
}

} // namespace

void registerCausalConvImporters(OpImporterRegistry &registry) {
  registry.add({"", "CausalConvWithState", 27, OpKind::Conv, importCausalConvWithState});
}

} // namespace onnxc
