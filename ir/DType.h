//===- ir/DType.h - Element types of tensors -------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace onnxc {

/// Element type of a tensor. Names in the text IR are the lowercase short
/// forms (f32, i64, bool, ...). Unknown is the type of a value whose type has
/// not been inferred yet.
enum class DType : uint8_t {
  Unknown,
  F32,
  F64,
  F16,
  BF16,
  I8,
  U8,
  I16,
  U16,
  I32,
  U32,
  I64,
  U64,
  Bool,
  // 4-bit integers (ONNX INT4 / UINT4), stored one element per byte in IR
  // tensors and compiled buffers: the type keeps the range ([-8, 7],
  // [0, 15]) that QuantizeLinear saturates to and Cast wraps to. Only data
  // movement and the quantization ops take them (ir/infer's int4 guard).
  I4,
  U4,
};

/// Short name used by the text IR: "f32", "i64", "bool", ... ("unknown").
std::string_view dtypeName(DType type);
/// Inverse of dtypeName; nullopt for an unknown name.
std::optional<DType> parseDType(std::string_view name);
/// Size in bytes of one element (bool is one byte; Unknown is 0). i4/u4
/// take one byte each in memory.
size_t dtypeSize(DType type);
/// Bits of an integer type's range: 4 for i4/u4, else 8 * dtypeSize.
int dtypeBits(DType type);
/// Whether `type` is i4 or u4.
inline bool isFourBit(DType type) { return type == DType::I4 || type == DType::U4; }

inline bool isFloat(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16;
}
/// f16 or bf16: the half-precision floats (passes/cleanup/WidenHalfPrecision.cpp).
inline bool isHalfFloat(DType t) { return t == DType::F16 || t == DType::BF16; }
inline bool isSignedInt(DType t) {
  return t == DType::I8 || t == DType::I16 || t == DType::I32 || t == DType::I64 || t == DType::I4;
}
inline bool isUnsignedInt(DType t) {
  return t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64 || t == DType::U4;
}
inline bool isInteger(DType t) { return isSignedInt(t) || isUnsignedInt(t); }

/// [lowest, highest] of an integer type quantized values are stored in: i4,
/// u4, i8, u8, i16, u16 (QuantizeLinear's results) and i32 (DequantizeLinear's
/// x, the integer products' sums); nullopt for any other type.
std::optional<std::pair<double, double>> quantizedRange(DType type);

/// IEEE half and bfloat16 conversions (round to nearest even).
/// An int64 stored into an integer (or bool) element the way a C cast
/// would: wrapped to the narrower type (i4/u4 to their 4 bits, as ONNX's
/// Cast does), bool as value != 0.
int64_t narrowInteger(int64_t value, DType type);

/// The ONNX TensorProto data type code of `type` (Cast's `to`: 1 for f32, 10
/// for f16, 16 for bf16, ...); 0 (UNDEFINED) for Unknown.
int64_t onnxTypeCode(DType type);

/// Whether every value of `from` converts to `to` and back unchanged
/// (f16 -> f32, i32 -> i64, i16 -> f32, bool -> anything; not f32 -> f16).
bool castRoundTripsExactly(DType from, DType to);

float halfToFloat(uint16_t bits);
uint16_t floatToHalf(float value);
float bfloat16ToFloat(uint16_t bits);
uint16_t floatToBfloat16(float value);

/// Maps a C++ element type to its DType (float -> F32, int64_t -> I64, ...).
/// Bool tensors are stored as uint8_t (0 or 1); uint8_t maps to U8, so bool
/// storage is accessed with data<uint8_t>() after checking dtype() == Bool.
template <typename T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<double>() { return DType::F64; }
template <> constexpr DType dtypeOf<int8_t>() { return DType::I8; }
template <> constexpr DType dtypeOf<uint8_t>() { return DType::U8; }
template <> constexpr DType dtypeOf<int16_t>() { return DType::I16; }
template <> constexpr DType dtypeOf<uint16_t>() { return DType::U16; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::I32; }
template <> constexpr DType dtypeOf<uint32_t>() { return DType::U32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }
template <> constexpr DType dtypeOf<uint64_t>() { return DType::U64; }

} // namespace onnxc
