//===- ir/ElementTraits.h - Per-dtype element types and typed dispatch ----===//
//
// How each DType stores an element and which C++ type computes with it, and
// a dispatch from a runtime DType to code templated on it. Tensor's element
// accessors and the reference kernels both convert elements through these,
// so they agree on every dtype.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Error.h"

#include <cstdint>

namespace onnxc {

/// Per-DType element traits: how an element is stored and the type kernels
/// compute in. Halves compute in float (as ONNX Runtime does), f32/f64 in
/// double, integers in their own type, bool in bool.
template <DType D> struct ElementTraits;
#define ONNXC_ELEMENT_TRAITS(D, StorageT, ComputeT)                                                \
  template <> struct ElementTraits<D> {                                                            \
    using Storage = StorageT;                                                                      \
    using Compute = ComputeT;                                                                      \
    static Compute load(Storage v) { return Compute(v); }                                          \
    static Storage store(Compute v) { return Storage(v); }                                         \
  };
ONNXC_ELEMENT_TRAITS(DType::F32, float, double)
ONNXC_ELEMENT_TRAITS(DType::F64, double, double)
ONNXC_ELEMENT_TRAITS(DType::I8, int8_t, int8_t)
ONNXC_ELEMENT_TRAITS(DType::U8, uint8_t, uint8_t)
ONNXC_ELEMENT_TRAITS(DType::I16, int16_t, int16_t)
ONNXC_ELEMENT_TRAITS(DType::U16, uint16_t, uint16_t)
ONNXC_ELEMENT_TRAITS(DType::I32, int32_t, int32_t)
ONNXC_ELEMENT_TRAITS(DType::U32, uint32_t, uint32_t)
ONNXC_ELEMENT_TRAITS(DType::I64, int64_t, int64_t)
ONNXC_ELEMENT_TRAITS(DType::U64, uint64_t, uint64_t)
#undef ONNXC_ELEMENT_TRAITS
template <> struct ElementTraits<DType::F16> {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage v) { return halfToFloat(v); }
  static Storage store(Compute v) { return floatToHalf(v); }
};
template <> struct ElementTraits<DType::BF16> {
  using Storage = uint16_t;
  using Compute = float;
  static Compute load(Storage v) { return bfloat16ToFloat(v); }
  static Storage store(Compute v) { return floatToBfloat16(v); }
};
/// 4-bit integers: one per byte, computed as 8-bit; a store wraps to the
/// 4 bits (ONNX's Cast to int4 keeps the low bits: 9 becomes -7; Cast
/// converts floats through i32 first, ir/eval/ElementwiseKernels.cpp).
template <> struct ElementTraits<DType::I4> {
  using Storage = int8_t;
  using Compute = int8_t;
  static Compute load(Storage v) { return v; }
  static Storage store(Compute v) { return Storage(((uint8_t(v) & 0xf) ^ 0x8) - 0x8); }
};
template <> struct ElementTraits<DType::U4> {
  using Storage = uint8_t;
  using Compute = uint8_t;
  static Compute load(Storage v) { return v; }
  static Storage store(Compute v) { return Storage(v & 0xf); }
};
template <> struct ElementTraits<DType::Bool> {
  using Storage = uint8_t;
  using Compute = bool;
  static Compute load(Storage v) { return v != 0; }
  static Storage store(Compute v) { return v ? 1 : 0; }
};

/// Calls `body.template operator()<D>()` with D the compile-time form of
/// `type` (use a lambda `[&]<DType D>() { ... }`). Throws for Unknown.
template <typename Body> decltype(auto) dispatchDType(DType type, Body &&body) {
  switch (type) {
  case DType::F32:
    return body.template operator()<DType::F32>();
  case DType::F64:
    return body.template operator()<DType::F64>();
  case DType::F16:
    return body.template operator()<DType::F16>();
  case DType::BF16:
    return body.template operator()<DType::BF16>();
  case DType::I8:
    return body.template operator()<DType::I8>();
  case DType::U8:
    return body.template operator()<DType::U8>();
  case DType::I16:
    return body.template operator()<DType::I16>();
  case DType::U16:
    return body.template operator()<DType::U16>();
  case DType::I32:
    return body.template operator()<DType::I32>();
  case DType::U32:
    return body.template operator()<DType::U32>();
  case DType::I64:
    return body.template operator()<DType::I64>();
  case DType::U64:
    return body.template operator()<DType::U64>();
  case DType::Bool:
    return body.template operator()<DType::Bool>();
  case DType::I4:
    return body.template operator()<DType::I4>();
  case DType::U4:
    return body.template operator()<DType::U4>();
  case DType::Unknown:
    break;
  }
  fail("tensor of unknown element type");
}

} // namespace onnxc
