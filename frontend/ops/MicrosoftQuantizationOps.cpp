//===- frontend/ops/MicrosoftQuantizationOps.cpp - com.microsoft MatMulNBits ---===//
//
// onnxruntime's weight-only quantized MatMul, imported as onnxc's own ops in
// the form an ONNX opset-21 QDQ graph has:
//
//   MatMulNBits(A, B, scales, [zero_points], [g_idx], [bias])
//     ==>  W = DequantizeLinear(Wq: u4/u8 [K, N], scale [kb, N], zp [kb, N])
//                              {axis = 0, block_size}
//          Y = MatMul(A', W) [+ bias]
//
// B ([N, kb, blob], `bits` a value packed low bits first along K) is unpacked
// at import into Wq, transposed to the [K, N] a MatMul's B has, so the same
// IR serves MatMulNBits and "int4 initializer -> blocked DequantizeLinear ->
// MatMul". Scales and uint8-packed zero points are transposed alike; absent
// zero points are 2^(bits-1). Float zero points (the scales' type) have no
// integer DequantizeLinear form: W is then computed at import in f32, as
// onnxruntime's kernel does (q * scale + (-scale * zp)).
//
// A' is A, except at accuracy_level 4, where onnxruntime's CPU kernel (its
// packed path: no g_idx, no float zero point) quantizes A to int8 per block
// of `block_size` along K before the product: scale = max|a| / 127, code =
// round-half-even(a * (127 / max|a|)). The importer writes that arithmetic
// as IR ops (see quantizedActivation), so the reference evaluator and the
// compiled code compute what onnxruntime computes; docs/KERNEL_ACCURACY.md
// bounds its distance from the f32 product.
//
//===----------------------------------------------------------------------===//
#include "frontend/ops/PackedWeights.h"

#include "frontend/OpImporterRegistry.h"
#include "ir/Error.h"
#include "ir/eval/Evaluator.h"

#include <bit>
#include <memory>
#include <optional>

