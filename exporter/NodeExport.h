//===- exporter/NodeExport.h - Writing one IR node as ONNX nodes ------------===//
#pragma once

#include "exporter/OnnxGraphWriter.h"

namespace onnxc {

/// Writes `node` as one or more standard ONNX nodes (or an `onnxc` node when
/// there is no standard form) whose outputs carry its results' names.
void exportNode(OnnxGraphWriter &writer, const Node &node);

/// Attention with onnxc's attributes (seq_first, window, mask_fill) turned
/// into standard inputs and Transposes (AttentionExport.cpp).
void exportAttention(OnnxGraphWriter &writer, const Node &node);
/// AdditiveAttention as Unsqueeze, Add, Tanh, MatMul, mask, Softmax, MatMul.
void exportAdditiveAttention(OnnxGraphWriter &writer, const Node &node);

} // namespace onnxc
