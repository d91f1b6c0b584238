//===- frontend/ops/MicrosoftBertAttentionOps.cpp - com.microsoft MultiHeadAttention, Attention
//-===//
//
// The fused attention ops of onnxruntime's transformer optimizer, imported as
// their projections (MatMul, Add, Split) and onnxc's own Attention:
//
//   MultiHeadAttention(query [B,S,D], key [B,L,D], value [B,L,Dv], bias
//     [D+D+Dv], key_padding_mask [B,T], attention_bias [B|1,N|1,S,T],
//     past_key [B,N,P,H], past_value) -> output, present_key, present_value
//   Attention(input [B,S,In], weights [In,Dq+Dk+Dv], bias, mask_index [B] or
//     [B,T], past [2,B,N,P,H], attention_bias) -> output, present [2,B,N,T,H]
//
// with T = P + L (P + S). As onnxruntime's CPU kernels: scores = scale * Q Kᵀ
// (scale 0 means 1/√H) + attention_bias + the key mask, where a masked key
// adds mask_filter_value (default -10000, additive: a row masking every key
// is uniform); unidirectional = 1 hides key j from query i when j > P + i.
// mask_index [B] holds each row's number of valid keys (keys at or past it
// are masked). A [B,T] mask is reshaped to [B,1,1,T] through the shape the
// other inputs give, so any other form (the [2B] and [3B+2] index forms, a
// [B,S,T] mask) fails with Reshape's one line instead of being misread.
//
// Refused at import, naming the node: packed QKV/KV forms and 4-D key/value
// of MultiHeadAttention (a declared rank other than 3), past_sequence_length,
// cache_indirection, the qk output, do_rotary, past_present_share_buffer,
// and a mask whose rank is not declared.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"
#include "frontend/ops/MicrosoftAttentionSupport.h"

#include "ir/Error.h"