namespace onnxc {

namespace {

/// The constant `value` holds, looking through ops that only relabel a
/// constant's dims (Reshape, Flatten, Squeeze, Unsqueeze, Identity with
/// constant operands): onnxruntime-genai's builder feeds a tied int4 LM
/// head's weights to the embedding's GatherBlockQuantized through a Reshape
/// to [vocab, hidden / 2]. Null when there is no such constant.
std::unique_ptr<Tensor> constantBehindRelabels(const Value *value, int depth = 0) {
  if (value->isConstant())
    return value->constantValue().hasData() ? std::make_unique<Tensor>(value->constantValue())
                                            : nullptr;
  const Node *node = value->definingNode();
  if (!node || depth > 8 || node->numResults() != 1)
    return nullptr;
  switch (node->kind()) {
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Identity:
    break;
  default:
    return nullptr;
  }
  std::vector<std::unique_ptr<Tensor>> held;
  std::vector<const Tensor *> operands;
  for (size_t i = 0; i < node->numOperands(); ++i) {
    if (!node->operand(i)) {
      operands.push_back(nullptr);
      continue;
    }
    held.push_back(constantBehindRelabels(node->operand(i), depth + 1));
    if (!held.back())
      return nullptr;
    operands.push_back(held.back().get());
  }
  std::vector<Tensor> results = evaluateNode(*node, operands);
  return std::make_unique<Tensor>(std::move(results.at(0)));
}

} // namespace

Tensor requireConstantOperand(OnnxNode &node, const std::vector<Value *> &operands, size_t index,
                              const char *what) {
  if (index >= operands.size() || !operands[index])
    fail(node.describe(), ": ", node.proto().op_type(), " input ", what, " is missing");
  std::unique_ptr<Tensor> constant = constantBehindRelabels(operands[index]);
  if (!constant)
    fail(node.describe(), ": ", node.proto().op_type(), " input ", what,
         " must be a constant (an initializer, or one reshaped)");
  return std::move(*constant);
}

namespace {

Value *i64Vector(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

/// MatMulNBits' attributes, checked.
struct NBitsShape {
  int64_t k = 0, n = 0, bits = 4, block = 0, accuracyLevel = 0;
  int64_t blocks() const { return (k + block - 1) / block; }
  int64_t blobBytes() const { return block * bits / 8; }
};

NBitsShape readNBitsShape(OnnxNode &node) {
  node.requireAttributesAmong({"K", "N", "bits", "block_size", "accuracy_level"});
  NBitsShape s;
  s.k = node.intAttribute("K", 0);
  s.n = node.intAttribute("N", 0);
  s.bits = node.intAttribute("bits", 4);
  s.block = node.intAttribute("block_size", 0);
  s.accuracyLevel = node.intAttribute("accuracy_level", 0);
  if (s.k <= 0 || s.n <= 0)
    fail(node.describe(), ": MatMulNBits needs positive K and N, got K=", s.k, " N=", s.n);
  // onnxruntime's CPU kernel takes 4 and 8 bits only.
  if (s.bits != 4 && s.bits != 8)
    fail(node.describe(), ": MatMulNBits with bits=", s.bits, " is not supported (4 or 8)");
  if (s.block < 16 || !std::has_single_bit(uint64_t(s.block)))
    fail(node.describe(), ": MatMulNBits block_size ", s.block,
         " must be a power of 2 and at least 16");
  if (s.accuracyLevel < 0 || s.accuracyLevel > 4)
    fail(node.describe(), ": MatMulNBits accuracy_level ", s.accuracyLevel, " is not 0 to 4");
  return s;
}

void requireElementCount(OnnxNode &node, const Tensor &t, int64_t count, const char *what,
                         const char *expected) {
  if (t.numElements() != count)
    fail(node.describe(), ": MatMulNBits ", what, " ", t.typeString(), " must have ", count,
         " elements (", expected, ")");
}

/// B unpacked and transposed: Wq[k, n], one element per byte.
Tensor unpackWeights(OnnxNode &node, const Tensor &b, const NBitsShape &s) {
  if (b.dtype() != DType::U8)
    fail(node.describe(), ": MatMulNBits B must be u8, got ", b.typeString());
  requireElementCount(node, b, s.n * s.blocks() * s.blobBytes(), "B", "N x k_blocks x blob_size");
  Tensor w(s.bits == 4 ? DType::U4 : DType::U8, {s.k, s.n});
  const auto *packed = static_cast<const uint8_t *>(b.rawData());
  auto *out = static_cast<uint8_t *>(w.rawData());
  int64_t rowBytes = s.blocks() * s.blobBytes();
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t k = 0; k < s.k; ++k)
      out[k * s.n + n] = packedElement(packed + n * rowBytes, k, int(s.bits));
  return w;
}

/// The zero points as Wq's dtype [kb, N]: unpacked from uint8 (each row of
/// N packed like B), or 2^(bits-1) when absent.
Tensor integerZeroPoints(OnnxNode &node, const Tensor *zp, const NBitsShape &s, DType type) {
  Tensor out(type, {s.blocks(), s.n});
  auto *data = static_cast<uint8_t *>(out.rawData());
  if (!zp) {
    std::fill(data, data + out.numElements(), uint8_t(1u << (s.bits - 1)));
    return out;
  }
  int64_t rowBytes = (s.blocks() * s.bits + 7) / 8;
  requireElementCount(node, *zp, s.n * rowBytes, "zero_points",
                      "N x ceil(k_blocks x bits / 8), packed");
  const auto *packed = static_cast<const uint8_t *>(zp->rawData());
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t b = 0; b < s.blocks(); ++b)
      data[b * s.n + n] = packedElement(packed + n * rowBytes, b, int(s.bits));
  return out;
}

/// scales [N, kb] (any shape of that many elements) as [kb, N].
Tensor transposedScales(const Tensor &scales, const NBitsShape &s) {
  Tensor out(scales.dtype(), {s.blocks(), s.n});
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t b = 0; b < s.blocks(); ++b)
      out.setElementFromDouble(b * s.n + n, scales.elementAsDouble(n * s.blocks() + b));
  return out;
}

