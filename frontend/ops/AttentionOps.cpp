//===- frontend/ops/AttentionOps.cpp - Attention of opsets 23 to 25 ---------===//
//
// onnxc's Attention is the opset-23 op with a symmetric `window` (docs/IR.md).
// ONNX Attention has, at every opset, the meaning onnx 1.23's errata gave it
// ("no opset bump"): softcap applies to the scores before the masks, so a
// hidden key stays hidden, and a row whose every key is hidden gives zeros,
// not NaN (in Y and in qk_matmul_output's mode 3). Those are onnxc's
// softcap_first and masked_rows_zero, which the fusions leave unset: the
// graphs they replace cap after the mask and give NaN there.
// Opset 24 adds `nonpad_kv_seqlen` (per batch, how many keys of an external
// cache are valid; the causal frontier then sits at offset nonpad - S_q), and
// opset 25 the one-sided `left_window_size` / `right_window_size` around the
// query's absolute position p = offset + i.
//
// Forms the IR op already has are kept as attributes, so the flash kernel can
// skip the hidden key tiles: no nonpad with a causal left window
// (window = left: keys p - left .. p) or with equal windows on both sides.
// Every other combination becomes an explicit bool mask built from the
// lengths, composed with the model's own attn_mask (a bool mask intersected,
// a float one kept where visible and -inf elsewhere), with is_causal off:
//
//   visible(b, i, j) = j < nonpad[b]           (with nonpad)
//                    & j <= p                  (is_causal)
//                    & j >= p - left           (left >= 0)
//                    & j <= p + right          (right >= 0)
//
// Sequence lengths are read at axis -2 of Q, K and past_key, which is the
// sequence axis of both the 3-D and 4-D forms.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"
#include "ir/eval/Broadcast.h"

#include <algorithm>
#include <limits>