namespace onnxc {
namespace {

using namespace contrib;

Value *concat0(OnnxNode &node, const std::vector<Value *> &parts, const std::string &name) {
  return node.emitStep(OpKind::Concat, parts, name, {{"axis", Attribute(int64_t(0))}});
}

/// How a key mask reads: 0/1 per key ([B, T]), a count of valid keys per row
/// ([B]: keys j < count), or, when the mask's rank is not declared at import
/// (a computed mask_index), whichever its rank says once shapes are known.
enum class MaskForm { Raw, Counts, ByRank };

/// keys j < count[b], as bool [B, T]; `counts` is [B, 1].
Value *keysBelow(OnnxNode &node, Value *counts, Value *total) {
  Value *zero = node.addConstant("key_zero", Tensor::scalar<int64_t>(0));
  Value *one = node.addConstant("key_one", Tensor::scalar<int64_t>(1));
  Value *keys =
      node.emitStep(OpKind::Range, {zero, toScalar(node, total, "keys_len"), one}, "key_positions");
  return node.emitStep(OpKind::Less, {keys, castTo(node, counts, kOnnxInt64, "key_counts")},
                       "keys_below");
}

Value *positive(OnnxNode &node, Value *mask) {
  Value *zero = node.emitStep(OpKind::CastLike,
                              {node.addConstant("key_izero", Tensor::scalar<float>(0.0f)), mask},
                              "key_izero_like");
  return node.emitStep(OpKind::Greater, {mask, zero}, "key_set");
}

/// A key mask as the additive [B, 1, 1, T] attn_mask. The final Reshape to
/// [B, 1, 1, T] refuses (one line) any other form that slipped through: a
/// [2B] index, a [B, S, T] mask with S > 1.
Value *keyMask(OnnxNode &node, Value *mask, MaskForm form, Value *batch, Value *total, float fill,
               Value *like) {
  Value *visible = nullptr;
  if (form == MaskForm::Raw) {
    visible = positive(node, mask);
  } else if (form == MaskForm::Counts) {
    visible = keysBelow(
        node,
        node.emitStep(OpKind::Unsqueeze, {mask, i64Constant(node, "counts_axis", {1})}, "counts"),
        total);
  } else {
    // [B] -> [B, 1] (counts), [B, T] stays; the rank picks the reading (a
    // constant once shapes are inferred). For T = 1 both readings agree.
    Value *flat =
        node.emitStep(OpKind::Flatten, {mask}, "mask_rows", {{"axis", Attribute(int64_t(1))}});
    Value *rank = node.emitStep(OpKind::Size, {node.emitStep(OpKind::Shape, {mask}, "mask_dims")},
                                "mask_rank");
    Value *isCounts = node.emitStep(
        OpKind::Equal, {rank, node.addConstant("rank_one", Tensor::scalar<int64_t>(1))},
        "is_counts");
    visible =
        node.emitStep(OpKind::Where, {isCounts, keysBelow(node, flat, total), positive(node, flat)},
                      "key_visible");
  }
  Value *shape = concat0(node, {batch, i64Constant(node, "mask_mid", {1, 1}), total}, "mask_shape");
  Value *additive = additiveMaskFrom(node, visible, true, fill, like, "key_mask");
  return node.emitStep(OpKind::Reshape, {additive, shape}, "key_mask_4d");
}

/// Adds two optional additive masks.
Value *combineMasks(OnnxNode &node, Value *a, Value *b) {
  if (!a || !b)
    return a ? a : b;
  return node.emitStep(OpKind::Add, {a, b}, "attn_bias");
}

AttributeMap attentionAttributes(const ContribAttributes &attrs, int64_t heads) {
  AttributeMap out = {{"q_num_heads", Attribute(heads)}, {"kv_num_heads", Attribute(heads)}};
  if (attrs.getInt("unidirectional", 0) != 0)
    out.insert_or_assign("is_causal", Attribute(int64_t(1)));
  if (float scale = attrs.getFloat("scale", 0.0f); scale != 0.0f)
    out.insert_or_assign("scale", Attribute(scale));
  return out;
}

void requireRank(OnnxNode &node, Value *value, int64_t rank, const char *what) {
  int64_t declared = declaredRank(value);
  if (declared >= 0 && declared != rank)
    fail(node.describe(), ": ", node.proto().op_type(), " with a ", declared, "-D ", what,
         " is not supported (only ", rank, "-D)");
}

/// The mask's declared rank (-1: not declared), refusing declared forms other than `allowed`.
int64_t maskRank(OnnxNode &node, Value *mask, std::initializer_list<int64_t> allowed,
                 const char *what) {
  int64_t rank = declaredRank(mask);
  if (rank < 0)
    return rank;
  for (int64_t r : allowed)
    if (r == rank)
      return rank;
  fail(node.describe(), ": ", node.proto().op_type(), " ", what, " of ", rank,
       "-D form is not supported");
}

enum MhaInput {
  MhaQuery,
  MhaKey,
  MhaValue,
  MhaBias,
  MhaKeyPadding,
  MhaAttentionBias,
  MhaPastKey,
  MhaPastValue,
  MhaPastSeqLen,
  MhaCacheIndirection,
  NumMhaInputs
};

void importMultiHeadAttention(OnnxNode &node) {
  ContribAttributes attrs(node);
  attrs.requireKnown({"num_heads", "scale", "mask_filter_value", "unidirectional"});
  std::vector<Value *> in = contribInputs(node, NumMhaInputs);
  refuseInput(node, in, MhaPastSeqLen, "past_sequence_length");
  refuseInput(node, in, MhaCacheIndirection, "cache_indirection");
  refuseOutput(node, 3, "qk");
  if (!in[MhaQuery] || !in[MhaKey] || !in[MhaValue])
    fail(node.describe(), ": MultiHeadAttention without separate key and value (packed QKV or "
                          "KV) is not supported");
  if (bool(in[MhaPastKey]) != bool(in[MhaPastValue]))
    fail(node.describe(), ": MultiHeadAttention needs past_key and past_value together");
  requireRank(node, in[MhaQuery], 3, "query");
  requireRank(node, in[MhaKey], 3, "key");
  requireRank(node, in[MhaValue], 3, "value");
  int64_t heads = attrs.requireInt("num_heads");
  if (heads <= 0)
    fail(node.describe(), ": num_heads must be positive, got ", heads);

  Value *q = in[MhaQuery], *k = in[MhaKey], *v = in[MhaValue];
  if (Value *bias = in[MhaBias]) {
    // bias = [q bias (D), k bias (D), v bias (Dv)], cut at the inputs' widths.
    Value *dq = dimOf(node, q, 2, "q_width"), *dk = dimOf(node, k, 2, "k_width");
    Value *qEnd = dq, *kEnd = node.emitStep(OpKind::Add, {dq, dk}, "k_end");
    Value *start = i64Constant(node, "bias_start", {0});
    Value *end = i64Constant(node, "bias_end", {INT64_MAX});
    q = node.emitStep(OpKind::Add, {q, node.emitStep(OpKind::Slice, {bias, start, qEnd}, "q_bias")},
                      "q_biased");
    k = node.emitStep(OpKind::Add, {k, node.emitStep(OpKind::Slice, {bias, qEnd, kEnd}, "k_bias")},
                      "k_biased");
    v = node.emitStep(OpKind::Add, {v, node.emitStep(OpKind::Slice, {bias, kEnd, end}, "v_bias")},
                      "v_biased");
  }
  Value *mask = in[MhaAttentionBias];
  if (Value *padding = in[MhaKeyPadding]) {
    int64_t rank = maskRank(node, padding, {2}, "key_padding_mask");
    Value *total = dimOf(node, k, 1, "kv_len");
    if (in[MhaPastKey])
      total = node.emitStep(OpKind::Add, {dimOf(node, in[MhaPastKey], 2, "past_len"), total},
                            "total_len");
    mask = combineMasks(node, mask,
                        keyMask(node,
                                rank < 0 ? node.emitStep(OpKind::Flatten, {padding}, "padding_rows",
                                                         {{"axis", Attribute(int64_t(1))}})
                                         : padding,
                                MaskForm::Raw, dimOf(node, q, 0, "batch"), total,
                                attrs.getFloat("mask_filter_value", -10000.0f), q));
  }
  node.emit(OpKind::Attention, trimmed({q, k, v, mask, in[MhaPastKey], in[MhaPastValue]}),
            attentionAttributes(attrs, heads));
}

enum BertInput {
  BertInputX,
  BertWeights,
  BertBias,
  BertMaskIndex,
  BertPast,
  BertAttentionBias,
  BertPastSeqLen,
  NumBertInputs
};

/// The widths of Q, K, V in the packed projection.
std::vector<int64_t> qkvWidths(OnnxNode &node, const ContribAttributes &attrs, Value *weights) {
  AttributeMap all = node.attributes();
  if (auto it = all.find("qkv_hidden_sizes"); it != all.end()) {
    const std::vector<int64_t> &sizes = it->second.asInts();
    if (sizes.size() != 3 || sizes[0] != sizes[1] || sizes[0] <= 0 || sizes[2] <= 0)
      fail(node.describe(), ": qkv_hidden_sizes must be 3 positive sizes with Q's equal to K's");
    return sizes;
  }
  (void)attrs;
  int64_t width = weights->shape().isRanked() && weights->shape().rank() == 2
                      ? weights->shape()[1].constant().value_or(-1)
                      : -1;
  if (width <= 0 || width % 3 != 0)
    fail(node.describe(), ": Attention needs weights of a known width divisible by 3 (or "
                          "qkv_hidden_sizes)");
  return {width / 3, width / 3, width / 3};
}

void importBertAttention(OnnxNode &node) {
  ContribAttributes attrs(node);
  attrs.requireKnown({"num_heads", "qkv_hidden_sizes", "unidirectional", "scale",
                      "mask_filter_value", "do_rotary", "past_present_share_buffer",
                      "rotary_embedding_dim"});
  attrs.requireIntValue("do_rotary", 0, "rotary inside Attention");
  attrs.requireIntValue("past_present_share_buffer", 0, "one max-length past/present buffer");
  attrs.requireIntValue("rotary_embedding_dim", 0, "rotary inside Attention");
  std::vector<Value *> in = contribInputs(node, NumBertInputs);
  refuseInput(node, in, BertPastSeqLen, "past_sequence_length");
  if (!in[BertInputX] || !in[BertWeights])
    fail(node.describe(), ": Attention needs input and weights");
  requireRank(node, in[BertInputX], 3, "input");
  int64_t heads = attrs.requireInt("num_heads");
  if (heads <= 0)
    fail(node.describe(), ": num_heads must be positive, got ", heads);

  Value *x = in[BertInputX];
  Value *qkv = node.emitStep(OpKind::MatMul, {x, in[BertWeights]}, "qkv");
  if (in[BertBias])
    qkv = node.emitStep(OpKind::Add, {qkv, in[BertBias]}, "qkv_biased");
  std::vector<Value *> parts =
      splitConstant(node, qkv, 2, qkvWidths(node, attrs, in[BertWeights]), "qkv_part");
  Value *pastKey = nullptr, *pastValue = nullptr;
  if (Value *past = in[BertPast]) {
    requireRank(node, past, 5, "past");
    auto half = [&](int64_t index, const char *name) {
      return node.emitStep(OpKind::Gather,
                           {past, node.addConstant(name, Tensor::scalar<int64_t>(index))}, name,
                           {{"axis", Attribute(int64_t(0))}});
    };
    pastKey = half(0, "past_key"), pastValue = half(1, "past_value");
  }
  Value *mask = in[BertAttentionBias];
  if (Value *index = in[BertMaskIndex]) {
    int64_t rank = maskRank(node, index, {1, 2}, "mask_index");
    Value *total = dimOf(node, x, 1, "seq_len");
    if (pastKey)
      total = node.emitStep(OpKind::Add, {dimOf(node, in[BertPast], 3, "past_len"), total},
                            "total_len");
    mask = combineMasks(node, mask,
                        keyMask(node, index,
                                rank < 0    ? MaskForm::ByRank
                                : rank == 1 ? MaskForm::Counts
                                            : MaskForm::Raw,
                                dimOf(node, x, 0, "batch"), total,
                                attrs.getFloat("mask_filter_value", -10000.0f), x));
  }

  // Attention's results: Y, and the present key and value when a present is asked for.
  bool present = node.proto().output_size() > 1 && !node.proto().output(1).empty();
  Graph &graph = node.context().graph();
  std::vector<std::string> names = {node.proto().output(0)};
  if (present) {
    names.push_back(node.context().freshName(node.proto().output(1) + "_key"));
    names.push_back(node.context().freshName(node.proto().output(1) + "_value"));
  }
  Node *attention = graph.createNode(
      OpKind::Attention, trimmed({parts[0], parts[1], parts[2], mask, pastKey, pastValue}),
      unsigned(names.size()), node.proto().name(), names);
  for (const auto &[name, value] : attentionAttributes(attrs, heads))
    attention->setAttr(name, value);
  node.bindOutput(0, attention->result(0));
  if (present) {
    Value *axis = i64Constant(node, "stack_axis", {0});
    Value *key = node.emitStep(OpKind::Unsqueeze, {attention->result(1), axis}, "present_k");
    Value *value = node.emitStep(OpKind::Unsqueeze, {attention->result(2), axis}, "present_v");
    node.emitOutput(1, OpKind::Concat, {key, value}, {{"axis", Attribute(int64_t(0))}});
  }
}

} // namespace

void registerMicrosoftBertAttentionImporters(OpImporterRegistry &registry) {
  registry.add(
      {"com.microsoft", "MultiHeadAttention", 1, OpKind::Attention, importMultiHeadAttention});
  registry.add({"com.microsoft", "Attention", 1, OpKind::Attention, importBertAttention});
}

} // namespace onnxc
