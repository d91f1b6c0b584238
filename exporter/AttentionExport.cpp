//===- exporter/AttentionExport.cpp - Attention ops as standard ONNX --------===//
//
// The IR's Attention is ONNX's opset-23 op plus three onnxc attributes, each
// rewritten into standard ops here:
//
//   seq_first = 1   Q, K, V, Y are [S, b, h*d]: Transpose(1, 0, 2) around the op.
//   window = r      keys with |j - (i + past)| > r are hidden: a bool band
//                   mask built from the shapes (Range, Sub, Abs, LessOrEqual).
//   mask_fill = f   a hidden key scores f instead of -inf: an additive float
//                   mask Where(visible, m, f + m). Exact in f32 when s + f
//                   rounds to f (|f| >= 1e30, as finfo.min fills are); a
//                   smaller finite fill is decomposed into MatMul, Where,
//                   Softmax, MatMul (AttentionDecomposition.cpp), or kept as
//                   an `onnxc` op when that needs what is not constant.
//
// is_causal with a past_key is written as the band too: onnxc's diagonal is
// offset by the past length (query i sees keys up to i + past), which is
// the form that holds for every onnxruntime version. A mask that broadcasts
// over the queries is expanded to Sq rows, the only form onnxruntime reads.
//
// AdditiveAttention (Bahdanau) becomes the ops it was fused from:
//
//   Unsqueeze(q, 2) + Unsqueeze(k, 1) -> Tanh -> MatMul(score) -> [mask] -> Softmax -> MatMul(V)
//
//===----------------------------------------------------------------------===//
#include "exporter/AttentionExportSupport.h"
#include "exporter/NodeExport.h"

#include <cmath>
#include <limits>
#include <optional>

