//===- exporter/OnnxGraphWriter.cpp - Building one ONNX GraphProto ----------===//
#include "exporter/OnnxGraphWriter.h"

#include "ir/Error.h"

namespace onnxc {

int32_t onnxDataType(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return onnx::TensorProto::FLOAT;
  case DType::F64:
    return onnx::TensorProto::DOUBLE;
  case DType::F16:
    return onnx::TensorProto::FLOAT16;
  case DType::BF16:
    return onnx::TensorProto::BFLOAT16;
  case DType::I8:
    return onnx::TensorProto::INT8;
  case DType::U8:
    return onnx::TensorProto::UINT8;
  case DType::I16:
    return onnx::TensorProto::INT16;
  case DType::U16:
    return onnx::TensorProto::UINT16;
  case DType::I32:
    return onnx::TensorProto::INT32;
  case DType::U32:
    return onnx::TensorProto::UINT32;
  case DType::I64:
    return onnx::TensorProto::INT64;
  case DType::U64:
    return onnx::TensorProto::UINT64;
  case DType::Bool:
    return onnx::TensorProto::BOOL;
  case DType::I4:
    return 22; // INT4, newer than the onnx headers onnxc builds against
  case DType::U4:
    return 21; // UINT4
  case DType::Unknown:
    return onnx::TensorProto::UNDEFINED;
  }
  return onnx::TensorProto::UNDEFINED;
}

void tensorToProto(const Tensor &tensor, onnx::TensorProto &proto, const std::string &context) {
  if (!tensor.hasData())
    fail(context, ": its contents are elided (read from text IR), so it cannot be written as "
                  "ONNX; export from the .onnx model instead");
  if (tensor.dtype() == DType::Unknown)
    fail(context, ": a tensor of unknown dtype cannot be written as ONNX");
  proto.set_data_type(onnxDataType(tensor.dtype()));
  for (int64_t dim : tensor.dims())
    proto.add_dims(dim);
  if (isFourBit(tensor.dtype())) {
    // ONNX packs i4/u4 two to a byte, the first element in the low nibble.
    const auto *data = static_cast<const uint8_t *>(tensor.rawData());
    std::string packed(size_t((tensor.numElements() + 1) / 2), '\0');
    for (int64_t i = 0; i < tensor.numElements(); ++i)
      packed[size_t(i / 2)] =
          char(uint8_t(packed[size_t(i / 2)]) | (data[i] & 0xf) << (4 * (i % 2)));
    proto.set_raw_data(std::move(packed));
    return;
  }
  // raw_data is little-endian, as the host is (frontend/TensorProto.cpp).
  proto.set_raw_data(tensor.rawData(), tensor.byteSize());
}

void addIntAttribute(onnx::NodeProto &node, const std::string &name, int64_t value) {
  onnx::AttributeProto &attr = *node.add_attribute();
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::INT);
  attr.set_i(value);
}

void addIntsAttribute(onnx::NodeProto &node, const std::string &name,
                      const std::vector<int64_t> &values) {
  onnx::AttributeProto &attr = *node.add_attribute();
  attr.set_name(name);
  attr.set_type(onnx::AttributeProto::INTS);
  for (int64_t value : values)
    attr.add_ints(value);
}

namespace {

void attributeToProto(const std::string &name, const Attribute &attr, onnx::AttributeProto &proto,
                      const std::string &context) {
  proto.set_name(name);
  switch (attr.kind()) {
  case Attribute::Kind::Int:
    proto.set_type(onnx::AttributeProto::INT);
    proto.set_i(attr.asInt());
    return;
  case Attribute::Kind::Float:
    proto.set_type(onnx::AttributeProto::FLOAT);
    proto.set_f(attr.asFloat());
    return;
  case Attribute::Kind::String:
    proto.set_type(onnx::AttributeProto::STRING);
    proto.set_s(attr.asString());
    return;
  case Attribute::Kind::Ints:
    proto.set_type(onnx::AttributeProto::INTS);
    for (int64_t v : attr.asInts())
      proto.add_ints(v);
    return;
  case Attribute::Kind::Floats:
    proto.set_type(onnx::AttributeProto::FLOATS);
    for (float v : attr.asFloats())
      proto.add_floats(v);
    return;
  case Attribute::Kind::Strings:
    proto.set_type(onnx::AttributeProto::STRINGS);
    for (const std::string &v : attr.asStrings())
      proto.add_strings(v);
    return;
  case Attribute::Kind::Tensor:
    proto.set_type(onnx::AttributeProto::TENSOR);
    tensorToProto(attr.asTensor(), *proto.mutable_t(), context + " attribute '" + name + "'");
    return;
  }
}

} // namespace

