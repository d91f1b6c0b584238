//===- frontend/ops/MicrosoftNormalizationOps.cpp - Contrib norms and GELUs -===//
//
// The normalization and activation ops onnxruntime's transformer optimizer
// and onnxruntime-genai's model builder write (com.microsoft domain, and
// SimplifiedLayerNormalization, which onnxruntime registers in ai.onnx),
// imported as onnxc's own IR ops so that the fusions, the reference
// evaluator, the row kernels and --explain serve them like any export:
//
//   SimplifiedLayerNormalization(X, scale)  RMSNormalization(CastLike(X, scale), scale)
//                                           [inv_std_var: 1 / sqrt(mean(X^2) + eps)]
//   LayerNormalization below opset 17       LayerNormalization (onnxruntime's ai.onnx 1)
//   SkipLayerNormalization(in, skip, g, [b], [bias])
//                                           LayerNormalization(in + (skip + bias), g, b)
//   SkipSimplifiedLayerNormalization(in, skip, g, [bias])
//                                           RMSNormalization(in + (skip + bias), g)
//   EmbedLayerNormalization                 Gathers, Adds, LayerNormalization; mask_index
//                                           = ReduceSum(mask == 1) as i32
//   FastGelu(X, [bias])                     Gelu(X + bias) {approximate = "tanh"}
//   BiasGelu(A, B) / Gelu(X)                Gelu(A + B) / Gelu(X)
//   QuickGelu(X) {alpha}                    X * Sigmoid(X * alpha)
//   BiasAdd(X, bias, skip)                  (X + bias) + skip
//
// The skip variants add the bias to skip first, so that the Add feeding the
// norm has two operands of the input's shape: fuse-skip-layernorm then makes
// onnxc's SkipLayerNormalization of it (a broadcast skip stays an Add). The
// skip variants' mean and inv_std_var outputs are refused: onnxruntime's
// kernels never compute them either.
//
//===----------------------------------------------------------------------===//
#include "frontend/OpImporterRegistry.h"

#include "ir/Error.h"

#include <initializer_list>

