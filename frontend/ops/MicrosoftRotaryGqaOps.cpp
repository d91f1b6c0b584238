//===- frontend/ops/MicrosoftRotaryGqaOps.cpp - com.microsoft RotaryEmbedding, GroupQueryAttention
//-===//
//
// onnxruntime's RotaryEmbedding and GroupQueryAttention (the op of
// onnxruntime-genai's model builder) as onnxc's own RotaryEmbedding and
// Attention, so the fused attention kernel and the in-place KV cache serve
// them.
//
// RotaryEmbedding(input, position_ids, cos_cache, sin_cache): input is
// [B, S, hidden] or [B, N, S, H]; position_ids [B, S], or one element that
// is the position of the first token (position s is then that + s). With
// rotary_embedding_dim = 0 the head size is 2 * cos_cache's width and
// num_heads may be absent: a 3-D input is then viewed as [B*S, 1, N, H],
// whose "sequence" axis is the heads, every head of a token taking the
// token's position.
//
// GroupQueryAttention(query, key, value, past_key, past_value, seqlens_k,
// total_sequence_length, cos_cache, sin_cache, ...), onnxruntime's CPU
// kernel: for batch b, seqlens_k[b] + 1 keys are valid; the new tokens sit
// at past_b = seqlens_k[b] + 1 - S (0 on the first prompt, S ==
// total_sequence_length), which is where the present cache puts them and
// the positions rotary gives them; query s sees keys [past_b + s - window,
// past_b + s]. onnxc imports the form in which the present is the past
// followed by the new keys (the form its own generator and KV-cache pairs
// run): Attention(Q, K, V, past_key, past_value) {is_causal, window}, with
// rotary positions past_b + s. That is exactly onnxruntime's result when
// total_sequence_length = past length + S and every past_b equals the past
// length (or the prompt is the first and there is no past), whatever the
// padding of a first prompt. Other inputs - a past buffer longer than its
// content (onnxruntime's past_present_share_buffer form) or batch rows of
// different lengths in a cached step - would put the new keys elsewhere, so
// a guard (MicrosoftAttentionSupport.h) fails such a run with one line
// instead of computing something else.
//
// softcap becomes Attention's softcap with onnxc's softcap_first = 1 (the
// score capped before the masks; ONNX's Attention caps the masked score).
// Refused at import, naming the node: smooth_softmax, qk_output and the output_qk output,
// position_ids, attention_bias and head_sink inputs, packed batching.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"
#include "frontend/ops/MicrosoftAttentionSupport.h"

#include "ir/Error.h"