OnnxGraphWriter::OnnxGraphWriter(const Graph &graph, onnx::GraphProto &proto,
                                 OnnxExportReport &report)
    : graph_(graph), proto_(proto), report_(report) {}

std::string OnnxGraphWriter::name(const Value *value) const {
  if (!value)
    return "";
  auto it = renamed_.find(value);
  return it == renamed_.end() ? value->name() : it->second;
}

std::string OnnxGraphWriter::freshName(const std::string &base) {
  std::string candidate = base;
  for (unsigned i = 1; graph_.findValue(candidate) || taken_.count(candidate); ++i)
    candidate = base + "_" + std::to_string(i);
  taken_.insert(candidate);
  return candidate;
}

onnx::NodeProto &OnnxGraphWriter::addNode(std::string_view opType, std::vector<std::string> inputs,
                                          std::vector<std::string> outputs,
                                          const std::string &nodeName) {
  while (!inputs.empty() && inputs.back().empty())
    inputs.pop_back();
  onnx::NodeProto &node = *proto_.add_node();
  node.set_op_type(std::string(opType));
  // onnxruntime refuses two nodes of one name; a pass may have left the
  // name of the node it fused on the fused op and on a survivor.
  if (!nodeName.empty()) {
    std::string unique = nodeName;
    for (unsigned i = 1; !nodeNames_.insert(unique).second; ++i)
      unique = nodeName + "_" + std::to_string(i);
    node.set_name(unique);
  }
  for (const std::string &input : inputs)
    node.add_input(input);
  for (const std::string &output : outputs)
    node.add_output(output);
  return node;
}

std::string OnnxGraphWriter::addTemp(std::string_view opType, std::vector<std::string> inputs,
                                     const std::string &hint, const std::string &nodeName) {
  std::string output = freshName(hint);
  addNode(opType, std::move(inputs), {output},
          nodeName.empty() ? "" : nodeName + "/" + std::string(opType));
  return output;
}

std::string OnnxGraphWriter::addInitializer(const std::string &base, const Tensor &tensor) {
  std::string name = freshName(base);
  onnx::TensorProto &proto = *proto_.add_initializer();
  proto.set_name(name);
  tensorToProto(tensor, proto, "constant '" + name + "'");
  return name;
}

std::string OnnxGraphWriter::int64s(const std::string &base, const std::vector<int64_t> &values) {
  return addInitializer(base, Tensor::fromVector<int64_t>({int64_t(values.size())}, values));
}

std::string OnnxGraphWriter::scalar(const std::string &base, DType dtype, double value) {
  Tensor tensor(dtype, {});
  tensor.setElementFromDouble(0, value);
  return addInitializer(base, tensor);
}

void OnnxGraphWriter::copyAttributes(const Node &node, onnx::NodeProto &proto,
                                     const std::unordered_set<std::string> &skip) const {
  for (const auto &[attrName, attr] : node.attributes())
    if (!skip.count(attrName))
      attributeToProto(attrName, attr, *proto.add_attribute(), node.describe());
}

void OnnxGraphWriter::exportAsIs(const Node &node) {
  std::vector<std::string> inputs, outputs;
  for (const Value *operand : node.operands())
    inputs.push_back(name(operand));
  for (const Value *result : node.results())
    outputs.push_back(name(result));
  onnx::NodeProto &proto =
      addNode(node.opName(), std::move(inputs), std::move(outputs), node.name());
  copyAttributes(node, proto);
}

void OnnxGraphWriter::exportCustom(const Node &node) {
  exportAsIs(node);
  proto_.mutable_node(proto_.node_size() - 1)->set_domain(kOnnxcDomain);
  report_.customOps.insert(std::string(node.opName()));
}

} // namespace onnxc