namespace onnxc {

namespace {

Value *indexConstant(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

Value *scalarConstant(OnnxNode &node, const std::string &name, int64_t value) {
  return node.addConstant(name, Tensor::scalar<int64_t>(value));
}

/// The length of `value`'s axis -2 (its sequence axis), as an i64 scalar.
Value *sequenceLength(OnnxNode &node, Value *value, const std::string &name) {
  Value *shape = node.emitStep(OpKind::Shape, {value}, name + "_shape");
  return node.emitStep(OpKind::Gather, {shape, scalarConstant(node, name + "_axis", -2)}, name,
                       {{"axis", Attribute(int64_t(0))}});
}

/// The bool mask of the file comment: [S, T], or [B, 1, S, T] with nonpad.
Value *visibilityMask(OnnxNode &node, const std::vector<Value *> &operands, bool causal,
                      int64_t left, int64_t right) {
  Value *q = operands[0], *k = operands[1];
  Value *pastKey = operands.size() > 4 ? operands[4] : nullptr;
  Value *nonpad = operands.size() > 6 ? operands[6] : nullptr;
  Value *zero = scalarConstant(node, "zero", 0), *one = scalarConstant(node, "one", 1);
  Value *queries = sequenceLength(node, q, "queries");
  Value *total = sequenceLength(node, k, "keys");
  if (pastKey)
    total = node.emitStep(OpKind::Add, {total, sequenceLength(node, pastKey, "past")}, "total");
  Value *rows = node.emitStep(OpKind::Unsqueeze,
                              {node.emitStep(OpKind::Range, {zero, queries, one}, "row_index"),
                               indexConstant(node, "row_axes", {1})},
                              "rows");                                         // [S, 1]
  Value *keys = node.emitStep(OpKind::Range, {zero, total, one}, "key_index"); // [T]
  // The count of valid keys before the query block, per batch ([B, 1, 1]) or shared.
  Value *offset = zero, *valid = nullptr;
  if (nonpad) {
    Value *lengths = node.emitStep(
        OpKind::Unsqueeze, {nonpad, indexConstant(node, "batch_axes", {1, 2})}, "valid_lengths");
    valid = node.emitStep(OpKind::Less, {keys, lengths}, "valid"); // [B, 1, T]
    offset = node.emitStep(OpKind::Sub, {lengths, queries}, "offset");
  } else if (pastKey) {
    offset = sequenceLength(node, pastKey, "offset");
  }
  Value *position =
      node.emitStep(OpKind::Add, {rows, offset}, "position"); // p: [S, 1] or [B, S, 1]
  Value *mask = valid;
  auto require = [&](Value *condition) {
    mask = mask ? node.emitStep(OpKind::And, {mask, condition}, "visible") : condition;
  };
  if (causal)
    require(node.emitStep(OpKind::LessOrEqual, {keys, position}, "causal"));
  if (left >= 0) {
    Value *first =
        node.emitStep(OpKind::Sub, {position, scalarConstant(node, "left", left)}, "first_visible");
    require(node.emitStep(OpKind::GreaterOrEqual, {keys, first}, "left_window"));
  }
  if (right >= 0) {
    Value *last = node.emitStep(OpKind::Add, {position, scalarConstant(node, "right", right)},
                                "last_visible");
    require(node.emitStep(OpKind::LessOrEqual, {keys, last}, "right_window"));
  }
  if (!mask) // nonpad alone is always a condition; this is unreachable
    fail(node.describe(), ": no visibility condition to build");
  if (nonpad) // [B, S, T] -> [B, 1, S, T], next to the heads axis of 4-D scores
    mask = node.emitStep(OpKind::Unsqueeze, {mask, indexConstant(node, "head_axis", {1})},
                         "visible_per_batch");
  return mask;
}

/// The element type of a mask computed inside the graph, which shape inference has not typed
/// yet at import: read back through the ops whose result type follows from their kind (a
/// comparison or logic op makes bool, Cast its `to`) or from an operand (movement ops, Where,
/// CastLike). Unknown for anything else: the caller then refuses rather than guess, since
/// composing a bool mask as a float one would be silently wrong.
DType maskDtype(const Value *mask, int depth = 0) {
  if (!mask || mask->dtype() != DType::Unknown || depth > 64)
    return mask ? mask->dtype() : DType::Unknown;
  const Node *producer = mask->definingNode();
  if (!producer)
    return DType::Unknown;
  switch (producer->kind()) {
  case OpKind::Less:
  case OpKind::LessOrEqual:
  case OpKind::Greater:
  case OpKind::GreaterOrEqual:
  case OpKind::Equal:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Not:
    return DType::Bool;
  case OpKind::Cast:
    return dtypeFromOnnxCode(producer->getInt("to", 0)).value_or(DType::Unknown);
  case OpKind::Unsqueeze:
  case OpKind::Squeeze:
  case OpKind::Reshape:
  case OpKind::Expand:
  case OpKind::Transpose:
  case OpKind::Slice:
  case OpKind::Identity:
    return maskDtype(producer->operand(0), depth + 1);
  case OpKind::Where:
    return maskDtype(producer->operand(1), depth + 1);
  case OpKind::CastLike:
    return maskDtype(producer->operand(1), depth + 1);
  default:
    return DType::Unknown;
  }
}

/// `visible` composed with the model's own mask: both must allow a key. A short mask (fewer
/// keys than the total, the rest hidden) stays short: `visible` is cut to its length.
Value *composeMasks(OnnxNode &node, Value *visible, Value *modelMask) {
  if (!modelMask)
    return visible;
  DType dtype = maskDtype(modelMask);
  if (dtype == DType::Unknown)
    fail(node.describe(), ": the type of attn_mask (computed by ",
         modelMask->definingNode() ? modelMask->definingNode()->describe() : "the graph",
         ") is not known at import, so it cannot be combined with nonpad_kv_seqlen or a "
         "one-sided window here; end its computation with a Cast, or give it as a graph input");
  Value *maskShape = node.emitStep(OpKind::Shape, {modelMask}, "mask_shape");
  Value *maskKeys =
      node.emitStep(OpKind::Slice,
                    {maskShape, indexConstant(node, "mask_keys_begin", {-1}),
                     indexConstant(node, "mask_keys_end", {std::numeric_limits<int64_t>::max()})},
                    "mask_keys");
  Value *cut = node.emitStep(OpKind::Slice,
                             {visible, indexConstant(node, "cut_begin", {0}), maskKeys,
                              indexConstant(node, "cut_axes", {-1})},
                             "visible_cut");
  if (dtype == DType::Bool)
    return node.emitStep(OpKind::And, {modelMask, cut}, "attn_mask");
  Value *hidden = node.emitStep(
      OpKind::CastLike,
      {node.addConstant("hidden", Tensor::scalar<float>(-std::numeric_limits<float>::infinity())),
       modelMask},
      "hidden_score");
  return node.emitStep(OpKind::Where, {cut, modelMask, hidden}, "attn_mask");
}

void importAttention(OnnxNode &node) {
  AttributeMap attributes = node.attributes();
  attributes.insert_or_assign("softcap_first", Attribute(int64_t(1)));
  attributes.insert_or_assign("masked_rows_zero", Attribute(int64_t(1)));
  std::vector<Value *> operands = node.operands();
  if (operands.size() < 3 || !operands[0] || !operands[1] || !operands[2])
    fail(node.describe(), ": Attention needs Q, K and V");
  bool causal = node.intAttribute("is_causal", 0) != 0;
  int64_t left = node.intAttribute("left_window_size", -1);
  int64_t right = node.intAttribute("right_window_size", -1);
  if (left < -1 || right < -1)
    fail(node.describe(), ": window sizes must be -1 (unbounded) or >= 0");
  attributes.erase("left_window_size");
  attributes.erase("right_window_size");
  Value *nonpad = operands.size() > 6 ? operands[6] : nullptr;
  const onnx::NodeProto &proto = node.proto();
  bool presents = (proto.output_size() > 1 && !proto.output(1).empty()) ||
                  (proto.output_size() > 2 && !proto.output(2).empty());
  if (nonpad &&
      ((operands.size() > 4 && operands[4]) || (operands.size() > 5 && operands[5]) || presents))
    fail(node.describe(), ": nonpad_kv_seqlen describes an external cache and cannot be used "
                          "with past_key/past_value or present outputs");
  if (causal)
    right = -1; // the causal frontier already bounds the right side at p
  std::vector<Value *> core(operands.begin(),
                            operands.begin() + std::min<size_t>(6, operands.size()));
  while (!core.empty() && !core.back())
    core.pop_back();
  if (!nonpad && left < 0 && right < 0) {
    node.emit(OpKind::Attention, core, attributes);
    return;
  }
  if (!nonpad && ((causal && left >= 0) || (!causal && left >= 0 && left == right))) {
    attributes.insert_or_assign("window", Attribute(left));
    node.emit(OpKind::Attention, core, attributes);
    return;
  }
  Value *visible = visibilityMask(node, operands, causal, left, right);
  core.resize(std::max<size_t>(core.size(), 4));
  core[3] = composeMasks(node, visible, core[3]);
  while (!core.empty() && !core.back())
    core.pop_back();
  attributes.insert_or_assign("is_causal", Attribute(int64_t(0)));
  node.emit(OpKind::Attention, core, attributes);
}

} // namespace

void registerAttentionImporters(OpImporterRegistry &registry) {
  registry.add({"", "Attention", 23, OpKind::Attention, importAttention});
}

} // namespace onnxc
