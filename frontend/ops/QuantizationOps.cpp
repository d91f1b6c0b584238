//===- frontend/ops/QuantizationOps.cpp - QuantizeLinear ... QLinearConv ---===//
//
// The IR quantization ops keep the ONNX forms, blocked quantization (opset
// 21's `block_size`) and the i4/u4 types included, so most import 1:1. What
// the importer decides is what onnxc refuses: float8/float4 element types
// (onnxc has no such dtypes; `saturate` only matters for float8, so it is
// dropped), and a QuantizeLinear `precision` other than the scale's float32.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"
#include "frontend/TensorProto.h"

#include "ir/Error.h"

namespace onnxc {

namespace {

/// `block_size` (opset 21): 0 is per tensor or per axis, > 0 blocked along
/// `axis`; the shape rule checks the scale against it.
void checkBlockSize(OnnxNode &node, const AttributeMap &attributes) {
  auto it = attributes.find("block_size");
  if (it == attributes.end())
    return;
  if (!it->second.isInt())
    fail(node.describe(), ": attribute 'block_size' must be an int");
  if (it->second.asInt() < 0)
    fail(node.describe(), ": block_size ", it->second.asInt(), " is negative");
}

/// The `output_dtype` attribute, when given: a float type (DequantizeLinear)
/// or a quantized integer type (QuantizeLinear).
void checkOutputDType(OnnxNode &node, const AttributeMap &attributes, bool wantFloat) {
  auto it = attributes.find("output_dtype");
  if (it == attributes.end())
    return;
  if (!it->second.isInt())
    fail(node.describe(), ": attribute 'output_dtype' must be an int");
  if (it->second.asInt() == 0)
    return;
  DType type = dtypeFromOnnx(int32_t(it->second.asInt()), node.describe() + ": output_dtype");
  bool ok = wantFloat ? isFloat(type)
                      : (type == DType::I8 || type == DType::U8 || type == DType::I16 ||
                         type == DType::U16 || isFourBit(type));
  if (!ok)
    fail(node.describe(), ": output_dtype ", dtypeName(type), " is not supported (",
         wantFloat ? "a float type" : "i4, u4, i8, u8, i16 or u16", ")");
}

void importQuantizeLinear(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  checkBlockSize(node, attributes);
  checkOutputDType(node, attributes, /*wantFloat=*/false);
  attributes.erase("saturate");
  if (auto it = attributes.find("precision"); it != attributes.end()) {
    // 0 (the scale's type) and float32 are what onnxc computes in.
    if (!it->second.isInt() || (it->second.asInt() != 0 && it->second.asInt() != 1))
      fail(node.describe(), ": QuantizeLinear precision other than float32 is not supported");
    attributes.erase(it);
  }
  node.emit(OpKind::QuantizeLinear, node.operands(), attributes);
}

void importDequantizeLinear(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  checkBlockSize(node, attributes);
  checkOutputDType(node, attributes, /*wantFloat=*/true);
  node.emit(OpKind::DequantizeLinear, node.operands(), attributes);
}

/// QLinearMatMul and QLinearConv take every scale and zero point; an empty
/// input name would leave a required operand absent.
void importQLinear(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  for (size_t i = 0; i < std::min<size_t>(operands.size(), 8); ++i)
    if (!operands[i])
      fail(node.describe(), ": ", node.proto().op_type(), " input ", i,
           " (a scale or zero point) is missing");
  node.emit(node.kind(), operands, node.attributes());
}

} // namespace

void registerQuantizationImporters(OpImporterRegistry &registry) {
  // Opset 13 is the oldest the importer accepts; 19 (float8, saturate), 21
  // (block_size, output_dtype, 16-bit types) and 23 (precision) are read by
  // the same functions.
  registry.add({"", "QuantizeLinear", 13, OpKind::QuantizeLinear, importQuantizeLinear});
  registry.add({"", "DequantizeLinear", 13, OpKind::DequantizeLinear, importDequantizeLinear});
  registry.addOneToOne(OpKind::DynamicQuantizeLinear, 11);
  registry.addOneToOne(OpKind::MatMulInteger, 10);
  registry.addOneToOne(OpKind::ConvInteger, 10);
  registry.add({"", "QLinearMatMul", 10, OpKind::QLinearMatMul, importQLinear});
  registry.add({"", "QLinearConv", 10, OpKind::QLinearConv, importQLinear});
}

} // namespace onnxc