namespace onnxc {

namespace {

/// What a contrib op takes: its input names (for messages), how many of
/// them are required, and how many outputs it has at most.
struct Signature {
  const char *inputs;
  size_t required;
  size_t maxInputs;
  size_t maxOutputs;
};

/// The node's inputs padded with nulls to the signature's length; fails on
/// too many inputs or outputs and on an absent required input.
std::vector<Value *> contribInputs(OnnxNode &node, const Signature &signature) {
  const std::string &op = node.proto().op_type();
  std::vector<Value *> operands = node.operands();
  if (size_t(node.proto().input_size()) > signature.maxInputs)
    fail(node.describe(), ": ", op, " takes at most ", signature.maxInputs, " inputs (",
         signature.inputs, "), got ", node.proto().input_size());
  operands.resize(signature.maxInputs, nullptr);
  for (size_t i = 0; i < signature.required; ++i)
    if (!operands[i])
      fail(node.describe(), ": ", op, " needs input ", i, " (inputs ", signature.inputs, ")");
  if (size_t(node.proto().output_size()) > signature.maxOutputs)
    fail(node.describe(), ": ", op, " has at most ", signature.maxOutputs, " outputs, got ",
         node.proto().output_size());
  if (node.proto().output_size() == 0 || node.proto().output(0).empty())
    fail(node.describe(), ": ", op, " needs its first output");
  return operands;
}

/// Whether the node names output `index` (an optional output it asks for).
bool wantsOutput(const OnnxNode &node, int index) {
  return index < node.proto().output_size() && !node.proto().output(index).empty();
}

/// A node computing `kind` of `operands`: output `index` itself when the
/// model names it, else an intermediate step named after `suffix`.
Value *emitMaybeOutput(OnnxNode &node, int index, OpKind kind, const std::vector<Value *> &operands,
                       const std::string &suffix) {
  if (!wantsOutput(node, index))
    return node.emitStep(kind, operands, suffix);
  node.emitOutput(size_t(index), kind, operands);
  return node.context().lookup(node.proto().output(index));
}

/// An epsilon attribute: onnxruntime's kernels refuse a negative one.
float epsilonAttribute(OnnxNode &node, float fallback) {
  float epsilon = node.floatAttribute("epsilon", fallback);
  if (!(epsilon >= 0))
    fail(node.describe(), ": epsilon ", epsilon, " must be at least 0");
  return epsilon;
}

/// `value` as a scalar of `like`'s element type.
Value *scalarLike(OnnxNode &node, Value *like, float value, const std::string &name) {
  return node.emitStep(OpKind::CastLike,
                       {node.addConstant(name, Tensor::scalar<float>(value)), like}, name);
}

Value *i64Vector(OnnxNode &node, const std::string &name, std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return node.addConstant(name, Tensor::fromVector<int64_t>({n}, values));
}

/// Axes [axis, rank(x)) as an i64 vector computed from x's rank, which
/// inference knows once x's rank is known (a negative axis counts from it).
Value *trailingAxes(OnnxNode &node, Value *x, int64_t axis) {
  Value *rank = node.emitStep(
      OpKind::Squeeze,
      {node.emitStep(OpKind::Shape, {node.emitStep(OpKind::Shape, {x}, "shape")}, "rank")}, "rank");
  Value *start = node.addConstant("axis", Tensor::scalar<int64_t>(axis));
  if (axis < 0)
    start = node.emitStep(OpKind::Add, {rank, start}, "axis");
  return node.emitStep(OpKind::Range,
                       {start, rank, node.addConstant("step", Tensor::scalar<int64_t>(1))}, "axes");
}

// --- layer norms ---------------------------------------------------------------------

/// SimplifiedLayerNormalization (ai.onnx 1, onnxruntime's): RMSNorm over
/// axes [axis, rank). Y has the scale's type, as onnxruntime types it; the
/// CastLike bringing X to it is removed by simplify-casts when the types
/// agree, which leaves the RMSNormalization fuse and lower as usual.
void importSimplifiedLayerNormalization(OnnxNode &node) {
  node.requireAttributesAmong({"axis", "epsilon", "stash_type"});
  std::vector<Value *> in = contribInputs(node, {"X, scale", 2, 2, 2});
  int64_t axis = node.intAttribute("axis", -1);
  float epsilon = epsilonAttribute(node, 1e-5f);
  int64_t stash = node.intAttribute("stash_type", 1);
  // onnxruntime keeps the statistics in float or double.
  if (stash != 1 && stash != 11)
    fail(node.describe(), ": stash_type ", stash, " is not supported (1: float, 11: double)");
  Value *x = node.emitStep(OpKind::CastLike, {in[0], in[1]}, "x");
  AttributeMap attributes = {
      {"axis", Attribute(axis)}, {"epsilon", Attribute(epsilon)}, {"stash_type", Attribute(stash)}};
  node.emitOutput(0, OpKind::RMSNormalization, {x, in[1]}, attributes);
  if (!wantsOutput(node, 1))
    return;
  // inv_std_var: one value per normalized row, the rows' dims kept as 1s,
  // in the stash type.
  Value *stashed = node.emitStep(OpKind::Cast, {in[0]}, "stashed", {{"to", Attribute(stash)}});
  Value *square = node.emitStep(OpKind::Mul, {stashed, stashed}, "square");
  Value *meanSquare = node.emitStep(OpKind::ReduceMean, {square, trailingAxes(node, in[0], axis)},
                                    "mean_square", {{"keepdims", Attribute(int64_t(1))}});
  Value *shifted = node.emitStep(
      OpKind::Add, {meanSquare, scalarLike(node, stashed, epsilon, "epsilon")}, "shifted");
  Value *rms = node.emitStep(OpKind::Sqrt, {shifted}, "rms");
  node.emitOutput(1, OpKind::Reciprocal, {rms});
}

/// The residual sum both skip variants normalize: input + (skip + bias),
/// named after output 3 (input_skip_bias_sum) when the model reads it.
Value *skipSum(OnnxNode &node, Value *input, Value *skip, Value *bias) {
  if (wantsOutput(node, 1) || wantsOutput(node, 2))
    fail(node.describe(), ": outputs mean and inv_std_var of ", node.proto().op_type(),
         " are not supported (onnxruntime's kernels do not compute them either)");
  Value *addend = bias ? node.emitStep(OpKind::Add, {skip, bias}, "skip_bias") : skip;
  return emitMaybeOutput(node, 3, OpKind::Add, {input, addend}, "sum");
}

void importSkipLayerNormalization(OnnxNode &node) {
  node.requireAttributesAmong({"epsilon"});
  std::vector<Value *> in = contribInputs(node, {"input, skip, gamma, [beta], [bias]", 3, 5, 4});
  float epsilon = epsilonAttribute(node, 1e-12f);
  Value *sum = skipSum(node, in[0], in[1], in[4]);
  std::vector<Value *> operands = {sum, in[2]};
  if (in[3])
    operands.push_back(in[3]);
  node.emitOutput(0, OpKind::LayerNormalization, operands,
                  {{"axis", Attribute(int64_t(-1))}, {"epsilon", Attribute(epsilon)}});
}

void importSkipSimplifiedLayerNormalization(OnnxNode &node) {
  node.requireAttributesAmong({"epsilon"});
  std::vector<Value *> in = contribInputs(node, {"input, skip, gamma, [bias]", 3, 4, 4});
  float epsilon = epsilonAttribute(node, 1e-12f);
  Value *sum = skipSum(node, in[0], in[1], in[3]);
  node.emitOutput(0, OpKind::RMSNormalization, {sum, in[2]},
                  {{"axis", Attribute(int64_t(-1))}, {"epsilon", Attribute(epsilon)}});
}

/// EmbedLayerNormalization: LayerNorm(word[ids] + position[pos] +
/// segment[segment_ids]), pos the given position_ids or 0 .. S-1; output 1
/// (mask_index, i32 [batch]) counts the mask's entries equal to 1 (zeros
/// without a mask), output 2 is the sum before the norm.
void importEmbedLayerNormalization(OnnxNode &node) {
  node.requireAttributesAmong({"epsilon", "mask_index_type"});
  std::vector<Value *> in =
      contribInputs(node, {"input_ids, [segment_ids], word_embedding, position_embedding, "
                           "[segment_embedding], gamma, beta, [mask], [position_ids]",
                           1, 9, 3});
  if (!in[2] || !in[3] || !in[5] || !in[6])
    fail(node.describe(), ": EmbedLayerNormalization needs word_embedding, position_embedding, "
                          "gamma and beta (inputs 2, 3, 5 and 6)");
  if (bool(in[1]) != bool(in[4]))
    fail(node.describe(), ": EmbedLayerNormalization takes segment_ids and segment_embedding "
                          "together or neither");
  if (int64_t type = node.intAttribute("mask_index_type", 1); type != 0 && type != 1)
    fail(node.describe(), ": mask_index_type ", type, " is not supported (0 or 1)");
  float epsilon = epsilonAttribute(node, 1e-12f);
  Value *ids = in[0];
  const AttributeMap axis0 = {{"axis", Attribute(int64_t(0))}};
  Value *positions = in[8];
  if (!positions) {
    Value *length = node.emitStep(OpKind::Gather,
                                  {node.emitStep(OpKind::Shape, {ids}, "ids_shape"),
                                   node.addConstant("seq_axis", Tensor::scalar<int64_t>(1))},
                                  "seq", axis0);
    positions = node.emitStep(OpKind::Range,
                              {node.addConstant("zero", Tensor::scalar<int64_t>(0)), length,
                               node.addConstant("one", Tensor::scalar<int64_t>(1))},
                              "positions");
  }
  Value *sum = node.emitStep(OpKind::Add,
                             {node.emitStep(OpKind::Gather, {in[2], ids}, "word", axis0),
                              node.emitStep(OpKind::Gather, {in[3], positions}, "position", axis0)},
                             "word_position");
  if (in[1]) {
    Value *segment = node.emitStep(OpKind::Gather, {in[4], in[1]}, "segment", axis0);
    sum = emitMaybeOutput(node, 2, OpKind::Add, {sum, segment}, "embedding_sum");
  } else if (wantsOutput(node, 2)) {
    node.bindOutput(2, sum);
  }
  node.emitOutput(0, OpKind::LayerNormalization, {sum, in[5], in[6]},
                  {{"axis", Attribute(int64_t(-1))}, {"epsilon", Attribute(epsilon)}});
  if (!wantsOutput(node, 1))
    return;
  const AttributeMap toI32 = {{"to", Attribute(int64_t(6))}};
  if (!in[7]) {
    Value *batch = node.emitStep(
        OpKind::Gather,
        {node.emitStep(OpKind::Shape, {ids}, "ids_shape"), i64Vector(node, "batch_axis", {0})},
        "batch", axis0);
    node.emitOutput(1, OpKind::ConstantOfShape, {batch},
                    {{"value", Attribute(Tensor::fromVector<int32_t>({1}, {0}))}});
    return;
  }
  Value *one = node.emitStep(
      OpKind::CastLike, {node.addConstant("one_value", Tensor::scalar<int32_t>(1)), in[7]}, "one");
  Value *valid = node.emitStep(OpKind::Cast, {node.emitStep(OpKind::Equal, {in[7], one}, "is_one")},
                               "valid", toI32);
  node.emitOutput(1, OpKind::ReduceSum, {valid, i64Vector(node, "mask_axis", {1})},
                  {{"keepdims", Attribute(int64_t(0))}});
}

// --- activations ---------------------------------------------------------------------

/// x + bias when the bias is given.
Value *withBias(OnnxNode &node, Value *x, Value *bias) {
  return bias ? node.emitStep(OpKind::Add, {x, bias}, "biased") : x;
}

void importFastGelu(OnnxNode &node) {
  node.requireAttributesAmong({});
  std::vector<Value *> in = contribInputs(node, {"X, [bias]", 1, 2, 1});
  node.emitOutput(0, OpKind::Gelu, {withBias(node, in[0], in[1])},
                  {{"approximate", Attribute("tanh")}});
}

void importBiasGelu(OnnxNode &node) {
  node.requireAttributesAmong({});
  std::vector<Value *> in = contribInputs(node, {"A, B", 2, 2, 1});
  node.emitOutput(0, OpKind::Gelu, {withBias(node, in[0], in[1])});
}

void importGelu(OnnxNode &node) {
  node.requireAttributesAmong({});
  std::vector<Value *> in = contribInputs(node, {"X", 1, 1, 1});
  node.emitOutput(0, OpKind::Gelu, {in[0]});
}

void importQuickGelu(OnnxNode &node) {
  node.requireAttributesAmong({"alpha"});
  std::vector<Value *> in = contribInputs(node, {"X", 1, 1, 1});
  float alpha = node.floatAttribute("alpha", 1.702f);
  Value *x = in[0];
  Value *scaled = alpha == 1.0f ? x
                                : node.emitStep(OpKind::Mul,
                                                {x, scalarLike(node, x, alpha, "alpha")}, "scaled");
  node.emitOutput(0, OpKind::Mul, {x, node.emitStep(OpKind::Sigmoid, {scaled}, "gate")});
}

void importBiasAdd(OnnxNode &node) {
  node.requireAttributesAmong({});
  std::vector<Value *> in = contribInputs(node, {"X, bias, skip", 3, 3, 1});
  node.emitOutput(0, OpKind::Add, {withBias(node, in[0], in[1]), in[2]});
}

} // namespace

void registerMicrosoftNormalizationImporters(OpImporterRegistry &registry) {
  // onnxruntime registers SimplifiedLayerNormalization in the ONNX domain at
  // version 1, so any ai.onnx opset imports it; likewise its LayerNormalization,
  // which its optimizer writes into models of opsets below 17 (where ONNX has
  // none), with the attributes and outputs LayerNormalization-17 took over.
  registry.add({"", "SimplifiedLayerNormalization", 1, OpKind::RMSNormalization,
                importSimplifiedLayerNormalization});
  registry.add({"", "LayerNormalization", 1, OpKind::LayerNormalization, importOneToOne});
  const std::pair<const char *, OpImportFn> contribOps[] = {
      {"SkipLayerNormalization", importSkipLayerNormalization},
      {"SkipSimplifiedLayerNormalization", importSkipSimplifiedLayerNormalization},
      {"EmbedLayerNormalization", importEmbedLayerNormalization},
      {"FastGelu", importFastGelu},
      {"BiasGelu", importBiasGelu},
      {"Gelu", importGelu},
      {"QuickGelu", importQuickGelu},
      {"BiasAdd", importBiasAdd},
  };
  for (const auto &[op, import] : contribOps)
    registry.add({"com.microsoft", op, 1, OpKind::Add, import});
}

} // namespace onnxc
