//===- exporter/AttentionDecomposition.cpp - Attention as MatMul/Softmax ----===//
//
// The one Attention no standard Attention input expresses: a finite
// mask_fill too small to absorb the score (−1e4, −1e9), which *replaces* a
// hidden key's score. It is written as the ops it stands for:
//
//   [3-D: Reshape(0, 0, h, -1) -> Transpose(0, 2, 1, 3)]  Q, K, V per head
//   [Concat(past, new) on the sequence axis]               K, V (the present outputs)
//   [Unsqueeze, Expand, Reshape]                           K, V repeated per query group
//   MatMul(Q, Transpose(K)) -> Mul(scale) -> Where(visible, s, fill) -> [Add(mask)]
//     -> [softcap: Mul(Tanh(Div(s, cap)), cap)] -> Softmax -> MatMul(V)
//   [3-D: Transpose(0, 2, 1, 3) -> Reshape(0, 0, -1)]
//
//===----------------------------------------------------------------------===//
#include "exporter/AttentionExportSupport.h"

#include <cmath>

namespace onnxc {

namespace {

std::optional<int64_t> constantDim(const Value *value, size_t axis) {
  const Shape &shape = value->shape();
  if (!shape.isRanked() || axis >= shape.rank())
    return std::nullopt;
  return shape[axis].constant();
}

/// [b, S, h*d] -> [b, h, S, d].
std::string splitHeads(AttentionBuilder &b, const std::string &x, int64_t heads,
                       const std::string &what) {
  std::string perHead = b.op(
      "Reshape", {x, b.writer.int64s(b.base + ".split_shape", {0, 0, heads, -1})}, what + "_split");
  onnx::NodeProto &t =
      b.writer.addNode("Transpose", {perHead}, {b.writer.freshName(b.base + "." + what + "_heads")},
                       b.node.name() + "/Transpose");
  addIntsAttribute(t, "perm", {0, 2, 1, 3});
  return t.output(0);
}

/// [b, g, T, d] -> [b, g*group, T, d], head i reading group head i / group.
std::string repeatHeads(AttentionBuilder &b, const std::string &x, int64_t group, int64_t heads,
                        const std::string &what) {
  std::string unsqueezed =
      b.op("Unsqueeze", {x, b.writer.int64s(b.base + ".axes2", {2})}, what + "_unsqueezed");
  std::string repeated =
      b.op("Expand", {unsqueezed, b.writer.int64s(b.base + ".group_shape", {1, 1, group, 1, 1})},
           what + "_expanded");
  std::string lastDim = b.writer.freshName(b.base + "." + what + "_head_size");
  onnx::NodeProto &shape = b.writer.addNode("Shape", {x}, {lastDim}, b.node.name() + "/Shape");
  addIntAttribute(shape, "start", 3);
  std::string target = b.writer.freshName(b.base + "." + what + "_repeated_shape");
  onnx::NodeProto &concat = b.writer.addNode(
      "Concat", {b.writer.int64s(b.base + ".repeat_prefix", {0, heads, -1}), lastDim}, {target},
      b.node.name() + "/Concat");
  addIntAttribute(concat, "axis", 0);
  return b.op("Reshape", {repeated, target}, what + "_repeated");
}

} // namespace

std::optional<AttentionDecomposition> planAttentionDecomposition(const Node &node) {
  if (node.numResults() > 3)
    return std::nullopt; // qk_matmul_output is read
  const Value *q = node.operand(0), *k = node.operand(1);
  if (!q->shape().isRanked() || !k->shape().isRanked())
    return std::nullopt;
  AttentionDecomposition plan;
  plan.threeD = q->shape().rank() == 3;
  if (plan.threeD) {
    plan.qHeads = node.getInt("q_num_heads", 0);
    plan.kvHeads = node.getInt("kv_num_heads", 0);
    std::optional<int64_t> hidden = constantDim(q, 2);
    if (!hidden || plan.qHeads <= 0 || plan.kvHeads <= 0 || *hidden % plan.qHeads != 0)
      return std::nullopt;
    plan.headSize = *hidden / plan.qHeads;
  } else {
    std::optional<int64_t> qHeads = constantDim(q, 1), kvHeads = constantDim(k, 1),
                           headSize = constantDim(q, 3);
    if (!qHeads || !kvHeads || !headSize)
      return std::nullopt;
    plan.qHeads = *qHeads;
    plan.kvHeads = *kvHeads;
    plan.headSize = *headSize;
  }
  if (plan.kvHeads <= 0 || plan.qHeads % plan.kvHeads != 0 || plan.headSize <= 0)
    return std::nullopt;
  plan.scale = node.hasAttr("scale") ? double(node.getFloat("scale", 1.0f))
                                     : 1.0 / std::sqrt(double(plan.headSize));
  return plan;
}

void writeDecomposedAttention(AttentionBuilder &b, const AttentionDecomposition &plan,
                              const std::vector<std::string> &inputs, const std::string &visible,
                              const std::string &additive, double fill,
                              const std::vector<std::string> &outputs) {
  OnnxGraphWriter &writer = b.writer;
  const Node &node = b.node;
  DType dtype = node.operand(0)->dtype();
  std::string q = inputs[0], k = inputs[1], v = inputs[2];
  const std::string &pastKey = inputs[3], &pastValue = inputs[4];
  if (plan.threeD) {
    q = splitHeads(b, q, plan.qHeads, "q");
    k = splitHeads(b, k, plan.kvHeads, "k");
    v = splitHeads(b, v, plan.kvHeads, "v");
  }
  if (!pastKey.empty()) {
    auto withPast = [&](const std::string &past, const std::string &current, size_t output,
                        const std::string &what) {
      std::string all =
          output < outputs.size() ? outputs[output] : writer.freshName(b.base + "." + what);
      onnx::NodeProto &concat =
          writer.addNode("Concat", {past, current}, {all}, node.name() + "/Concat");
      addIntAttribute(concat, "axis", 2);
      return all;
    };
    k = withPast(pastKey, k, 1, "present_key");
    v = withPast(pastValue, v, 2, "present_value");
  }
  if (plan.qHeads != plan.kvHeads) {
    int64_t group = plan.qHeads / plan.kvHeads;
    k = repeatHeads(b, k, group, plan.qHeads, "k");
    v = repeatHeads(b, v, group, plan.qHeads, "v");
  }
  std::string keysT = writer.freshName(b.base + ".k_transposed");
  onnx::NodeProto &transpose =
      writer.addNode("Transpose", {k}, {keysT}, node.name() + "/Transpose");
  addIntsAttribute(transpose, "perm", {0, 1, 3, 2});
  std::string scores = b.op("MatMul", {q, keysT}, "scores");
  scores = b.op("Mul", {scores, writer.scalar(b.base + ".scale", dtype, plan.scale)}, "scaled");
  if (!visible.empty())
    scores =
        b.op("Where", {visible, scores, writer.scalar(b.base + ".fill", dtype, fill)}, "filled");
  if (!additive.empty())
    scores = b.op("Add", {scores, additive}, "masked");
  double cap = node.getFloat("softcap", 0.0f);
  if (cap > 0) {
    std::string capValue = writer.scalar(b.base + ".softcap", dtype, cap);
    std::string squashed = b.op("Tanh", {b.op("Div", {scores, capValue}, "over_cap")}, "squashed");
    scores = b.op("Mul", {squashed, capValue}, "capped");
  }
  std::string weights = writer.freshName(b.base + ".weights");
  onnx::NodeProto &softmax =
      writer.addNode("Softmax", {scores}, {weights}, node.name() + "/Softmax");
  addIntAttribute(softmax, "axis", -1);
  if (!plan.threeD) {
    writer.addNode("MatMul", {weights, v}, {outputs[0]}, node.name());
    return;
  }
  std::string heads = b.op("MatMul", {weights, v}, "heads");
  std::string merged = writer.freshName(b.base + ".merged");
  onnx::NodeProto &back =
      writer.addNode("Transpose", {heads}, {merged}, node.name() + "/Transpose");
  addIntsAttribute(back, "perm", {0, 2, 1, 3});
  writer.addNode("Reshape", {merged, writer.int64s(b.base + ".merge_shape", {0, 0, -1})},
                 {outputs[0]}, node.name());
}

} // namespace onnxc
