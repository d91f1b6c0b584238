//===- frontend/ops/ElementwiseOps.cpp - Arithmetic, unary, logic, Cast -----===//
//
// Between opsets 13 and 28 these ops only widened their type lists, so each
// maps 1:1 onto the IR op of the same name, except Mod, whose opset-28 form
// defines fmod = 0 on floats (the IR op has that meaning at every opset), and
// Cast/CastLike's opset-24 round_mode. BitCast (26) keeps `to` as Cast does. Ops older than opset
// 13 are registered at 13, the oldest opset onnxc accepts.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"
#include "frontend/TensorProto.h"

#include "ir/Error.h"

namespace onnxc {

namespace {

/// Opset 24's `round_mode` (up, down, nearest) only concerns casts to float8e8m0, a type
/// onnxc refuses wherever it appears; its value is checked and the attribute dropped.
void dropRoundMode(OnnxNode &node, AttributeMap &attributes) {
  auto it = attributes.find("round_mode");
  if (it == attributes.end())
    return;
  if (it->second.kind() != Attribute::Kind::String ||
      (it->second.asString() != "up" && it->second.asString() != "down" &&
       it->second.asString() != "nearest"))
    fail(node.describe(), ": attribute 'round_mode' must be \"up\", \"down\" or \"nearest\"");
  attributes.erase(it);
}

/// Cast keeps `to` as the ONNX data type code (the IR keeps ONNX semantics);
/// checking it here turns a cast to string or float8 into a clear error.
void importCast(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  auto it = attributes.find("to");
  if (it == attributes.end() || !it->second.isInt())
    fail(node.describe(), ": Cast needs an int attribute 'to'");
  dtypeFromOnnx(int32_t(it->second.asInt()), node.describe() + ": attribute 'to'");
  dropRoundMode(node, attributes);
  node.emit(OpKind::Cast, node.operands(), attributes);
}

/// BitCast's `to` is checked as Cast's: a type onnxc lacks is named here.
void importBitCast(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  auto it = attributes.find("to");
  if (it == attributes.end() || !it->second.isInt())
    fail(node.describe(), ": BitCast needs an int attribute 'to'");
  dtypeFromOnnx(int32_t(it->second.asInt()), node.describe() + ": attribute 'to'");
  node.emit(OpKind::BitCast, node.operands(), attributes);
}

void importCastLike(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  dropRoundMode(node, attributes);
  node.emit(OpKind::CastLike, node.operands(), attributes);
}

} // namespace

void registerElementwiseImporters(OpImporterRegistry &registry) {
  for (OpKind kind : {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Pow, OpKind::Mod,
                      OpKind::Max, OpKind::Min, OpKind::Sum, OpKind::Mean})
    registry.addOneToOne(kind, 13);
  for (OpKind kind :
       {OpKind::Sqrt, OpKind::Reciprocal, OpKind::Neg, OpKind::Abs, OpKind::Sign, OpKind::Floor,
        OpKind::Ceil, OpKind::Exp, OpKind::Log, OpKind::Erf, OpKind::Tanh, OpKind::Sigmoid,
        OpKind::Relu, OpKind::LeakyRelu, OpKind::Elu, OpKind::Sin, OpKind::Cos, OpKind::Clip})
    registry.addOneToOne(kind, 13);
  registry.addOneToOne(OpKind::Gelu, 20);
  for (OpKind kind : {OpKind::Where, OpKind::Equal, OpKind::Less, OpKind::Greater,
                      OpKind::LessOrEqual, OpKind::GreaterOrEqual, OpKind::Not, OpKind::And,
                      OpKind::Or, OpKind::Xor, OpKind::IsNaN, OpKind::IsInf})
    registry.addOneToOne(kind, 13);
  registry.add({"", "Cast", 13, OpKind::Cast, importCast});
  registry.addOneToOne(OpKind::CastLike, 15);
  registry.add({"", "CastLike", 24, OpKind::CastLike, importCastLike});
  registry.add({"", "BitCast", 26, OpKind::BitCast, importBitCast});
}

} // namespace onnxc
