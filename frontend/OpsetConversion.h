//===- frontend/OpsetConversion.h - Opsets 7-12 brought to opset 13 ---------===//
//
// The op importers follow opset 13 and later. A model of an older ai.onnx
// opset is first rewritten to opset 13 by ONNX's own version converter
// (libonnx), with the corrections OpsetConversion.cpp describes, and then
// imported like any opset-13 model.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "frontend/ModelLoader.h"

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace onnxc {

/// Converts a model whose ai.onnx opset is in [kOldestOnnxOpset, kMinOnnxOpset)
/// to kMinOnnxOpset in place; other models are left alone. Initializers
/// (external data included), value names, graph inputs and outputs are kept.
/// Throws onnxc::Error (without the file prefix) naming the node and its op
/// version when a node cannot be converted, and "unsupported ops: ..." when
/// onnxc would not import the converted model's ops anyway. Returns whether
/// the model was converted.
bool convertToImportableOpset(onnx::ModelProto &model);

/// The conversion alone, without asking whether onnxc imports the result's
/// ops: what convertToImportableOpset runs once they all are.
bool convertOldOpset(onnx::ModelProto &model);

/// The op type a default-domain node of `opType` at `opset` has once
/// converted (Upsample becomes Resize, Scatter becomes ScatterElements).
std::string opTypeAfterConversion(const std::string &opType, int64_t opset);

/// The ops of an old-opset graph that onnxc would not import after its
/// conversion, in findUnsupportedOps' format and with the file's op names.
std::vector<std::string> findOpsUnsupportedAfterConversion(const onnx::GraphProto &graph,
                                                           const OpsetMap &opsets);

} // namespace onnxc
