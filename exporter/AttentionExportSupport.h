//===- exporter/AttentionExportSupport.h - Shared by the attention exporters ===//
#pragma once

#include "exporter/OnnxGraphWriter.h"

#include <optional>
#include <string>
#include <vector>

namespace onnxc {

/// Appends the nodes of one IR attention node, naming temporaries after it.
struct AttentionBuilder {
  OnnxGraphWriter &writer;
  const Node &node;
  std::string base; // prefix of temp names

  std::string op(std::string_view type, std::vector<std::string> inputs, const std::string &what) {
    return writer.addTemp(type, std::move(inputs), base + "." + what, node.name());
  }
  /// dims[axis] of `tensor` as an i64 scalar.
  std::string dim(const std::string &tensor, int64_t axis, const std::string &what) {
    std::string oneElement = writer.freshName(base + "." + what + "_shape");
    onnx::NodeProto &shape =
        writer.addNode("Shape", {tensor}, {oneElement}, node.name() + "/Shape");
    addIntAttribute(shape, "start", axis);
    addIntAttribute(shape, "end", axis + 1);
    return op("Squeeze", {oneElement, writer.int64s(base + ".axes0", {0})}, what);
  }
};

/// The keys each query may see under is_causal / window, as a bool
/// [Sq, past + Sk] tensor (AttentionExport.cpp). `seqAxis` is the sequence
/// axis of `q` and `k` (1 in the 3-D form, 2 in the 4-D one).
std::string bandMask(AttentionBuilder &b, const std::string &q, const std::string &k,
                     const std::string &pastKey, int64_t seqAxis, bool causal, int64_t window);

/// What writing an Attention as MatMul / Softmax / MatMul needs to know.
struct AttentionDecomposition {
  bool threeD = false;
  int64_t qHeads = 0, kvHeads = 0, headSize = 0;
  double scale = 1;
};
/// The plan, or nullopt when the node has no decomposition here (its
/// qk_matmul_output is read, or head counts or sizes are not constants).
std::optional<AttentionDecomposition> planAttentionDecomposition(const Node &node);
/// Writes softmax(Where(visible, Q·Kᵀ·scale, fill) + additive)·V over the
/// past and new keys; `inputs` are q, k, v, past_key, past_value (batch
/// first), `visible` a bool mask or "", `additive` a float mask or "".
void writeDecomposedAttention(AttentionBuilder &b, const AttentionDecomposition &plan,
                              const std::vector<std::string> &inputs, const std::string &visible,
                              const std::string &additive, double fill,
                              const std::vector<std::string> &outputs);

} // namespace onnxc