/// W[k, n] = q * scale + (-scale * zp) in f32, onnxruntime's arithmetic for
/// float zero points.
Tensor floatZeroPointWeights(OnnxNode &node, const Tensor &wq, const Tensor &scales,
                             const Tensor &zp, const NBitsShape &s) {
  requireElementCount(node, zp, s.n * s.blocks(), "zero_points", "N x k_blocks, unpacked");
  Tensor w(DType::F32, {s.k, s.n});
  float *out = w.data<float>();
  const auto *q = static_cast<const uint8_t *>(wq.rawData());
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t n = 0; n < s.n; ++n) {
      int64_t p = n * s.blocks() + k / s.block;
      float scale = float(scales.elementAsDouble(p)), zero = float(zp.elementAsDouble(p));
      float adjust = -scale * zero;
      out[k * s.n + n] = float(q[k * s.n + n]) * scale + adjust;
    }
  return w;
}

/// g_idx (act-order) may only be the trivial k / block_size, which changes
/// nothing; any other order is refused.
void checkGroupIndex(OnnxNode &node, const std::vector<Value *> &operands, const NBitsShape &s) {
  const Tensor &g = requireConstantOperand(node, operands, 4, "g_idx");
  if (g.numElements() != s.k)
    fail(node.describe(), ": MatMulNBits g_idx ", g.typeString(), " must have K=", s.k,
         " elements");
  for (int64_t k = 0; k < s.k; ++k)
    if (g.elementAsInt64(k) != k / s.block)
      fail(node.describe(),
           ": MatMulNBits g_idx (act-order) other than k / block_size is not "
           "supported (g_idx[",
           k, "] = ", g.elementAsInt64(k), ")");
}

/// A as onnxruntime's accuracy_level-4 kernel sees it: each row cut into
/// blocks of `block` along K (the last one zero-padded), each block coded
/// as int8 round-half-even(a * inv), inv = 127 / max|a| (0 for an all-zero
/// block), and read back as code * (max|a| / 127). In IR ops: A viewed as
/// [rows, kb, block], the codes by a QuantizeLinear of a * inv at scale 1
/// (so the rounding sees exactly onnxruntime's product), read back by a
/// DequantizeLinear blocked along the last axis.
Value *quantizedActivation(OnnxNode &node, Value *a, const NBitsShape &s) {
  int64_t padded = s.blocks() * s.block;
  Value *rows =
      node.emitStep(OpKind::Reshape, {a, i64Vector(node, "rows_shape", {-1, s.k})}, "a_rows");
  Value *full = rows;
  if (padded != s.k)
    full = node.emitStep(OpKind::Pad,
                         {rows, i64Vector(node, "a_pads", {0, padded - s.k}), nullptr,
                          i64Vector(node, "a_pad_axes", {1})},
                         "a_padded");
  Value *blocks =
      node.emitStep(OpKind::Reshape,
                    {full, i64Vector(node, "blocks_shape", {-1, s.blocks(), s.block})}, "a_blocks");
  Value *absMax = node.emitStep(
      OpKind::ReduceMax,
      {node.emitStep(OpKind::Abs, {blocks}, "a_abs"), i64Vector(node, "block_axis", {2})},
      "a_absmax", {{"keepdims", int64_t(1)}});
  Value *zero = node.addConstant("zero", Tensor::scalar<float>(0.0f));
  Value *limit = node.addConstant("int8_limit", Tensor::scalar<float>(127.0f));
  Value *inverse = node.emitStep(OpKind::Where,
                                 {node.emitStep(OpKind::Equal, {absMax, zero}, "a_all_zero"), zero,
                                  node.emitStep(OpKind::Div, {limit, absMax}, "a_inverse_scale")},
                                 "a_inverse");
  Value *scale = node.emitStep(OpKind::Div, {absMax, limit}, "a_scale");
  Value *codes = node.emitStep(OpKind::QuantizeLinear,
                               {node.emitStep(OpKind::Mul, {blocks, inverse}, "a_scaled"),
                                node.addConstant("unit_scale", Tensor::scalar<float>(1.0f))},
                               "a_codes", {{"output_dtype", int64_t(3)}}); // INT8
  Value *dequantized = node.emitStep(OpKind::DequantizeLinear, {codes, scale}, "a_dequantized",
                                     {{"axis", int64_t(2)}, {"block_size", s.block}});
  Value *flat = node.emitStep(
      OpKind::Reshape, {dequantized, i64Vector(node, "padded_shape", {-1, padded})}, "a_flat");
  if (padded != s.k)
    flat = node.emitStep(OpKind::Slice,
                         {flat, i64Vector(node, "k_start", {0}), i64Vector(node, "k_end", {s.k}),
                          i64Vector(node, "k_axis", {1})},
                         "a_cut");
  return node.emitStep(OpKind::Reshape, {flat, node.emitStep(OpKind::Shape, {a}, "a_shape")},
                       "a_int8");
}

