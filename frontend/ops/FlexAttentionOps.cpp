//===- frontend/ops/FlexAttentionOps.cpp - ai.onnx.preview FlexAttention -----===//
//
// FlexAttention (ai.onnx.preview 1) is imported as the dot-product attention
// it computes, with its modifier graphs inlined, so that the shape rules, the
// evaluator and the elementwise lowerings run any modifier, and
// fuse-attention makes one Attention op of what it can read:
//
//   K', V'  = K, V with each KV head repeated for its group of query heads,
//             spelled as repeat_kv (Unsqueeze, Expand, Reshape), which
//             fuse-attention reads through (left out when the heads match)
//   s = MatMul(Q, Transpose(K') {perm = [0, 1, 3, 2]}) * scale
//   s = Cast(s, softmax_precision)                 (when it differs)
//   s = score_mod(s)                               (inlined)
//   p = Softmax(s) {axis = -1}
//   p = prob_mod(p)                                (inlined)
//   Y = CastLike(MatMul(p, Cast(V', softmax_precision)), V)
//
// scale defaults to 1/sqrt(head size). softmax_precision defaults to f32 for
// f16 and bf16 inputs, else the input's type; where the import cannot see
// Q's type (Q computed by a node), it is a modifier's declared input type,
// else f32: the Casts are then no-ops for an f32 model, which cleanup
// removes, but a double model of that kind runs its softmax in f32.
//
// Refused at import, naming the node: a modifier graph without exactly one
// input and one output, a softmax_precision that is no float type, and where
// the shapes are known then, ranks other than 4, head sizes that disagree,
// and query heads that are no multiple of the KV heads (shapes known only
// after inference fail there, naming the same node).
//
//===----------------------------------------------------------------------===//
#include "frontend/GraphImporter.h"
#include "frontend/OpImporterRegistry.h"
#include "frontend/TensorProto.h"

#include "ir/DType.h"
#include "ir/Error.h"

#include <cmath>
#include <optional>

