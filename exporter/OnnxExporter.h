//===- exporter/OnnxExporter.h - ir::Graph -> ONNX model --------------------===//
//
// Writes a graph (at any optimization level) back as a standard ONNX model
// that onnxruntime, Netron and the onnx checker read. The IR's ONNX-level ops
// already have opset-23 semantics, so most nodes map one to one; onnxc's own
// ops and attributes are rewritten into standard ops (docs/EXPORT.md), and
// what has no standard spelling is emitted in the `onnxc` domain.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace onnxc {

/// The opset of the default domain the exporter writes (Attention and
/// RMSNormalization are opset-23 ops); a graph with an op of a newer opset
/// (TensorScatter, CumProd, BitCast, LinearAttention) is written at that one.
constexpr int64_t kExportOpset = 23;
/// The ONNX IR version that goes with opset 23.
constexpr int64_t kExportIrVersion = 11;
/// The domain of ops without a standard ONNX form.
inline constexpr const char *kOnnxcDomain = "onnxc";

struct OnnxExportOptions {
  /// Written as the model's producer_version.
  std::string producerVersion;
};

/// What an export produced beyond plain standard ops.
struct OnnxExportReport {
  /// Op types emitted in the `onnxc` domain (onnxruntime cannot run them).
  std::set<std::string> customOps;
};

/// Builds the model. Throws onnxc::Error naming the value or node that
/// cannot be written (an elided constant read from text IR, an unknown
/// dtype on a graph input or output).
onnx::ModelProto exportOnnxModel(const Graph &graph, const OnnxExportOptions &options = {},
                                 OnnxExportReport *report = nullptr);

/// Builds the model and writes it to `path`; throws onnxc::Error naming the
/// file when it cannot be written or the model is over protobuf's 2 GiB.
void writeOnnxFile(const Graph &graph, const std::string &path,
                   const OnnxExportOptions &options = {}, OnnxExportReport *report = nullptr);

} // namespace onnxc