namespace onnxc {
namespace {

using namespace contrib;

/// A known constant dim of a value's declared type (graph inputs and
/// initializers are typed at import), or -1.
int64_t declaredDim(const Value *value, size_t axis) {
  if (!value || !value->shape().isRanked() || value->shape().rank() <= axis)
    return -1;
  std::optional<int64_t> dim = value->shape()[axis].constant();
  return dim ? *dim : -1;
}

/// position_ids of one element as [B, S]: offset + s.
Value *positionsFromOffset(OnnxNode &node, Value *offset, Value *batch, Value *seq) {
  Value *zero = node.addConstant("pos_zero", Tensor::scalar<int64_t>(0));
  Value *one = node.addConstant("pos_one", Tensor::scalar<int64_t>(1));
  Value *steps = node.emitStep(OpKind::Range, {zero, toScalar(node, seq, "pos_len"), one}, "steps");
  Value *start = node.emitStep(
      OpKind::Reshape,
      {castTo(node, offset, kOnnxInt64, "pos_offset"), i64Constant(node, "pos_one_shape", {1})},
      "pos_start");
  Value *row = node.emitStep(OpKind::Add, {start, steps}, "pos_row");
  Value *shape =
      node.emitStep(OpKind::Concat, {batch, seq}, "pos_shape", {{"axis", Attribute(int64_t(0))}});
  return node.emitStep(OpKind::Expand, {row, shape}, "positions");
}

void importContribRotaryEmbedding(OnnxNode &node) {
  ContribAttributes attrs(node);
  attrs.requireKnown(
      {"interleaved", "rotary_embedding_dim", "num_heads", "scale", "is_packed_batching"});
  attrs.requireIntValue("is_packed_batching", 0, "ragged batches");
  std::vector<Value *> in = contribInputs(node, 4);
  for (size_t i = 0; i < 4; ++i)
    if (!in[i])
      fail(node.describe(), ": RotaryEmbedding needs all 4 inputs");
  Value *x = in[0], *positions = in[1], *cosCache = in[2], *sinCache = in[3];
  int64_t numHeads = attrs.getInt("num_heads", 0);
  int64_t rotaryDim = attrs.getInt("rotary_embedding_dim", 0);
  if (rotaryDim > 0 && numHeads <= 0)
    fail(node.describe(), ": RotaryEmbedding with rotary_embedding_dim needs num_heads");
  int64_t rank = x->shape().isRanked() ? int64_t(x->shape().rank()) : -1;
  int64_t cacheWidth = declaredDim(cosCache, 1);
  // x computed by a node (a projection's MatMul, as the genai builder's fp16
  // CPU models write it) is typed only after the import: the file's
  // value_info says whether it is [B, S, hidden], and the hidden size gives
  // the heads (head size 2 * cache width), which a Reshape to that hidden
  // size and the IR op's shape rule then hold x to.
  if (const std::vector<int64_t> *declared = node.context().declaredDims(node.proto().input(0));
      rank < 0 && declared && declared->size() == 3 && numHeads <= 0 && cacheWidth > 0 &&
      declared->back() > 0 && declared->back() % (2 * cacheWidth) == 0) {
    numHeads = declared->back() / (2 * cacheWidth);
    x = node.emitStep(OpKind::Reshape, {x, i64Constant(node, "x_shape", {0, 0, declared->back()})},
                      "x_declared");
    rank = 3;
  }

  // position_ids: one element (declared so) is the first token's position;
  // anything else is taken as [B, S], which the IR op checks (a one-element
  // tensor of undeclared shape then fails there, never misread). Which axis of
  // x is the sequence follows its declared rank (3-D unless declared 4-D).
  int64_t seqAxis = rank == 4 ? 2 : 1;
  bool offsetForm = positions->shape().isRanked() && positions->shape().rank() <= 1 &&
                    positions->shape().numElements() == Dim(1);
  Value *ids = positions;
  if (offsetForm)
    ids = positionsFromOffset(node, positions, dimOf(node, x, 0, "batch"),
                              dimOf(node, x, seqAxis, "seq"));

  AttributeMap rotaryAttrs = {{"interleaved", Attribute(attrs.getInt("interleaved", 0))},
                              {"rotary_embedding_dim", Attribute(rotaryDim)}};
  if (rank == 4 || numHeads > 0) {
    if (numHeads > 0)
      rotaryAttrs.insert_or_assign("num_heads", Attribute(numHeads));
    node.emit(OpKind::RotaryEmbedding, {x, cosCache, sinCache, ids}, rotaryAttrs);
    return;
  }
  if (rank != 3)
    fail(node.describe(), ": RotaryEmbedding input must have a declared rank of 3 or 4 when "
                          "num_heads is absent");
  if (cacheWidth <= 0)
    fail(node.describe(), ": RotaryEmbedding without num_heads needs a cos_cache of known width");
  // [B, S, N*H] -> [B*S, 1, N, H]: rows of heads, each at its token's position.
  int64_t headSize = 2 * cacheWidth;
  Value *rows =
      node.emitStep(OpKind::Mul, {dimOf(node, x, 0, "batch"), dimOf(node, x, 1, "seq")}, "rows");
  Value *viewShape =
      node.emitStep(OpKind::Concat, {rows, i64Constant(node, "view_tail", {1, -1, headSize})},
                    "view_shape", {{"axis", Attribute(int64_t(0))}});
  Value *view = node.emitStep(OpKind::Reshape, {x, viewShape}, "view");
  Value *idShape = node.emitStep(OpKind::Concat, {rows, i64Constant(node, "id_tail", {1})},
                                 "id_shape", {{"axis", Attribute(int64_t(0))}});
  Value *idColumn = node.emitStep(OpKind::Reshape, {ids, idShape}, "id_column");
  Value *idsShape = node.emitStep(OpKind::Concat, {rows, dimOf(node, view, 2, "heads")},
                                  "ids_shape", {{"axis", Attribute(int64_t(0))}});
  Value *headIds = node.emitStep(OpKind::Expand, {idColumn, idsShape}, "head_ids");
  Value *rotated = node.emitStep(OpKind::RotaryEmbedding, {view, cosCache, sinCache, headIds},
                                 "rotated", rotaryAttrs);
  node.emit(OpKind::Reshape, {rotated, node.emitStep(OpKind::Shape, {x}, "x_shape")}, {});
}

/// The GroupQueryAttention inputs by position.
enum GqaInput {
  Query,
  Key,
  ValueIn,
  PastKey,
  PastValue,
  SeqlensK,
  TotalSeqlen,
  CosCache,
  SinCache,
  PositionIds,
  AttentionBias,
  HeadSink,
  NumGqaInputs
};

/// Whether the cache layout onnxc imports is onnxruntime's for this run (see
/// the file comment), as a bool [1]: total = past + S, and either there is
/// no past or every batch row's seqlens_k + 1 is past + S.
Value *concatCacheHolds(OnnxNode &node, Value *seqlens, Value *total, Value *past, Value *seq) {
  Value *sum = node.emitStep(OpKind::Add, {past, seq}, "past_plus_new");
  Value *totalOk = node.emitStep(OpKind::Equal, {total, sum}, "total_ok");
  Value *one = i64Constant(node, "one", {1});
  Value *lengths = node.emitStep(OpKind::Add, {seqlens, one}, "lengths");
  Value *rowsOk = castTo(node, node.emitStep(OpKind::Equal, {lengths, sum}, "rows_equal"),
                         kOnnxInt64, "rows_equal_i64");
  Value *allRows =
      node.emitStep(OpKind::ReduceMin, {rowsOk}, "rows_ok", {{"keepdims", Attribute(int64_t(1))}});
  Value *noPast =
      castTo(node, node.emitStep(OpKind::Equal, {past, i64Constant(node, "zero", {0})}, "no_past"),
             kOnnxInt64, "no_past_i64");
  Value *cacheOk = node.emitStep(OpKind::Max, {allRows, noPast}, "cache_ok");
  return node.emitStep(OpKind::And, {totalOk, castTo(node, cacheOk, 9 /* bool */, "cache_ok_bool")},
                       "layout_ok");
}

/// Rotary positions [B, S]: past_b + s, past_b = seqlens_k + 1 - S, or 0 on
/// the first prompt (S == total_sequence_length), as onnxruntime numbers
/// the new tokens.
Value *gqaPositions(OnnxNode &node, Value *seqlens, Value *total, Value *seq) {
  Value *first = node.emitStep(OpKind::Equal, {seq, total}, "first_prompt");
  Value *past = node.emitStep(
      OpKind::Sub,
      {node.emitStep(OpKind::Add, {seqlens, i64Constant(node, "one_b", {1})}, "valid"), seq},
      "row_past");
  Value *base =
      node.emitStep(OpKind::Where, {first, i64Constant(node, "zero_b", {0}), past}, "row_base");
  Value *zero = node.addConstant("step_zero", Tensor::scalar<int64_t>(0));
  Value *one = node.addConstant("step_one", Tensor::scalar<int64_t>(1));
  Value *steps =
      node.emitStep(OpKind::Range, {zero, toScalar(node, seq, "seq_scalar"), one}, "steps");
  Value *column =
      node.emitStep(OpKind::Unsqueeze, {base, i64Constant(node, "axis1", {1})}, "base_column");
  return node.emitStep(OpKind::Add, {column, steps}, "gqa_positions");
}

/// Refuses the attributes, inputs and outputs onnxc does not implement and
/// checks the rest; returns the inputs by position.
std::vector<Value *> checkedGqaInputs(OnnxNode &node, const ContribAttributes &attrs) {
  attrs.requireKnown({"num_heads", "kv_num_heads", "scale", "softcap", "local_window_size",
                      "do_rotary", "rotary_interleaved", "smooth_softmax", "qk_output"});
  attrs.requireIntValue("smooth_softmax", 0, "onnxc's softmax has no extra zero logit");
  attrs.requireIntValue("qk_output", 0, "the scores are never materialized");
  if (float cap = attrs.getFloat("softcap", 0.0f); cap < 0.0f)
    fail(node.describe(), ": GroupQueryAttention softcap ", cap, " must not be negative");
  refuseOutput(node, 3, "output_qk");
  std::vector<Value *> in = contribInputs(node, NumGqaInputs);
  refuseInput(node, in, PositionIds, "position_ids");
  refuseInput(node, in, AttentionBias, "attention_bias");
  refuseInput(node, in, HeadSink, "head_sink");
  if (!in[Query] || !in[SeqlensK] || !in[TotalSeqlen])
    fail(node.describe(), ": GroupQueryAttention needs query, seqlens_k and total_sequence_length");
  if (bool(in[Key]) != bool(in[ValueIn]) || bool(in[PastKey]) != bool(in[PastValue]) ||
      bool(in[CosCache]) != bool(in[SinCache]))
    fail(node.describe(), ": GroupQueryAttention needs key and value, past_key and past_value, "
                          "cos_cache and sin_cache in pairs");
  int64_t heads = attrs.requireInt("num_heads"), kvHeads = attrs.requireInt("kv_num_heads");
  if (heads <= 0 || kvHeads <= 0 || heads % kvHeads != 0)
    fail(node.describe(), ": num_heads ", heads, " must be a positive multiple of kv_num_heads ",
         kvHeads);
  if (attrs.getInt("do_rotary", 0) != 0 && !in[CosCache])
    fail(node.describe(), ": GroupQueryAttention with do_rotary needs cos_cache and sin_cache");
  return in;
}

void importGroupQueryAttention(OnnxNode &node) {
  ContribAttributes attrs(node);
  std::vector<Value *> in = checkedGqaInputs(node, attrs);
  int64_t heads = attrs.requireInt("num_heads"), kvHeads = attrs.requireInt("kv_num_heads");
  bool rotary = attrs.getInt("do_rotary", 0) != 0;
  Value *q = in[Query], *k = in[Key], *v = in[ValueIn];
  if (!k) {
    std::vector<Value *> parts = splitPackedHeads(node, q, {heads, kvHeads, kvHeads}, "qkv");
    q = parts[0], k = parts[1], v = parts[2];
  }
  Value *seq = dimOf(node, in[Query], 1, "new_len");
  Value *past =
      in[PastKey] ? dimOf(node, in[PastKey], 2, "past_len") : i64Constant(node, "no_past_len", {0});
  Value *total = node.emitStep(
      OpKind::Reshape,
      {castTo(node, in[TotalSeqlen], kOnnxInt64, "total_i64"), i64Constant(node, "one_shape", {1})},
      "total_len");
  // onnxruntime takes seqlens_k of any shape whose first dim is the batch (the
  // builder's is [B, 1]): one value per row.
  Value *seqlens = node.emitStep(
      OpKind::Reshape,
      {castTo(node, in[SeqlensK], kOnnxInt64, "seqlens_i64"), i64Constant(node, "flat", {-1})},
      "seqlens_rows");
  Value *ok = concatCacheHolds(node, seqlens, total, past, seq);
  // The guard's divisor is named "<output>_check: ...": the run-time error quotes it.
  std::string message =
      "check: onnxc runs GroupQueryAttention with present = past + new keys, so "
      "total_sequence_length must be the past's length + the new length and seqlens_k + 1 that "
      "total in every batch row (or the first prompt has no past)";
  if (rotary) {
    Value *positions = guarded(node, gqaPositions(node, seqlens, total, seq), ok, message);
    AttributeMap rotaryAttrs = {{"interleaved", Attribute(attrs.getInt("rotary_interleaved", 0))}};
    if (int64_t width = declaredDim(in[CosCache], 1); width > 0)
      rotaryAttrs.insert_or_assign("rotary_embedding_dim", Attribute(2 * width));
    rotaryAttrs.insert_or_assign("num_heads", Attribute(heads));
    q = node.emitStep(OpKind::RotaryEmbedding, {q, in[CosCache], in[SinCache], positions},
                      "q_rotary", rotaryAttrs);
    rotaryAttrs.insert_or_assign("num_heads", Attribute(kvHeads));
    k = node.emitStep(OpKind::RotaryEmbedding, {k, in[CosCache], in[SinCache], positions},
                      "k_rotary", rotaryAttrs);
  } else {
    // No positions to carry the guard: K + 0, where the 0 is the guarded one.
    Value *zero = guarded(node, i64Constant(node, "guard_zero", {0}), ok, message);
    k = node.emitStep(OpKind::Add,
                      {k, node.emitStep(OpKind::CastLike, {zero, k}, "guard_zero_like")},
                      "k_checked");
  }

  AttributeMap attentionAttrs = {{"q_num_heads", Attribute(heads)},
                                 {"kv_num_heads", Attribute(kvHeads)},
                                 {"is_causal", Attribute(int64_t(1))}};
  if (float scale = attrs.getFloat("scale", 0.0f); scale != 0.0f)
    attentionAttrs.insert_or_assign("scale", Attribute(scale));
  // onnxruntime caps the scores before the causal mask (onnxc's softcap_first).
  if (float cap = attrs.getFloat("softcap", 0.0f); cap > 0.0f) {
    attentionAttrs.insert_or_assign("softcap", Attribute(cap));
    attentionAttrs.insert_or_assign("softcap_first", Attribute(int64_t(1)));
  }
  // onnxruntime's window W: query at position p sees keys p - W ... p.
  if (int64_t window = attrs.getInt("local_window_size", -1); window > 0)
    attentionAttrs.insert_or_assign("window", Attribute(window));
  node.emit(OpKind::Attention, trimmed({q, k, v, nullptr, in[PastKey], in[PastValue]}),
            attentionAttrs);
}

} // namespace

void registerMicrosoftRotaryGqaImporters(OpImporterRegistry &registry) {
  registry.add({"com.microsoft", "RotaryEmbedding", 1, OpKind::RotaryEmbedding,
                importContribRotaryEmbedding});
  registry.add(
      {"com.microsoft", "GroupQueryAttention", 1, OpKind::Attention, importGroupQueryAttention});
}

} // namespace onnxc
