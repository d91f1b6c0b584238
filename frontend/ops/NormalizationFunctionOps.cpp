//===- frontend/ops/NormalizationFunctionOps.cpp - Instance and GroupNorm --===//
//
// InstanceNormalization and GroupNormalization are imported as their ONNX
// function expansions, like the ops of FunctionOps.cpp, so that inference,
// the evaluator, folding and codegen's elementwise and reduction lowerings
// serve them unchanged:
//
//   InstanceNorm(x) = (x - mean) / sqrt(var + eps) * scale + B, mean and var
//                     over axes 2.. of x, scale and B viewed as [C, 1, ...]
//   GroupNorm(x)    = x viewed as [N, G, -1], normalized over its last axis,
//                     viewed back; at opset 18 scale and bias are per group
//                     (applied in the [N, G, -1] view), from opset 21 per
//                     channel (applied after, as InstanceNorm's); stash_type
//                     1 (the default) normalizes in f32
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"

namespace onnxc {

namespace {

Value *i64Vector(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

/// `value` as a scalar of `like`'s element type.
Value *scalarOfType(OnnxNode &node, Value *like, float value, const std::string &name) {
  return node.emitStep(OpKind::CastLike,
                       {node.addConstant(name, Tensor::scalar<float>(value)), like}, name);
}

float epsilonOf(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  auto it = attributes.find("epsilon");
  if (it == attributes.end())
    return 1e-5f;
  if (!it->second.isFloat())
    fail(node.describe(), ": attribute 'epsilon' must be a float");
  return it->second.asFloat();
}

/// The three inputs (X, scale, B), all present.
std::vector<Value *> threeInputs(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 3 || !operands[0] || !operands[1] || !operands[2])
    fail(node.describe(), ": ", node.proto().op_type(), " takes 3 inputs (X, scale, B), got ",
         operands.size());
  if (node.proto().output_size() != 1)
    fail(node.describe(), ": ", node.proto().op_type(), " has 1 output, got ",
         node.proto().output_size());
  return operands;
}

/// Axes 2 .. rank(x) - 1 as an i64 vector computed from x's rank.
Value *spatialAxes(OnnxNode &node, Value *x) {
  Value *rank = node.emitStep(OpKind::Shape, {node.emitStep(OpKind::Shape, {x}, "shape")}, "rank");
  return node.emitStep(OpKind::Range,
                       {node.addConstant("two", Tensor::scalar<int64_t>(2)),
                        node.emitStep(OpKind::Squeeze, {rank}, "rank"),
                        node.addConstant("step", Tensor::scalar<int64_t>(1))},
                       "axes");
}

/// (x - mean) / sqrt(var + eps) over `axes` (kept).
Value *normalized(OnnxNode &node, Value *x, Value *axes, float epsilon) {
  const AttributeMap keep = {{"keepdims", Attribute(int64_t(1))}};
  Value *mean = node.emitStep(OpKind::ReduceMean, {x, axes}, "mean", keep);
  Value *deviation = node.emitStep(OpKind::Sub, {x, mean}, "deviation");
  Value *square = node.emitStep(OpKind::Mul, {deviation, deviation}, "square");
  Value *var = node.emitStep(OpKind::ReduceMean, {square, axes}, "var", keep);
  Value *shifted =
      node.emitStep(OpKind::Add, {var, scalarOfType(node, x, epsilon, "epsilon")}, "shifted_var");
  return node.emitStep(OpKind::Div, {deviation, node.emitStep(OpKind::Sqrt, {shifted}, "std")},
                       "normalized");
}

/// y * scale + bias with [C] parameters viewed as [C, 1, ..., 1] against
/// x's rank, which broadcasts them over axis 1.
void emitChannelAffine(OnnxNode &node, Value *x, Value *y, Value *scale, Value *bias) {
  Value *shape = node.emitStep(OpKind::Shape, {x}, "shape");
  Value *rank = node.emitStep(OpKind::Shape, {shape}, "rank");
  Value *trailing = node.emitStep(OpKind::Sub, {rank, i64Vector(node, "leading", {2})}, "trailing");
  Value *ones = node.emitStep(OpKind::ConstantOfShape, {trailing}, "ones",
                              {{"value", Attribute(Tensor::fromVector<int64_t>({1}, {1}))}});
  Value *view = node.emitStep(OpKind::Concat, {i64Vector(node, "channels", {-1}), ones}, "view",
                              {{"axis", Attribute(int64_t(0))}});
  auto perChannel = [&](Value *parameter, const std::string &name) {
    return node.emitStep(OpKind::Reshape,
                         {node.emitStep(OpKind::CastLike, {parameter, y}, name), view}, name);
  };
  Value *scaled = node.emitStep(OpKind::Mul, {y, perChannel(scale, "scale")}, "scaled");
  node.emit(OpKind::Add, {scaled, perChannel(bias, "bias")}, {});
}

void importInstanceNormalization(OnnxNode &node) {
  node.requireAttributesAmong({"epsilon"});
  std::vector<Value *> in = threeInputs(node);
  Value *y = normalized(node, in[0], spatialAxes(node, in[0]), epsilonOf(node));
  emitChannelAffine(node, in[0], y, in[1], in[2]);
}

void importGroupNormalization(OnnxNode &node) {
  node.requireAttributesAmong({"epsilon", "num_groups", "stash_type"});
  std::vector<Value *> in = threeInputs(node);
  AttributeMap attributes = node.attributes();
  auto groupsIt = attributes.find("num_groups");
  if (groupsIt == attributes.end() || !groupsIt->second.isInt() || groupsIt->second.asInt() <= 0)
    fail(node.describe(), ": GroupNormalization needs a positive int attribute 'num_groups'");
  int64_t groups = groupsIt->second.asInt();
  int64_t stash = 1;
  if (auto it = attributes.find("stash_type"); it != attributes.end()) {
    if (!it->second.isInt() || (it->second.asInt() != 1 && it->second.asInt() != 0))
      fail(node.describe(),
           ": GroupNormalization stash_type must be 1 (float) or 0 (the input's type)");
    stash = it->second.asInt();
  }
  Value *x = in[0], *scale = in[1], *bias = in[2];
  bool perChannel = node.opset() >= 21;
  Value *work = x;
  if (stash == 1 && perChannel)
    work = node.emitStep(OpKind::Cast, {x}, "stashed", {{"to", Attribute(int64_t(1))}});
  Value *grouped = node.emitStep(OpKind::Reshape,
                                 {work, i64Vector(node, "group_view", {0, groups, -1})}, "grouped");
  Value *y = normalized(node, grouped, i64Vector(node, "group_axis", {2}), epsilonOf(node));
  Value *xShape = node.emitStep(OpKind::Shape, {x}, "x_shape");
  if (!perChannel) {
    // Opset 18: one scale and bias per group, in the [N, G, -1] view.
    Value *groupView = i64Vector(node, "parameter_view", {groups, 1});
    auto perGroup = [&](Value *parameter, const std::string &name) {
      return node.emitStep(OpKind::Reshape,
                           {node.emitStep(OpKind::CastLike, {parameter, y}, name), groupView},
                           name);
    };
    Value *scaled = node.emitStep(OpKind::Mul, {y, perGroup(scale, "scale")}, "scaled");
    Value *shifted = node.emitStep(OpKind::Add, {scaled, perGroup(bias, "bias")}, "shifted");
    node.emit(OpKind::Reshape, {shifted, xShape}, {});
    return;
  }
  Value *back = node.emitStep(OpKind::Reshape, {y, xShape}, "ungrouped");
  if (work != x)
    back = node.emitStep(OpKind::CastLike, {back, x}, "unstashed");
  emitChannelAffine(node, x, back, scale, bias);
}

} // namespace

void registerNormalizationFunctionImporters(OpImporterRegistry &registry) {
  registry.add({"", "InstanceNormalization", 6, OpKind::Add, importInstanceNormalization});
  registry.add({"", "GroupNormalization", 18, OpKind::Add, importGroupNormalization});
}

} // namespace onnxc
