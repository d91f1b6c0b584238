//===- frontend/ExternalData.h - Tensor bytes stored beside the model -------===//
#pragma once

#include "frontend/ModelFolder.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace onnxc {

/// Reads the bytes of a tensor whose data_location is EXTERNAL (keys
/// `location`, `offset`, `length`). The location is resolved relative to
/// `modelDir` and must stay inside it: absolute paths, `..` escapes and
/// symlinks leading out of the folder are refused. `expectedBytes` is what
/// the dims and dtype call for; a `length` that disagrees, or a range past
/// the end of the file, throws onnxc::Error naming `context`.
std::string readExternalData(const onnx::TensorProto &proto, const ModelFolder &modelDir,
                             size_t expectedBytes, const std::string &context);

} // namespace onnxc
