//===- ir/DType.cpp - Element types of tensors -----------------------------===//
#include "ir/DType.h"

#include <array>
#include <cstring>

namespace onnxc {

namespace {
struct DTypeInfo {
  DType type;
  std::string_view name;
  size_t size;
};
constexpr std::array<DTypeInfo, 16> kDTypes = {{
    {DType::Unknown, "unknown", 0},
    {DType::F32, "f32", 4},
    {DType::F64, "f64", 8},
    {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},
    {DType::I8, "i8", 1},
    {DType::U8, "u8", 1},
    {DType::I16, "i16", 2},
    {DType::U16, "u16", 2},
    {DType::I32, "i32", 4},
    {DType::U32, "u32", 4},
    {DType::I64, "i64", 8},
    {DType::U64, "u64", 8},
    {DType::Bool, "bool", 1},
    {DType::I4, "i4", 1},
    {DType::U4, "u4", 1},
}};
} // namespace

std::string_view dtypeName(DType type) { return kDTypes[size_t(type)].name; }

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (info.name == name)
      return info.type;
  return std::nullopt;
}

size_t dtypeSize(DType type) { return kDTypes[size_t(type)].size; }

int dtypeBits(DType type) { return isFourBit(type) ? 4 : int(dtypeSize(type)) * 8; }

float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else { // subnormal half: renormalize
      int shift = 0;
      while (!(mantissa & 0x400)) {
        mantissa <<= 1;
        ++shift;
      }
      mantissa &= 0x3ff;
      bits = sign | uint32_t(127 - 15 + 1 - shift) << 23 | mantissa << 13;
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | mantissa << 13;
  } else {
    bits = sign | (exponent + 127 - 15) << 23 | mantissa << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint16_t sign = uint16_t((bits >> 16) & 0x8000);
  uint32_t absBits = bits & 0x7fffffff;
  if (absBits >= 0x7f800000u) // inf or nan
    return sign | 0x7c00 | (absBits > 0x7f800000u ? 0x200 : 0);
  if (absBits >= 0x477ff000u) // rounds to >= 65520: overflow to inf
    return sign | 0x7c00;
  if (absBits < 0x38800000u) { // below the smallest normal half: subnormal or 0
    if (absBits < 0x33000000u)
      return sign;
    uint32_t exponent = absBits >> 23;
    uint32_t mantissa = (absBits & 0x7fffff) | 0x800000;
    // value = mantissa * 2^(exponent-150); a half subnormal counts 2^-24 units.
    uint32_t shift = 126 - exponent; // 14..24
    uint32_t halfMantissa = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (halfMantissa & 1)))
      ++halfMantissa;
    return sign | uint16_t(halfMantissa);
  }
  uint32_t rounded = absBits + 0xfff + ((absBits >> 13) & 1); // nearest even
  return sign | uint16_t((rounded - 0x38000000u) >> 13);
}

float bfloat16ToFloat(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

uint16_t floatToBfloat16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  if ((bits & 0x7fffffff) > 0x7f800000u) // nan: keep it quiet
    return uint16_t((bits >> 16) | 0x40);
  bits += 0x7fff + ((bits >> 16) & 1);
  return uint16_t(bits >> 16);
}

int64_t narrowInteger(int64_t value, DType type) {
  switch (type) {
  case DType::I8:
    return int8_t(value);
  case DType::U8:
    return uint8_t(value);
  case DType::I16:
    return int16_t(value);
  case DType::U16:
    return uint16_t(value);
  case DType::I32:
    return int32_t(value);
  case DType::U32:
    return uint32_t(value);
  case DType::I4:
    return int64_t((uint64_t(value) & 0xf) ^ 0x8) - 8;
  case DType::U4:
    return value & 0xf;
  case DType::Bool:
    return value != 0;
  default:
    return value;
  }
}

namespace {

/// Significand bits of a float type (the integers it holds exactly are
/// those below 2^bits).
int significandBits(DType t) {
  switch (t) {
  case DType::F16:
    return 11;
  case DType::BF16:
    return 8;
  case DType::F32:
    return 24;
  case DType::F64:
    return 53;
  default:
    return 0;
  }
}

/// Magnitude bits of an integer type (without the sign).
int magnitudeBits(DType t) {
  int bits = dtypeBits(t);
  return isSignedInt(t) ? bits - 1 : bits;
}

} // namespace

/// Whether every value of `from` converts to `to` and back unchanged.
bool castRoundTripsExactly(DType from, DType to) {
  if (from == to || from == DType::Bool)
    return true;
  if (isFloat(from)) {
    // Each float type's values are a subset of a wider one's (bf16 and
    // f16 both within f32); never of an integer type's.
    if (!isFloat(to))
      return false;
    if (to == DType::F64)
      return true;
    return to == DType::F32 && (from == DType::F16 || from == DType::BF16);
  }
  if (!isInteger(from))
    return false;
  if (isFloat(to))
    return magnitudeBits(from) <= significandBits(to);
  if (!isInteger(to))
    return false;
  if (isSignedInt(from) && !isSignedInt(to))
    return false;
  return magnitudeBits(from) <= magnitudeBits(to);
}

std::optional<std::pair<double, double>> quantizedRange(DType type) {
  switch (type) {
  case DType::I4:
    return std::pair{-8.0, 7.0};
  case DType::U4:
    return std::pair{0.0, 15.0};
  case DType::I8:
    return std::pair{-128.0, 127.0};
  case DType::U8:
    return std::pair{0.0, 255.0};
  case DType::I16:
    return std::pair{-32768.0, 32767.0};
  case DType::U16:
    return std::pair{0.0, 65535.0};
  case DType::I32:
    return std::pair{-2147483648.0, 2147483647.0};
  default:
    return std::nullopt;
  }
}

int64_t onnxTypeCode(DType type) {
  switch (type) {
  case DType::F32:
    return 1;
  case DType::U8:
    return 2;
  case DType::I8:
    return 3;
  case DType::U16:
    return 4;
  case DType::I16:
    return 5;
  case DType::I32:
    return 6;
  case DType::I64:
    return 7;
  case DType::Bool:
    return 9;
  case DType::F16:
    return 10;
  case DType::F64:
    return 11;
  case DType::U32:
    return 12;
  case DType::U64:
    return 13;
  case DType::BF16:
    return 16;
  case DType::U4:
    return 21;
  case DType::I4:
    return 22;
  case DType::Unknown:
    return 0;
  }
  return 0;
}

} // namespace onnxc
