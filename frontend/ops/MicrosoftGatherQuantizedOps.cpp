//===- frontend/ops/MicrosoftGatherQuantizedOps.cpp - GatherBlockQuantized, MatMulBnb4 ---===//
//
// Two more of onnxruntime's weight-only quantized ops:
//
//   GatherBlockQuantized(data, indices, scales, [zero_points])
//     ==>  DequantizeLinear(Gather(data), Gather(scales), [Gather(zp)])
//                           {axis = quantize_axis in the result, block_size}
//
// Gathering the rows first dequantizes only the rows read (an int4
// embedding table stays int4). data is i4/u4 (ONNX INT4/UINT4, already one
// element per byte) or u8, where `bits` 4 packs two elements a byte along
// the last axis (low nibble first) and its zero points alike; those are
// unpacked at import. Absent zero points are 0 for i4/u4 and 2^(bits-1) for
// u8, as onnxruntime's kernel takes them. onnxruntime writes zeros for an
// index out of range; onnxc's Gather refuses it.
//
//   MatMulBnb4(A, B, absmax)  ==>  MatMul(A, W)
//
// bitsandbytes' FP4/NF4: B packs the [N, K] weight flattened, high nibble
// first; each nibble picks one of 16 code values, times its block's absmax.
// There is no integer DequantizeLinear form of a code table, so W is
// computed at import in f32 (what fold-constants would make of any IR form).
//
//===----------------------------------------------------------------------===//
#include "frontend/ops/PackedWeights.h"

#include "frontend/OpImporterRegistry.h"
#include "ir/Error.h"
#include "ir/OpAttributes.h"

#include <array>
#include <bit>