namespace onnxc {

namespace {

/// A finite fill this large is absorbed by any score: s + f rounds to f.
constexpr double kAbsorbingFill = -1e30;

} // namespace

// d = j - (i + past); causal: d <= 0; window r: |d| <= r.
std::string bandMask(AttentionBuilder &b, const std::string &q, const std::string &k,
                     const std::string &pastKey, int64_t seqAxis, bool causal, int64_t window) {
  std::string zero = b.writer.scalar(b.base + ".zero", DType::I64, 0);
  std::string one = b.writer.scalar(b.base + ".one", DType::I64, 1);
  std::string querySeq = b.dim(q, seqAxis, "q_seq");
  std::string total = b.dim(k, seqAxis, "kv_seq");
  std::string queryPos = b.op("Range", {zero, querySeq, one}, "q_pos");
  if (!pastKey.empty()) {
    std::string past = b.dim(pastKey, 2, "past_seq");
    total = b.op("Add", {total, past}, "total_seq");
    queryPos = b.op("Add", {queryPos, past}, "q_pos_after_past");
  }
  std::string keyPos = b.op("Range", {zero, total, one}, "k_pos");
  std::string column =
      b.op("Unsqueeze", {queryPos, b.writer.int64s(b.base + ".axes1", {1})}, "q_col");
  std::string distance = b.op("Sub", {keyPos, column}, "distance");
  std::string visible;
  if (causal)
    visible = b.op("LessOrEqual", {distance, zero}, "causal");
  if (window >= 0) {
    std::string width = b.writer.scalar(b.base + ".window", DType::I64, double(window));
    std::string inBand =
        b.op("LessOrEqual", {b.op("Abs", {distance}, "abs_distance"), width}, "in_window");
    visible = visible.empty() ? inBand : b.op("And", {visible, inBand}, "visible_band");
  }
  return visible;
}

namespace {

/// onnxruntime reads attn_mask as [..., Sq, total] with no broadcasting of
/// the query axis (1.23 computes garbage for [b, 1, 1, total], 1.32 refuses
/// it), so a mask that broadcasts over the queries is expanded to Sq rows:
/// Expand(mask, [Sq, 1]).
std::string expandQueryAxis(AttentionBuilder &b, const std::string &mask, const Value &maskValue,
                            const std::string &q, int64_t seqAxis, const Dim &querySeq) {
  const Shape &shape = maskValue.shape();
  if (shape.isRanked() && shape.rank() >= 2 && shape[shape.rank() - 2] == querySeq)
    return mask;
  std::string rows = b.writer.freshName(b.base + ".q_rows");
  onnx::NodeProto &rowCount = b.writer.addNode("Shape", {q}, {rows}, b.node.name() + "/Shape");
  addIntAttribute(rowCount, "start", seqAxis);
  addIntAttribute(rowCount, "end", seqAxis + 1);
  std::string target = b.writer.freshName(b.base + ".mask_rows");
  onnx::NodeProto &concat =
      b.writer.addNode("Concat", {rows, b.writer.int64s(b.base + ".one_column", {1})}, {target},
                       b.node.name() + "/Concat");
  addIntAttribute(concat, "axis", 0);
  return b.op("Expand", {mask, target}, "mask_per_query");
}

void writeStandard(AttentionBuilder &b, std::vector<std::string> inputs, bool boolMask,
                   bool hasMask, std::optional<double> fill, bool causal, int64_t window,
                   int64_t seqAxis, std::vector<std::string> outputs) {
  OnnxGraphWriter &writer = b.writer;
  const Node &node = b.node;
  DType dtype = node.operand(0)->dtype();
  const std::string &q = inputs[0], &k = inputs[1], &pastKey = inputs[4];
  std::string &mask = inputs[3];
  bool band = window >= 0 || (causal && !pastKey.empty()) || (fill && causal);
  if (band || (fill && boolMask)) {
    std::string visible = band ? bandMask(b, q, k, pastKey, seqAxis, causal, window) : "";
    if (boolMask)
      visible = visible.empty() ? mask : b.op("And", {visible, mask}, "visible");
    if (fill) {
      std::string kept = hasMask && !boolMask ? mask : writer.scalar(b.base + ".kept", dtype, 0);
      std::string fillValue = writer.scalar(b.base + ".fill", dtype, *fill);
      std::string hidden =
          hasMask && !boolMask ? b.op("Add", {mask, fillValue}, "hidden_score") : fillValue;
      mask = b.op("Where", {visible, kept, hidden}, "additive_mask");
    } else if (hasMask && !boolMask) {
      std::string minusInf =
          writer.scalar(b.base + ".minus_inf", dtype, -std::numeric_limits<double>::infinity());
      mask = b.op("Where", {visible, mask, minusInf}, "additive_mask");
    } else {
      mask = visible;
    }
    causal = false; // the band holds it
  }

  // onnxruntime runs a past only with the present outputs named too.
  if (!pastKey.empty()) {
    for (const char *present : {".present_key", ".present_value"})
      if (outputs.size() < 3)
        outputs.push_back(writer.freshName(b.base + present));
  }
  onnx::NodeProto &attention = writer.addNode("Attention", inputs, outputs, node.name());
  writer.copyAttributes(
      node, attention,
      {"seq_first", "window", "mask_fill", "is_causal", "softcap_first", "masked_rows_zero"});
  if (causal)
    addIntAttribute(attention, "is_causal", 1);
}

} // namespace

void exportAttention(OnnxGraphWriter &writer, const Node &node) {
  std::optional<double> fill;
  if (node.hasAttr("mask_fill") && !std::isinf(node.getFloat("mask_fill", 0.0f)))
    fill = node.getFloat("mask_fill", 0.0f);
  // ONNX Attention caps the score before the masks (onnx 1.23's erratum, onnxc's
  // softcap_first); the older order, capping the masked score, has no standard form
  // now. (A row hiding every key gives zeros in ONNX, NaN without onnxc's
  // masked_rows_zero: that difference is left to the fully masked rows.)
  if (node.getFloat("softcap", 0.0f) != 0.0f && node.getInt("softcap_first", 0) == 0) {
    writer.exportCustom(node);
    return;
  }
  std::optional<AttentionDecomposition> decomposed;
  if (fill && *fill > kAbsorbingFill) {
    decomposed = planAttentionDecomposition(node);
    if (!decomposed) {
      writer.exportCustom(node);
      return;
    }
  }
  AttentionBuilder b{writer, node, writer.name(node.result(0))};
  bool seqFirst = node.getInt("seq_first", 0) != 0;
  bool causal = node.getInt("is_causal", 0) != 0;
  int64_t window = node.getInt("window", -1);
  const Value *maskValue = node.operand(3);
  bool boolMask = maskValue && maskValue->dtype() == DType::Bool;
  std::string q = writer.name(node.operand(0)), k = writer.name(node.operand(1)),
              v = writer.name(node.operand(2)), mask = writer.name(maskValue),
              pastKey = writer.name(node.operand(4)), pastValue = writer.name(node.operand(5));
  if (seqFirst) {
    auto toBatchFirst = [&](const std::string &x, const std::string &what) {
      onnx::NodeProto &t = writer.addNode("Transpose", {x}, {writer.freshName(b.base + "." + what)},
                                          node.name() + "/Transpose");
      addIntsAttribute(t, "perm", {1, 0, 2});
      return t.output(0);
    };
    q = toBatchFirst(q, "q_batch_first");
    k = toBatchFirst(k, "k_batch_first");
    v = toBatchFirst(v, "v_batch_first");
  }

  int64_t seqAxis = node.operand(0)->shape().rank() == 3 ? 1 : 2;
  if (maskValue) {
    const Shape &qShape = node.operand(0)->shape();
    Dim querySeq = qShape.isRanked() ? qShape[seqFirst ? 0 : seqAxis] : Dim::unknown();
    mask = expandQueryAxis(b, mask, *maskValue, q, seqAxis, querySeq);
  }
  std::vector<std::string> outputs;
  for (const Value *result : node.results())
    outputs.push_back(writer.name(result));
  if (seqFirst)
    outputs[0] = writer.freshName(b.base + ".batch_first");
  if (decomposed) {
    std::string visible =
        causal || window >= 0 ? bandMask(b, q, k, pastKey, seqAxis, causal, window) : "";
    if (boolMask)
      visible = visible.empty() ? mask : b.op("And", {visible, mask}, "visible");
    writeDecomposedAttention(b, *decomposed, {q, k, v, pastKey, pastValue}, visible,
                             maskValue && !boolMask ? mask : "", *fill, outputs);
  } else {
    writeStandard(b, {q, k, v, mask, pastKey, pastValue}, boolMask, maskValue != nullptr, fill,
                  causal, window, seqAxis, outputs);
  }
  if (seqFirst) {
    onnx::NodeProto &t = writer.addNode("Transpose", {outputs[0]}, {writer.name(node.result(0))},
                                        node.name() + "/Transpose");
    addIntsAttribute(t, "perm", {1, 0, 2});
  }
}

void exportAdditiveAttention(OnnxGraphWriter &writer, const Node &node) {
  AttentionBuilder b{writer, node, writer.name(node.result(0))};
  DType dtype = node.operand(0)->dtype();
  std::string query =
      b.op("Unsqueeze", {writer.name(node.operand(0)), writer.int64s(b.base + ".axes2", {2})},
           "query_rows");
  std::string key =
      b.op("Unsqueeze", {writer.name(node.operand(1)), writer.int64s(b.base + ".axes1", {1})},
           "key_columns");
  std::string energy = b.op("Tanh", {b.op("Add", {query, key}, "sum")}, "energy");
  std::string scores = b.op("MatMul", {energy, writer.name(node.operand(3))}, "scores");
  if (const Value *mask = node.operand(4)) {
    if (mask->dtype() == DType::Bool) {
      double fillValue = node.getFloat("mask_fill", -std::numeric_limits<float>::infinity());
      std::string fill = writer.scalar(b.base + ".fill", dtype, fillValue);
      scores = b.op("Where", {writer.name(mask), scores, fill}, "masked");
    } else {
      scores = b.op("Add", {scores, writer.name(mask)}, "masked");
    }
  }
  std::string weights = writer.freshName(b.base + ".weights");
  onnx::NodeProto &softmax =
      writer.addNode("Softmax", {scores}, {weights}, node.name() + "/Softmax");
  addIntAttribute(softmax, "axis", -1);
  writer.addNode("MatMul", {weights, writer.name(node.operand(2))}, {writer.name(node.result(0))},
                 node.name());
}

} // namespace onnxc