void importMatMulNBits(OnnxNode &node) {
  NBitsShape s = readNBitsShape(node);
  std::vector<Value *> operands = node.operands();
  if (operands.empty() || !operands[0])
    fail(node.describe(), ": MatMulNBits input A is missing");
  const Tensor &b = requireConstantOperand(node, operands, 1, "B");
  const Tensor &scales = requireConstantOperand(node, operands, 2, "scales");
  if (scales.dtype() != DType::F32)
    fail(node.describe(), ": MatMulNBits with ", dtypeName(scales.dtype()),
         " scales is not supported (f32 A and scales)");
  requireElementCount(node, scales, s.n * s.blocks(), "scales", "N x k_blocks");
  std::optional<Tensor> zeroPoints;
  if (operands.size() > 3 && operands[3])
    zeroPoints = requireConstantOperand(node, operands, 3, "zero_points");
  const Tensor *zp = zeroPoints ? &*zeroPoints : nullptr;
  bool hasGroupIndex = operands.size() > 4 && operands[4];
  if (hasGroupIndex)
    checkGroupIndex(node, operands, s);
  Value *bias = operands.size() > 5 ? operands[5] : nullptr;

  Tensor wq = unpackWeights(node, b, s);
  bool floatZeroPoint = zp && isFloat(zp->dtype());
  // onnxruntime's int8 path is its packed kernel, which g_idx and float
  // zero points rule out (they dequantize B to f32 instead).
  const bool int8Activations = s.accuracyLevel == 4 && !floatZeroPoint && !hasGroupIndex;
  if (int8Activations && s.bits == 4) {
    // One onnxc op whose kernel quantizes A itself (docs/IR.md).
    std::vector<Value *> ops = {
        operands[0], node.addConstant("weight_q", std::move(wq)),
        node.addConstant("weight_scale", transposedScales(scales, s)),
        node.addConstant("weight_zero_point", integerZeroPoints(node, zp, s, DType::U4))};
    const AttributeMap attributes = {{"block_size", s.block}, {"activation_int8", int64_t(1)}};
    if (!bias)
      return node.emitOutput(0, OpKind::BlockQuantizedMatMul, ops, attributes);
    Value *product = node.emitStep(OpKind::BlockQuantizedMatMul, ops, "product", attributes);
    return node.emitOutput(0, OpKind::Add, {product, bias});
  }
  Value *weights;
  if (floatZeroPoint) {
    weights = node.addConstant("weight", floatZeroPointWeights(node, wq, scales, *zp, s));
  } else {
    if (zp && zp->dtype() != DType::U8)
      fail(node.describe(), ": MatMulNBits zero_points must be u8 (packed) or f32, got ",
           zp->typeString());
    Tensor zeros = integerZeroPoints(node, zp, s, wq.dtype());
    weights = node.emitStep(OpKind::DequantizeLinear,
                            {node.addConstant("weight_q", std::move(wq)),
                             node.addConstant("weight_scale", transposedScales(scales, s)),
                             node.addConstant("weight_zero_point", std::move(zeros))},
                            "weight", {{"axis", int64_t(0)}, {"block_size", s.block}});
  }
  Value *a = operands[0];
  if (int8Activations)
    a = quantizedActivation(node, a, s);
  if (!bias)
    return node.emitOutput(0, OpKind::MatMul, {a, weights});
  Value *product = node.emitStep(OpKind::MatMul, {a, weights}, "product");
  node.emitOutput(0, OpKind::Add, {product, bias});
}

} // namespace

void registerMicrosoftQuantizationImporters(OpImporterRegistry &registry) {
  registry.add({"com.microsoft", "MatMulNBits", 1, OpKind::MatMul, importMatMulNBits});
  registerMicrosoftBlockQuantizedImporters(registry);
}

} // namespace onnxc