namespace onnxc {

namespace {

/// Bits and axes of a GatherBlockQuantized node, checked against data.
struct GatherQuantizedShape {
  int64_t bits = 4, block = 128, gatherAxis = 0, quantizeAxis = 1;
  /// Elements per byte of u8 data (1 for i4/u4 data).
  int64_t perByte = 1;
};

GatherQuantizedShape readGatherShape(OnnxNode &node, const Tensor &data) {
  node.requireAttributesAmong({"bits", "block_size", "gather_axis", "quantize_axis"});
  GatherQuantizedShape s;
  s.bits = node.intAttribute("bits", 4);
  s.block = node.intAttribute("block_size", 128);
  int64_t rank = int64_t(data.rank());
  if (rank < 1)
    fail(node.describe(), ": GatherBlockQuantized data must have rank at least 1");
  auto axis = [&](const char *name, int64_t fallback) {
    int64_t a = node.intAttribute(name, fallback);
    if (a < -rank || a >= rank)
      fail(node.describe(), ": GatherBlockQuantized ", name, " ", a, " is out of range for rank ",
           rank);
    return a < 0 ? a + rank : a;
  };
  s.gatherAxis = axis("gather_axis", 0);
  s.quantizeAxis = axis("quantize_axis", 1);
  if (s.block < 16 || !std::has_single_bit(uint64_t(s.block)))
    fail(node.describe(), ": GatherBlockQuantized block_size ", s.block,
         " must be a power of 2 and at least 16");
  if (s.gatherAxis == s.quantizeAxis)
    fail(node.describe(), ": GatherBlockQuantized with gather_axis = quantize_axis is not "
                          "supported");
  if (isFourBit(data.dtype())) {
    if (s.bits != 4)
      fail(node.describe(), ": GatherBlockQuantized of ", dtypeName(data.dtype()),
           " data needs bits = 4, got ", s.bits);
  } else if (data.dtype() == DType::U8) {
    if (s.bits != 2 && s.bits != 4 && s.bits != 8)
      fail(node.describe(), ": GatherBlockQuantized of u8 data needs bits 2, 4 or 8, got ", s.bits);
    if (s.gatherAxis != 0 || s.quantizeAxis != rank - 1)
      fail(node.describe(), ": GatherBlockQuantized of u8 data needs gather_axis 0 and the last "
                            "axis as quantize_axis");
    s.perByte = 8 / s.bits;
  } else {
    fail(node.describe(), ": GatherBlockQuantized data must be i4, u4 or u8, got ",
         data.typeString());
  }
  return s;
}

/// u8 `packed` holding `perByte` elements a byte along its last axis, as one
/// element per byte (u4 for 4 bits) with that axis `length` long.
Tensor unpackLastAxis(const Tensor &packed, int64_t length, int bits) {
  std::vector<int64_t> dims = packed.dims();
  int64_t packedLength = dims.back();
  dims.back() = length;
  Tensor out(bits == 4 ? DType::U4 : DType::U8, dims);
  const auto *in = static_cast<const uint8_t *>(packed.rawData());
  auto *data = static_cast<uint8_t *>(out.rawData());
  int64_t rows = length ? out.numElements() / length : 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t i = 0; i < length; ++i)
      data[r * length + i] = packedElement(in + r * packedLength, i, bits);
  return out;
}

void importGatherBlockQuantized(OnnxNode &node) {
  std::vector<Value *> operands = node.operands();
  const Tensor &packedData = requireConstantOperand(node, operands, 0, "data");
  GatherQuantizedShape s = readGatherShape(node, packedData);
  if (operands.size() < 3 || !operands[1] || !operands[2])
    fail(node.describe(), ": GatherBlockQuantized needs data, indices and scales");
  Value *indices = operands[1], *scales = operands[2];
  Value *zeroPoint = operands.size() > 3 ? operands[3] : nullptr;

  Tensor data = packedData;
  int64_t length = packedData.dims().back() * s.perByte;
  if (s.perByte > 1)
    data = unpackLastAxis(packedData, length, int(s.bits));
  int64_t blocks = (data.dims()[size_t(s.quantizeAxis)] + s.block - 1) / s.block;
  if (zeroPoint && s.perByte > 1) {
    const Tensor &zp = requireConstantOperand(node, operands, 3, "zero_points");
    if (zp.dtype() != DType::U8 || zp.rank() != data.rank() ||
        zp.dims().back() != (blocks + s.perByte - 1) / s.perByte)
      fail(node.describe(), ": GatherBlockQuantized zero_points ", zp.typeString(),
           " must be u8 with ", blocks, " blocks packed along the last axis");
    zeroPoint = node.addConstant("zero_point", unpackLastAxis(zp, blocks, int(s.bits)));
  } else if (!zeroPoint && packedData.dtype() == DType::U8) {
    // u8 data's implicit zero point is 2^(bits-1); i4/u4's is 0, which is
    // DequantizeLinear's own default.
    std::vector<int64_t> dims = data.dims();
    dims[size_t(s.quantizeAxis)] = blocks;
    Tensor zp(data.dtype(), dims);
    auto *bytes = static_cast<uint8_t *>(zp.rawData());
    std::fill(bytes, bytes + zp.numElements(), uint8_t(1u << (s.bits - 1)));
    zeroPoint = node.addConstant("zero_point", std::move(zp));
  }
  Value *table = s.perByte > 1 ? node.addConstant("data", std::move(data)) : operands[0];
  AttributeMap gatherAxis = {{"axis", s.gatherAxis}};
  Value *rows = node.emitStep(OpKind::Gather, {table, indices}, "rows", gatherAxis);
  std::vector<Value *> dequantizeOperands = {
      rows, node.emitStep(OpKind::Gather, {scales, indices}, "row_scales", gatherAxis)};
  if (zeroPoint)
    dequantizeOperands.push_back(
        node.emitStep(OpKind::Gather, {zeroPoint, indices}, "row_zero_points", gatherAxis));
  // The quantized axis keeps its place in the result counted from the side
  // the gathered axis is not on, whatever the rank of the indices.
  int64_t rank = int64_t(packedData.rank());
  int64_t axis = s.quantizeAxis < s.gatherAxis ? s.quantizeAxis : s.quantizeAxis - rank;
  node.emitOutput(0, OpKind::DequantizeLinear, dequantizeOperands,
                  {{"axis", axis}, {"block_size", s.block}});
}

// bitsandbytes' code values (onnxruntime's blockwise_quant_block_bnb4.h).
constexpr std::array<float, 16> kFp4Codes = {
    0.00000000f,  5.208333333e-03f, 0.66666667f,  1.00000000f,       0.33333333f,  0.50000000f,
    0.16666667f,  0.25000000f,      -0.00000000f, -5.208333333e-03f, -0.66666667f, -1.00000000f,
    -0.33333333f, -0.50000000f,     -0.16666667f, -0.25000000f};
constexpr std::array<float, 16> kNf4Codes = {-1.0f,
                                             -0.6961928009986877f,
                                             -0.5250730514526367f,
                                             -0.39491748809814453f,
                                             -0.28444138169288635f,
                                             -0.18477343022823334f,
                                             -0.09105003625154495f,
                                             0.0f,
                                             0.07958029955625534f,
                                             0.16093020141124725f,
                                             0.24611230194568634f,
                                             0.33791524171829224f,
                                             0.44070982933044434f,
                                             0.5626170039176941f,
                                             0.7229568362236023f,
                                             1.0f};

void importMatMulBnb4(OnnxNode &node) {
  node.requireAttributesAmong({"K", "N", "block_size", "quant_type", "transB", "training_mode"});
  int64_t k = node.intAttribute("K", 0), n = node.intAttribute("N", 0);
  int64_t block = node.intAttribute("block_size", 0);
  int64_t quantType = node.intAttribute("quant_type", -1);
  bool transB = node.intAttribute("transB", 1) != 0;
  if (k <= 0 || n <= 0)
    fail(node.describe(), ": MatMulBnb4 needs positive K and N, got K=", k, " N=", n);
  if (block < 16 || !std::has_single_bit(uint64_t(block)))
    fail(node.describe(), ": MatMulBnb4 block_size ", block,
         " must be a power of 2 and at least 16");
  if (quantType != 0 && quantType != 1)
    fail(node.describe(), ": MatMulBnb4 quant_type ", quantType, " is not 0 (FP4) or 1 (NF4)");
  std::vector<Value *> operands = node.operands();
  if (operands.empty() || !operands[0])
    fail(node.describe(), ": MatMulBnb4 input A is missing");
  const Tensor &b = requireConstantOperand(node, operands, 1, "B");
  const Tensor &absmax = requireConstantOperand(node, operands, 2, "absmax");
  int64_t count = n * k;
  if (b.dtype() != DType::U8 || b.numElements() != (count + 1) / 2)
    fail(node.describe(), ": MatMulBnb4 B ", b.typeString(), " must be u8 of ", (count + 1) / 2,
         " elements");
  if (absmax.dtype() != DType::F32 || absmax.numElements() != (count + block - 1) / block)
    fail(node.describe(), ": MatMulBnb4 absmax ", absmax.typeString(), " must be f32 of ",
         (count + block - 1) / block, " elements");
  const std::array<float, 16> &codes = quantType == 0 ? kFp4Codes : kNf4Codes;
  const auto *packed = static_cast<const uint8_t *>(b.rawData());
  const float *scale = absmax.data<float>();
  // The [N, K] weight, or its transpose [K, N] for the usual transB = 1.
  Tensor w(DType::F32, transB ? std::vector<int64_t>{k, n} : std::vector<int64_t>{n, k});
  float *out = w.data<float>();
  for (int64_t i = 0; i < count; ++i) {
    uint8_t code = i % 2 ? packed[i / 2] & 0xf : packed[i / 2] >> 4;
    float value = codes[code] * scale[i / block];
    int64_t row = i / k, column = i % k;
    out[transB ? column * n + row : i] = value;
  }
  node.emitOutput(0, OpKind::MatMul, {operands[0], node.addConstant("weight", std::move(w))});
}

} // namespace

void registerMicrosoftBlockQuantizedImporters(OpImporterRegistry &registry) {
  registry.add({"com.microsoft", "GatherBlockQuantized", 1, OpKind::DequantizeLinear,
                importGatherBlockQuantized});
  registry.add({"com.microsoft", "MatMulBnb4", 1, OpKind::MatMul, importMatMulBnb4});
}

} // namespace onnxc
