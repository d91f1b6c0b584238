//===- runtime/Dtype.h - Element sizes and names of onnxc_dtype ------------===//
#pragma once

#include "onnxc/model_abi.h"

#include <cstdint>

namespace onnxc::runtime {

/// Bytes per element of an onnxc_dtype, or 0 for a value outside the enum.
inline int64_t dtypeSize(int32_t dtype) {
  switch (dtype) {
  case ONNXC_F64:
  case ONNXC_I64:
  case ONNXC_U64:
    return 8;
  case ONNXC_F32:
  case ONNXC_I32:
  case ONNXC_U32:
    return 4;
  case ONNXC_F16:
  case ONNXC_BF16:
  case ONNXC_I16:
  case ONNXC_U16:
    return 2;
  case ONNXC_I8:
  case ONNXC_U8:
  case ONNXC_BOOL:
    return 1;
  default:
    return 0;
  }
}

/// The name messages use for a dtype, matching the IR's spelling.
inline const char *dtypeName(int32_t dtype) {
  switch (dtype) {
  case ONNXC_F32:
    return "f32";
  case ONNXC_F64:
    return "f64";
  case ONNXC_F16:
    return "f16";
  case ONNXC_BF16:
    return "bf16";
  case ONNXC_I8:
    return "i8";
  case ONNXC_U8:
    return "u8";
  case ONNXC_I16:
    return "i16";
  case ONNXC_U16:
    return "u16";
  case ONNXC_I32:
    return "i32";
  case ONNXC_U32:
    return "u32";
  case ONNXC_I64:
    return "i64";
  case ONNXC_U64:
    return "u64";
  case ONNXC_BOOL:
    return "bool";
  default:
    return "unknown dtype";
  }
}

} // namespace onnxc::runtime
