//===- frontend/ops/MovementOps.cpp - Shape, data movement, Constant --------===//
//
// Reshape, Slice, Squeeze, Unsqueeze, Expand and Tile take their shapes and
// axes as inputs from opset 13 on, which is the IR form, so they map 1:1.
// Split gained `num_outputs` at opset 18; Constant nodes become graph
// constants rather than nodes. ScatterND gained `reduction` add/mul at 16
// and max/min at 18; the IR op takes every value, so the importer refuses
// the ones the model's opset does not have.
//
//===----------------------------------------------------------------------===//
#include "frontend/AttributeProto.h"
#include "frontend/OpImporterRegistry.h"
#include "frontend/TensorProto.h"

#include "ir/Error.h"

namespace onnxc {

namespace {

/// Before opset 18 a Split without a `split` input cuts the axis into as
/// many equal parts as it has outputs; the opset-18 form says so with
/// `num_outputs`.
void importSplitBefore18(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  AttributeMap attributes = node.attributes();
  if (operands.size() < 2)
    attributes.insert_or_assign("num_outputs", Attribute(int64_t(node.proto().output_size())));
  node.emit(OpKind::Split, operands, attributes);
}

/// ScatterND with the reductions its opset defines (the IR form is the
/// newest, so an older node is checked, not rewritten).
void importScatterND(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  std::string reduction = "none";
  if (auto it = attributes.find("reduction"); it != attributes.end()) {
    if (it->second.kind() != Attribute::Kind::String)
      fail(node.describe(), ": attribute 'reduction' must be a string");
    reduction = it->second.asString();
  }
  bool known = reduction == "none" ||
               (node.opset() >= 16 && (reduction == "add" || reduction == "mul")) ||
               (node.opset() >= 18 && (reduction == "max" || reduction == "min"));
  if (!known)
    fail(node.describe(), ": ScatterND reduction '", reduction, "' is not defined at opset ",
         node.opset(), " (none", node.opset() >= 16 ? ", add, mul" : "",
         node.opset() >= 18 ? ", max, min" : "", ")");
  node.emit(OpKind::ScatterND, node.operands(), attributes);
}

/// The one attribute of a Constant node as a tensor.
Tensor constantValue(OnnxNode &node, const onnx::AttributeProto &attr) {
  const std::string &name = attr.name();
  std::string context = node.describe() + ": attribute '" + name + "'";
  if (name == "sparse_value") {
    if (attr.type() != onnx::AttributeProto::UNDEFINED &&
        attr.type() != onnx::AttributeProto::SPARSE_TENSOR)
      fail(context, " has the wrong attribute type ", attributeTypeName(attr.type()));
    return tensorFromSparseProto(attr.sparse_tensor(), node.context().modelDir(), context);
  }
  if (name == "value_string" || name == "value_strings")
    fail(node.describe(), ": string constants are not supported");
  // Files from before `type` was required leave it UNDEFINED; trust the name then.
  auto expectType = [&](onnx::AttributeProto::AttributeType type) {
    if (attr.type() != onnx::AttributeProto::UNDEFINED && attr.type() != type)
      fail(context, " has the wrong attribute type ", attributeTypeName(attr.type()));
  };
  if (name == "value") {
    expectType(onnx::AttributeProto::TENSOR);
    if (!attr.has_t())
      fail(context, " holds no tensor");
    return tensorFromProto(attr.t(), node.context().modelDir(), context);
  }
  if (name == "value_float") {
    expectType(onnx::AttributeProto::FLOAT);
    return Tensor::scalar<float>(attr.f());
  }
  if (name == "value_int") {
    expectType(onnx::AttributeProto::INT);
    return Tensor::scalar<int64_t>(attr.i());
  }
  if (name == "value_floats") {
    expectType(onnx::AttributeProto::FLOATS);
    std::vector<float> values(attr.floats().begin(), attr.floats().end());
    return Tensor::fromVector<float>({int64_t(values.size())}, values);
  }
  if (name == "value_ints") {
    expectType(onnx::AttributeProto::INTS);
    std::vector<int64_t> values(attr.ints().begin(), attr.ints().end());
    return Tensor::fromVector<int64_t>({int64_t(values.size())}, values);
  }
  fail(context, " is not a Constant attribute");
}

/// Constants are values, not computations: the IR keeps them among the
/// graph's constants, where passes and codegen look for weights.
void importConstant(OnnxNode &node) {
  const onnx::NodeProto &proto = node.proto();
  if (proto.input_size() != 0)
    fail(node.describe(), ": Constant takes no inputs, got ", proto.input_size());
  if (proto.output_size() != 1 || proto.output(0).empty())
    fail(node.describe(), ": Constant must have exactly one named output");
  if (proto.attribute_size() != 1)
    fail(node.describe(), ": Constant needs exactly one value attribute, got ",
         proto.attribute_size());
  Tensor value = constantValue(node, proto.attribute(0));
  Value *constant = node.context().graph().addConstant(proto.output(0), std::move(value));
  node.bindOutput(0, constant);
}

/// Opset 27's `stash_type` says in which type float16 and bfloat16 ranges are computed (1,
/// the default: float32). The IR's Range computes start + i * delta in double and rounds once
/// to the output type, as accurate as either choice can be (docs/ops.md); the value is checked
/// and the attribute dropped.
void importRange27(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  if (auto it = attributes.find("stash_type"); it != attributes.end()) {
    if (!it->second.isInt() || (it->second.asInt() != 0 && it->second.asInt() != 1))
      fail(node.describe(), ": attribute 'stash_type' must be 0 or 1");
    attributes.erase(it);
  }
  node.emit(OpKind::Range, node.operands(), attributes);
}

} // namespace

void registerMovementImporters(OpImporterRegistry &registry) {
  for (OpKind kind :
       {OpKind::Reshape, OpKind::Transpose, OpKind::Concat, OpKind::Slice, OpKind::Gather,
        OpKind::Squeeze, OpKind::Unsqueeze, OpKind::Flatten, OpKind::Expand, OpKind::Tile,
        OpKind::Shape, OpKind::Size, OpKind::Range, OpKind::ConstantOfShape, OpKind::Identity,
        OpKind::Dropout, OpKind::GatherElements})
    registry.addOneToOne(kind, 13);
  registry.add({"", "ScatterND", 13, OpKind::ScatterND, importScatterND});
  registry.addOneToOne(OpKind::TensorScatter, 24);
  registry.addOneToOne(OpKind::Trilu, 14);
  registry.add({"", "Split", 13, OpKind::Split, importSplitBefore18});
  registry.addOneToOne(OpKind::Split, 18);
  registry.add({"", "Constant", 13, OpKind::Constant, importConstant});
  registry.add({"", "Range", 27, OpKind::Range, importRange27});
}

} // namespace onnxc