namespace onnxc {

namespace {

struct FlexAttributes {
  const onnx::GraphProto *scoreMod = nullptr;
  const onnx::GraphProto *probMod = nullptr;
  std::optional<float> scale;
  std::optional<DType> precision;
};

const onnx::GraphProto *modGraph(OnnxNode &node, const onnx::AttributeProto &attr) {
  if (attr.type() != onnx::AttributeProto::GRAPH &&
      !(attr.type() == onnx::AttributeProto::UNDEFINED && attr.has_g()))
    fail(node.describe(), ": attribute '", attr.name(), "' must be a graph");
  const onnx::GraphProto &graph = attr.g();
  if (graph.input_size() != 1 || graph.output_size() != 1)
    fail(node.describe(), ": ", attr.name(), " must have exactly one input and one output, got ",
         graph.input_size(), " and ", graph.output_size());
  return &graph;
}

FlexAttributes readAttributes(OnnxNode &node) {
  FlexAttributes out;
  for (const onnx::AttributeProto &attr : node.proto().attribute()) {
    const std::string &name = attr.name();
    if (name == "score_mod") {
      out.scoreMod = modGraph(node, attr);
    } else if (name == "prob_mod") {
      out.probMod = modGraph(node, attr);
    } else if (name == "scale") {
      if (attr.type() != onnx::AttributeProto::FLOAT)
        fail(node.describe(), ": attribute 'scale' must be a float");
      out.scale = attr.f();
    } else if (name == "softmax_precision") {
      int64_t code = attr.type() == onnx::AttributeProto::INT ? attr.i() : -1;
      if (code != 1 && code != 10 && code != 11 && code != 16)
        fail(node.describe(), ": softmax_precision ", code,
             " is not a float type (1 float, 10 float16, 11 double, 16 bfloat16)");
      out.precision = dtypeFromOnnx(int32_t(code), node.describe());
    } else {
      fail(node.describe(), ": attribute '", name, "' of FlexAttention is not supported");
    }
  }
  return out;
}

/// Refuses the shapes the import can see and the op cannot take.
void checkShapes(OnnxNode &node) {
  std::vector<int64_t> dims[3] = {node.knownDims(0), node.knownDims(1), node.knownDims(2)};
  const char *names[3] = {"Q", "K", "V"};
  for (int i = 0; i < 3; ++i)
    if (!dims[i].empty() && dims[i].size() != 4)
      fail(node.describe(), ": FlexAttention takes rank-4 Q, K and V, but ", names[i], " is rank ",
           dims[i].size());
  auto known = [&](int input, size_t axis) {
    return dims[input].empty() ? int64_t(-1) : dims[input][axis];
  };
  auto disagree = [&](int a, int b, size_t axis) {
    return known(a, axis) >= 0 && known(b, axis) >= 0 && known(a, axis) != known(b, axis);
  };
  if (disagree(0, 1, 3))
    fail(node.describe(), ": FlexAttention head sizes differ: Q's is ", known(0, 3), ", K's ",
         known(1, 3));
  if (disagree(1, 2, 1) || disagree(1, 2, 2))
    fail(node.describe(), ": FlexAttention K and V differ in heads or keys");
  if (known(0, 1) >= 0 && known(1, 1) > 0 && known(0, 1) % known(1, 1) != 0)
    fail(node.describe(), ": FlexAttention query heads (", known(0, 1),
         ") are not a multiple of the KV heads (", known(1, 1), ")");
}

/// Shape(x)[start:end].
Value *dimsOf(OnnxNode &node, Value *x, int64_t start, int64_t end, const std::string &name) {
  return node.emitStep(OpKind::Shape, {x}, name,
                       {{"start", Attribute(start)}, {"end", Attribute(end)}});
}

/// x [b, g, S, d] with each head repeated for its group: [b, heads, S, d], as
/// HF's repeat_kv writes it (passes/attention/GroupRepeatedKv.cpp).
Value *repeatHeads(OnnxNode &node, Value *x, Value *heads, const std::string &name) {
  Value *copies =
      node.emitStep(OpKind::Div, {heads, dimsOf(node, x, 1, 2, name + "_heads")}, name + "_copies");
  Value *unit = node.emitStep(
      OpKind::Unsqueeze,
      {x, node.addConstant(name + "_axis", Tensor::fromVector<int64_t>({1}, {2}))}, name + "_unit");
  Value *lead = dimsOf(node, x, 0, 2, name + "_lead"),
        *rest = dimsOf(node, x, 2, 4, name + "_rest");
  Value *wideShape = node.emitStep(OpKind::Concat, {lead, copies, rest}, name + "_wide_shape",
                                   {{"axis", Attribute(int64_t(0))}});
  Value *wide = node.emitStep(OpKind::Expand, {unit, wideShape}, name + "_wide");
  Value *shape =
      node.emitStep(OpKind::Concat, {dimsOf(node, x, 0, 1, name + "_batch"), heads, rest},
                    name + "_shape", {{"axis", Attribute(int64_t(0))}});
  return node.emitStep(OpKind::Reshape, {wide, shape}, name + "_repeated");
}

/// The scale as a scalar of Q's type: the attribute, or 1/sqrt(head size).
/// A constant of that type when the import sees it (cleanup folds no
/// CastLike whose target is a run-time value, and removes only one to f32).
Value *scaleOf(OnnxNode &node, Value *q, const FlexAttributes &attrs) {
  std::vector<int64_t> dims = node.knownDims(0);
  if (attrs.scale || (dims.size() == 4 && dims[3] > 0)) {
    double value = attrs.scale ? double(*attrs.scale) : 1.0 / std::sqrt(double(dims[3]));
    if (isFloat(q->dtype())) {
      Tensor typed(q->dtype(), {});
      typed.setElementFromDouble(0, value);
      return node.addConstant("scale", std::move(typed));
    }
    return node.emitStep(OpKind::CastLike,
                         {node.addConstant("scale", Tensor::scalar<float>(float(value))), q},
                         "scale");
  }
  Value *size = node.emitStep(OpKind::Gather,
                              {node.emitStep(OpKind::Shape, {q}, "q_shape"),
                               node.addConstant("head_axis", Tensor::scalar<int64_t>(3))},
                              "head_size", {{"axis", Attribute(int64_t(0))}});
  Value *root = node.emitStep(
      OpKind::Sqrt,
      {node.emitStep(OpKind::Cast, {size}, "head_size_f32", {{"to", Attribute(int64_t(1))}})},
      "head_size_root");
  Value *scale = node.emitStep(
      OpKind::Div, {node.addConstant("one", Tensor::scalar<float>(1.0f)), root}, "scale");
  return node.emitStep(OpKind::CastLike, {scale, q}, "scale");
}

/// The type the scores are softmaxed in (see the file comment).
DType softmaxType(const FlexAttributes &attrs, DType input) {
  if (attrs.precision)
    return *attrs.precision;
  if (input != DType::Unknown)
    return isHalfFloat(input) ? DType::F32 : input;
  for (const onnx::GraphProto *mod : {attrs.scoreMod, attrs.probMod}) {
    if (!mod || !mod->input(0).type().has_tensor_type())
      continue;
    int32_t code = mod->input(0).type().tensor_type().elem_type();
    if (code == 1 || code == 10 || code == 11 || code == 16)
      return dtypeFromOnnx(code, "");
  }
  return DType::F32;
}

/// `mod` inlined on `x`, its result in x's type (as the reference reads it).
Value *applyMod(OnnxNode &node, const onnx::GraphProto &mod, Value *x, const std::string &name) {
  const onnx::NodeProto &proto = node.proto();
  std::string owner = proto.name().empty() ? proto.output(0) : proto.name();
  std::vector<Value *> outputs = inlineSubgraph(mod, node.context(), {x}, owner + "/" + name);
  return node.emitStep(OpKind::CastLike, {outputs[0], x}, name);
}

void importFlexAttention(OnnxNode &node) {
  FlexAttributes attrs = readAttributes(node);
  std::vector<Value *> operands = node.operands();
  if (operands.size() != 3 || !operands[0] || !operands[1] || !operands[2])
    fail(node.describe(), ": FlexAttention takes 3 inputs (Q, K, V), got ", operands.size());
  if (node.proto().output_size() != 1)
    fail(node.describe(), ": FlexAttention has 1 output, got ", node.proto().output_size());
  checkShapes(node);
  Value *q = operands[0], *k = operands[1], *v = operands[2];
  if (q->dtype() != DType::Unknown && !isFloat(q->dtype()))
    fail(node.describe(), ": FlexAttention takes float Q, K and V, got ", dtypeName(q->dtype()));

  std::vector<int64_t> qDims = node.knownDims(0), kDims = node.knownDims(1);
  bool sameHeads = qDims.size() == 4 && kDims.size() == 4 && qDims[1] >= 0 && qDims[1] == kDims[1];
  if (!sameHeads) {
    Value *heads = dimsOf(node, q, 1, 2, "q_heads");
    k = repeatHeads(node, k, heads, "k");
    v = repeatHeads(node, v, heads, "v");
  }
  Value *kt = node.emitStep(OpKind::Transpose, {k}, "k_transposed",
                            {{"perm", Attribute(std::vector<int64_t>{0, 1, 3, 2})}});
  Value *scores = node.emitStep(OpKind::MatMul, {q, kt}, "scores");
  scores = node.emitStep(OpKind::Mul, {scores, scaleOf(node, q, attrs)}, "scaled_scores");

  DType input = q->dtype(), compute = softmaxType(attrs, input);
  bool cast = input == DType::Unknown || compute != input;
  AttributeMap to = {{"to", Attribute(onnxTypeCode(compute))}};
  if (cast)
    scores = node.emitStep(OpKind::Cast, {scores}, "softmax_scores", to);
  if (attrs.scoreMod)
    scores = applyMod(node, *attrs.scoreMod, scores, "score_mod");
  Value *probs =
      node.emitStep(OpKind::Softmax, {scores}, "probs", {{"axis", Attribute(int64_t(-1))}});
  if (attrs.probMod)
    probs = applyMod(node, *attrs.probMod, probs, "prob_mod");
  if (!cast) {
    node.emit(OpKind::MatMul, {probs, v}, {});
    return;
  }
  Value *values = node.emitStep(OpKind::Cast, {v}, "softmax_values", to);
  node.emit(OpKind::CastLike,
            {node.emitStep(OpKind::MatMul, {probs, values}, "output"), operands[2]}, {});
}

} // namespace

void registerFlexAttentionImporters(OpImporterRegistry &registry) {
  registry.add({"ai.onnx.preview", "FlexAttention", 1, OpKind::MatMul, importFlexAttention});
}

} // namespace onnxc
