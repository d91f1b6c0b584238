//===- frontend/TensorProto.h - onnx::TensorProto <-> Tensor ----------------===//
#pragma once

#include "frontend/ModelFolder.h"
#include "ir/Tensor.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace onnxc {

/// DType of an ONNX TensorProto data type; throws onnxc::Error for types
/// onnxc does not support (strings, complex, 8-bit floats...).
DType dtypeFromOnnx(int32_t onnxDataType, const std::string &context);

/// Converts a TensorProto (raw_data, typed fields, or external data resolved
/// relative to `modelDir`, refusing paths that escape it) into a Tensor.
/// Throws onnxc::Error naming `context` (e.g. "initializer 'w'") on wrong
/// sizes, negative dims, unreadable or out-of-folder external data.
Tensor tensorFromProto(const onnx::TensorProto &proto, const ModelFolder &modelDir,
                       const std::string &context);

} // namespace onnxc

namespace onnxc {

/// Converts a SparseTensorProto (values [NNZ] plus indices [NNZ] linear or
/// [NNZ, rank], over dims) into a dense Tensor; unlisted elements are zero.
/// Throws onnxc::Error naming `context` on inconsistent sizes or indices out
/// of range.
Tensor tensorFromSparseProto(const onnx::SparseTensorProto &proto, const ModelFolder &modelDir,
                             const std::string &context);

} // namespace onnxc
