//===- frontend/OldOpsetRules.h - onnxc's own rules around the converter ---===//
//
// What OpsetConversion.cpp adds to ONNX's version converter where its
// adapters fall short: a rule of its own for the pre-13 Softmax family, the
// Resize-10 coordinates, and the clean-up of the first after import.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <onnx/onnx_pb.h>

#include <functional>
#include <string>
#include <unordered_set>

namespace onnxc {

using NameSet = std::unordered_set<std::string>;

/// Calls `visit` on the graph and on every subgraph (If, Loop, Scan bodies).
void forEachGraph(onnx::GraphProto &graph, const std::function<void(onnx::GraphProto &)> &visit);

/// `base`, or `base_N`, whichever `names` lacks; claimed in `names`.
std::string freshName(NameSet &names, const std::string &base);

/// Whether a graph (or subgraph) holds a default-domain Softmax, LogSoftmax or Hardmax.
bool hasLegacySoftmax(const onnx::GraphProto &graph);

/// Rewrites every pre-13 Softmax, LogSoftmax and Hardmax of the graph and its
/// subgraphs into a form that means the same at opset 13 (see the .cpp);
/// new value names are taken from `names`.
void rewriteLegacySoftmax(onnx::GraphProto &graph, NameSet &names);

/// Gives the Resize nodes the converter made of Resize-10 and Upsample the
/// coordinates those computed (asymmetric, rounding down).
void setResize10Semantics(onnx::GraphProto &graph);

/// Undoes rewriteLegacySoftmax's Flatten/Reshape pair where the imported
/// graph's inferred shapes show `axis` was the input's last axis. Run on a
/// converted model's graph after shape inference.
void simplifyConvertedSoftmax(Graph &graph);

} // namespace onnxc
