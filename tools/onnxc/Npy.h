//===- tools/onnxc/Npy.h - NumPy .npy files <-> Tensor ----------------------===//
//
// `onnxc run` reads inputs from and writes outputs to .npy files, the format
// numpy.save writes: magic, version, a Python-dict header giving dtype,
// memory order and shape, then the raw little-endian elements. Versions 1.0,
// 2.0 and 3.0 are read; C order only. bfloat16 has no .npy dtype: a bf16
// tensor is written as the f32 values it holds, and cannot be read.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Tensor.h"

#include <string>
#include <string_view>

namespace onnxc {

/// Decodes .npy bytes. Throws onnxc::Error "NAME: problem" on a malformed
/// header, fortran_order=True, a big-endian or unsupported dtype, or a data
/// size that does not match the shape.
Tensor decodeNpy(std::string_view bytes, const std::string &name);
/// Reads a .npy file (errors name the file).
Tensor readNpy(const std::string &path);

/// Encodes a tensor as a version 1.0 .npy file (2.0 when the header needs
/// it). Throws onnxc::Error for bfloat16 and tensors without data.
std::string encodeNpy(const Tensor &tensor, const std::string &name);
/// Writes a .npy file (errors name the file).
void writeNpy(const std::string &path, const Tensor &tensor);

/// The numpy dtype string of a dtype ("<f4"), or empty if it has none.
std::string npyDescr(DType dtype);

} // namespace onnxc
