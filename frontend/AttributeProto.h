//===- frontend/AttributeProto.h - onnx::AttributeProto -> Attribute --------===//
#pragma once

#include "ir/Attribute.h"

#include "frontend/ModelFolder.h"

#include <onnx/onnx_pb.h>

#include <string>

namespace onnxc {

/// Converts an INT, FLOAT, STRING, INTS, FLOATS, STRINGS or TENSOR attribute
/// (tensors may use external data, resolved in `modelDir`). Graphs, sparse
/// tensors and type protos throw onnxc::Error naming `nodeDescription` and
/// the attribute.
Attribute attributeFromProto(const onnx::AttributeProto &proto, const ModelFolder &modelDir,
                             const std::string &nodeDescription);

/// A human-readable name of an attribute type ("graph", "ints", ...).
const char *attributeTypeName(int type);

} // namespace onnxc
