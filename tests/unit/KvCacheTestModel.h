//===- tests/unit/KvCacheTestModel.h - A tiny decoder with a KV cache ------===//
//
// Text IR of a one-layer decoder the generator can run: token embedding,
// a sinusoid of the position, two heads of 8, a causal Attention reading past_k / past_v apart, the
// presents as Concat(past, new), logits over a vocabulary of 11. Its two
// caches compile to pairs updated in place (codegen/lower/CachePairs.h).
// Also its opset-24 form with a fixed-length cache, and the reference
// evaluator's greedy loop the generator tests compare with.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/eval/Evaluator.h"

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::kvtest {

inline std::string denseValues(int count, double scale, int seed) {
  std::string text = "dense<[";
  for (int i = 0; i < count; ++i) {
    // Deterministic and varied, so that greedy tokens do not repeat at once.
    double value = scale * std::sin(0.7 * i + 1.3 * seed) * std::cos(0.31 * i * seed + 0.2);
    text += (i ? ", " : "") + std::to_string(value);
  }
  return text + "]>";
}

inline std::string tinyDecoderText() {
  const int vocab = 11, hidden = 16;
  return "graph @tiny_decoder(%input_ids: i64[1, seq], %past_k: f32[1, 2, past, 8], "
         "%past_v: f32[1, 2, past, 8]) -> (%logits: f32[1, seq, 11], "
         "%present_k: f32[1, 2, total, 8], %present_v: f32[1, 2, total, 8]) {\n"
         "  const %emb: f32[11, 16] = " +
         denseValues(vocab * hidden, 1.5, 1) +
         "\n"
         "  const %wk: f32[16, 16] = " +
         denseValues(hidden * hidden, 0.6, 2) +
         "\n"
         "  const %wv: f32[16, 16] = " +
         denseValues(hidden * hidden, 0.6, 3) +
         "\n"
         "  const %wo: f32[16, 11] = " +
         denseValues(hidden * vocab, 1.0, 4) +
         "\n"
         "  const %freq: f32[1, 16] = " +
         denseValues(hidden, 0.9, 5) +
         "\n"
         "  const %heads: i64[4] = dense<[0, 0, 2, 8]>\n"
         "  const %one: i64[] = dense<1>\n"
         "  const %two: i64[] = dense<2>\n"
         "  const %axis1: i64[1] = dense<[1]>\n"
         "  const %merged: i64[3] = dense<[0, 0, 16]>\n"
         "  %tok = Gather(%emb, %input_ids) {axis = 0}\n"
         // Positions past, past + 1, ... (the cache's length read by Shape):
         // a sinusoid added to the embedding keeps greedy tokens varied.
         "  %past_shape = Shape(%past_k)\n"
         "  %past_len = Gather(%past_shape, %two) {axis = 0}\n"
         "  %ids_shape = Shape(%input_ids)\n"
         "  %new_len = Gather(%ids_shape, %one) {axis = 0}\n"
         "  %end = Add(%past_len, %new_len)\n"
         "  %pos = Range(%past_len, %end, %one)\n"
         "  %posf = Cast(%pos) {to = 1}\n"
         "  %posc = Unsqueeze(%posf, %axis1)\n"
         "  %angle = Mul(%posc, %freq)\n"
         "  %wave = Sin(%angle)\n"
         "  %x = Add(%tok, %wave)\n"
         "  %kx = MatMul(%x, %wk)\n"
         "  %vx = MatMul(%x, %wv)\n"
         "  %q4 = Reshape(%x, %heads)\n"
         "  %q = Transpose(%q4) {perm = [0, 2, 1, 3]}\n"
         "  %k4 = Reshape(%kx, %heads)\n"
         "  %k = Transpose(%k4) {perm = [0, 2, 1, 3]}\n"
         "  %v4 = Reshape(%vx, %heads)\n"
         "  %v = Transpose(%v4) {perm = [0, 2, 1, 3]}\n"
         "  %y = Attention(%q, %k, %v, _, %past_k, %past_v) {is_causal = 1}\n"
         "  %yt = Transpose(%y) {perm = [0, 2, 1, 3]}\n"
         "  %y3 = Reshape(%yt, %merged)\n"
         "  %h = Add(%y3, %x)\n"
         "  %logits = MatMul(%h, %wo)\n"
         "  %present_k = Concat(%past_k, %k) {axis = 2}\n"
         "  %present_v = Concat(%past_v, %v) {axis = 2}\n"
         "  return %logits, %present_k, %present_v\n"
         "}\n";
}

/// tinyDecoderText's decoder, the same weights, with opset 24's fixed-length
/// cache: past_k / past_v and the presents are [1, 2, length, 8] ("n" or a
/// number), present = TensorScatter(past, new, write_indices), the positions
/// count from write_indices, and the attention reads the presents with key j
/// visible to new position i when j <= write_indices + i. With
/// `presentAlsoRead`, an extra output sums present_v, so that pair keeps two
/// buffers (the in-place proof refuses it).
inline std::string tinyFixedDecoderText(const std::string &length, bool presentAlsoRead = false) {
  std::string text = tinyDecoderText();
  auto replace = [&](const std::string &from, const std::string &to) {
    size_t at = text.find(from);
    if (at == std::string::npos)
      return false;
    text.replace(at, from.size(), to);
    return true;
  };
  const std::string cache = "f32[1, 2, " + length + ", 8]";
  bool ok = replace("%input_ids: i64[1, seq], %past_k: f32[1, 2, past, 8], "
                    "%past_v: f32[1, 2, past, 8]",
                    "%input_ids: i64[1, seq], %write_indices: i64[1], %past_k: " + cache +
                        ", %past_v: " + cache) &&
            replace("%present_k: f32[1, 2, total, 8], %present_v: f32[1, 2, total, 8])",
                    "%present_k: " + cache + ", %present_v: " + cache +
                        (presentAlsoRead ? ", %v_sum: f32[])" : ")")) &&
            replace("  %past_shape = Shape(%past_k)\n  %past_len = Gather(%past_shape, %two) "
                    "{axis = 0}\n",
                    "  %past_len = Gather(%write_indices, %zero) {axis = 0}\n") &&
            replace("  %end = Add(%past_len, %new_len)\n  %pos = Range(%past_len, %end, %one)\n",
                    "  %offsets = Range(%zero, %new_len, %one)\n"
                    "  %pos = Add(%offsets, %past_len)\n") &&
            replace("  const %one: i64[] = dense<1>\n",
                    "  const %one: i64[] = dense<1>\n  const %zero: i64[] = dense<0>\n") &&
            replace("  %y = Attention(%q, %k, %v, _, %past_k, %past_v) {is_causal = 1}\n",
                    "  %present_k = TensorScatter(%past_k, %k, %write_indices)\n"
                    "  %present_v = TensorScatter(%past_v, %v, %write_indices)\n"
                    "  %cache_shape = Shape(%past_k)\n"
                    "  %cache_len = Gather(%cache_shape, %two) {axis = 0}\n"
                    "  %key_index = Range(%zero, %cache_len, %one)\n"
                    "  %last_key = Unsqueeze(%pos, %axis1)\n"
                    "  %visible = LessOrEqual(%key_index, %last_key)\n"
                    "  %y = Attention(%q, %present_k, %present_v, %visible)\n") &&
            replace("  %present_k = Concat(%past_k, %k) {axis = 2}\n"
                    "  %present_v = Concat(%past_v, %v) {axis = 2}\n"
                    "  return %logits, %present_k, %present_v\n",
                    presentAlsoRead ? "  %v_sum = ReduceSum(%present_v) {keepdims = 0}\n"
                                      "  return %logits, %present_k, %present_v, %v_sum\n"
                                    : "  return %logits, %present_k, %present_v\n");
  return ok ? text : "";
}

/// Greedy tokens of the reference evaluator's loop over tinyDecoderText's
/// decoder (or one with its inputs and outputs), feeding each step's
/// presents back as the pasts (argmax, the lowest id on ties).
inline std::vector<int64_t> referenceGreedy(const Graph &graph, std::vector<int64_t> feed,
                                            int count) {
  Tensor pastK(DType::F32, {1, 2, 0, 8}), pastV = pastK;
  std::vector<int64_t> produced;
  while (int(produced.size()) < count) {
    Tensor input = Tensor::fromVector<int64_t>({1, int64_t(feed.size())}, feed);
    std::vector<Tensor> out =
        evaluateGraph(graph, {{"input_ids", input}, {"past_k", pastK}, {"past_v", pastV}});
    const Tensor &logits = out[0];
    int64_t vocab = logits.dims()[2], row = (logits.dims()[1] - 1) * vocab, best = 0;
    for (int64_t j = 1; j < vocab; ++j)
      if (logits.data<float>()[row + j] > logits.data<float>()[row + best])
        best = j;
    produced.push_back(best);
    feed = {best};
    pastK = out[1];
    pastV = out[2];
  }
  return produced;
}

} // namespace onnxc::kvtest
