//===- frontend/ModelLoader.h - Reading and checking a .onnx file -----------===//
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>

namespace onnxc {

/// Opset version per operator domain; the default domain is "" (an
/// "ai.onnx" entry in the file is stored under "").
using OpsetMap = std::map<std::string, int64_t>;

/// The oldest and newest default-domain opsets the importers cover.
constexpr int64_t kMinOnnxOpset = 13;
constexpr int64_t kMaxOnnxOpset = 28;
/// The oldest default-domain opset onnxc reads: models from it up to
/// kMinOnnxOpset are converted to kMinOnnxOpset first (OpsetConversion.h).
constexpr int64_t kOldestOnnxOpset = 7;

/// Maps "ai.onnx" to "" so both spellings of the default domain agree.
std::string canonicalDomain(const std::string &domain);

/// Parses the file into a ModelProto. Throws onnxc::Error (messages without
/// the file prefix) when the file is missing, unreadable or not a model.
onnx::ModelProto loadModelProto(const std::string &path);
/// Parses a model held in memory with the same checks as loadModelProto
/// (size, protobuf validity, a graph present); what the fuzzers feed.
onnx::ModelProto parseModelProto(const void *data, size_t size);

/// Checks ir_version and opset_import: the default domain must be imported
/// at an opset in [kOldestOnnxOpset, kMaxOnnxOpset]. Returns the opsets.
OpsetMap checkOpsets(const onnx::ModelProto &model);

/// The folder holding the model file ("." for a bare file name); external
/// data is resolved relative to it.
std::string modelFolder(const std::string &path);

} // namespace onnxc
