//===- frontend/AttributeProto.cpp - onnx::AttributeProto -> Attribute ------===//
#include "frontend/AttributeProto.h"

#include "frontend/TensorProto.h"
#include "ir/Error.h"

namespace onnxc {

namespace {

using AttrType = onnx::AttributeProto::AttributeType;

/// Files from before `type` was required leave it UNDEFINED; the populated
/// field then tells what the attribute holds.
AttrType effectiveType(const onnx::AttributeProto &proto) {
  if (proto.type() != onnx::AttributeProto::UNDEFINED)
    return proto.type();
  if (proto.has_f())
    return onnx::AttributeProto::FLOAT;
  if (proto.has_i())
    return onnx::AttributeProto::INT;
  if (proto.has_s())
    return onnx::AttributeProto::STRING;
  if (proto.has_t())
    return onnx::AttributeProto::TENSOR;
  if (proto.has_g())
    return onnx::AttributeProto::GRAPH;
  if (proto.floats_size())
    return onnx::AttributeProto::FLOATS;
  if (proto.ints_size())
    return onnx::AttributeProto::INTS;
  if (proto.strings_size())
    return onnx::AttributeProto::STRINGS;
  return onnx::AttributeProto::UNDEFINED;
}

} // namespace

const char *attributeTypeName(int type) {
  switch (type) {
  case onnx::AttributeProto::FLOAT:
    return "float";
  case onnx::AttributeProto::INT:
    return "int";
  case onnx::AttributeProto::STRING:
    return "string";
  case onnx::AttributeProto::TENSOR:
    return "tensor";
  case onnx::AttributeProto::GRAPH:
    return "graph";
  case onnx::AttributeProto::FLOATS:
    return "floats";
  case onnx::AttributeProto::INTS:
    return "ints";
  case onnx::AttributeProto::STRINGS:
    return "strings";
  case onnx::AttributeProto::TENSORS:
    return "tensors";
  case onnx::AttributeProto::GRAPHS:
    return "graphs";
  case onnx::AttributeProto::SPARSE_TENSOR:
    return "sparse tensor";
  case onnx::AttributeProto::SPARSE_TENSORS:
    return "sparse tensors";
  case onnx::AttributeProto::TYPE_PROTO:
    return "type";
  case onnx::AttributeProto::TYPE_PROTOS:
    return "types";
  default:
    return "undefined";
  }
}

Attribute attributeFromProto(const onnx::AttributeProto &proto, const ModelFolder &modelDir,
                             const std::string &nodeDescription) {
  std::string context = nodeDescription + ": attribute '" + proto.name() + "'";
  if (!proto.ref_attr_name().empty())
    fail(context, " refers to a function attribute; functions are not supported");
  AttrType type = effectiveType(proto);
  switch (type) {
  case onnx::AttributeProto::INT:
    return Attribute(int64_t(proto.i()));
  case onnx::AttributeProto::FLOAT:
    return Attribute(proto.f());
  case onnx::AttributeProto::STRING:
    return Attribute(proto.s());
  case onnx::AttributeProto::INTS:
    return Attribute(std::vector<int64_t>(proto.ints().begin(), proto.ints().end()));
  case onnx::AttributeProto::FLOATS:
    return Attribute(std::vector<float>(proto.floats().begin(), proto.floats().end()));
  case onnx::AttributeProto::STRINGS:
    return Attribute(std::vector<std::string>(proto.strings().begin(), proto.strings().end()));
  case onnx::AttributeProto::TENSOR:
    return Attribute(tensorFromProto(proto.t(), modelDir, context));
  default:
    fail(context, " of type ", attributeTypeName(type), " is not supported");
  }
}

} // namespace onnxc
