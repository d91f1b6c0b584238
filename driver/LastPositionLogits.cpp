//===- driver/LastPositionLogits.cpp - Logits of the last position, for generation -===//
#include "driver/LastPositionLogits.h"

#include "ir/Error.h"
#include "passes/attention/RewriteBuilder.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

namespace onnxc {
namespace {

/// The longest chain followed back from the logits: the tails of real decoders
/// are a handful of ops (norm, head, bias, softcap).
constexpr int kMaxChain = 32;

bool namedLikeLogits(const std::string &name) {
  std::string lower(name);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return char(std::tolower(c)); });
  return lower.find("logits") != std::string::npos;
}

/// [batch, seq, ...] with the batch and sequence dims of `like`.
bool carriesPositions(const Value *value, const Shape &like) {
  const Shape &shape = value->shape();
  return shape.rank() == like.rank() && shape.rank() >= 3 &&
         shape.dims()[0].provablyEqual(like.dims()[0]) &&
         shape.dims()[1].provablyEqual(like.dims()[1]);
}

/// An operand broadcast alike over every position: no sequence axis (a
/// vector along the last axis, a scalar), or a size-1 one.
bool sameAtEveryPosition(const Value *value, const Shape &like) {
  const Shape &shape = value->shape();
  if (shape.rank() <= 1)
    return true;
  if (shape.rank() != like.rank())
    return false;
  std::optional<int64_t> positions = shape.dims()[1].constant();
  std::optional<int64_t> batch = shape.dims()[0].constant();
  return positions == 1 && (batch == 1 || shape.dims()[0].provablyEqual(like.dims()[0]));
}

bool elementwise(OpKind kind) {
  switch (kind) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Cast:
  case OpKind::Tanh:
  case OpKind::Gelu:
  case OpKind::Relu:
  case OpKind::Sigmoid:
  case OpKind::Neg:
    return true;
  default:
    return false;
  }
}

/// The operands of `node` that carry the positions of its result, when the
/// node computes each position from those operands' same position alone;
/// nullopt when it may mix positions (or the rule cannot tell).
std::optional<std::vector<size_t>> positionWiseOperands(const Node &node) {
  const Shape &result = node.result(0)->shape();
  std::vector<size_t> carrying;
  auto classify = [&](size_t i, bool mayBroadcast) {
    const Value *operand = node.operand(i);
    if (carriesPositions(operand, result)) {
      carrying.push_back(i);
      return true;
    }
    return mayBroadcast && sameAtEveryPosition(operand, result);
  };
  OpKind kind = node.kind();
  if (kind == OpKind::MatMul || kind == OpKind::BlockQuantizedMatMul ||
      kind == OpKind::QuantizedMatMul) {
    // A [batch, seq, k] times a [k, n] matrix, row by row: every operand but
    // A (the weights; quantized ones' scales, zero points, bias and
    // QuantizedMatMul's constant A scale and zero point) has at most two
    // dims, none of them positions. Not DynamicQuantizedMatMul: its A scale
    // comes from the whole of A, every position together.
    for (size_t i = 1; i < node.numOperands(); ++i)
      if (node.operand(i) && node.operand(i)->shape().rank() > 2)
        return std::nullopt;
    if (!classify(0, false))
      return std::nullopt;
    return carrying;
  }
  bool norm = kind == OpKind::LayerNormalization || kind == OpKind::RMSNormalization ||
              kind == OpKind::SkipLayerNormalization;
  if (norm) {
    // Normalized over the last axis only; the scale and bias are vectors.
    int64_t axis = node.getInt("axis", -1);
    if (axis != -1 && axis != int64_t(result.rank()) - 1)
      return std::nullopt;
    for (size_t r = 1; r < node.numResults(); ++r)
      if (node.result(r)->hasUses() || node.graph()->isOutput(node.result(r)))
        return std::nullopt;
  } else if (!elementwise(kind) || node.numResults() != 1) {
    return std::nullopt;
  }
  for (size_t i = 0; i < node.numOperands(); ++i)
    if (node.operand(i) && !classify(i, true))
      return std::nullopt;
  if (carrying.empty())
    return std::nullopt;
  return carrying;
}

class LastPositionRewrite {
public:
  explicit LastPositionRewrite(Graph &graph, Node *before)
      : graph_(graph), builder_(graph, before) {}

  /// `value` at the last position: the node that made it rebuilt on the last
  /// position of its operands when it is position-wise and used only here,
  /// else a Slice of it.
  Value *lastPosition(Value *value, int depth) {
    Node *producer = value->definingNode();
    // The logits themselves are read by the output alone; the values before
    // them by the next op of the chain alone.
    bool readHereOnly =
        depth == 0 ? !value->hasUses() : value->numUses() == 1 && !graph_.isOutput(value);
    std::optional<std::vector<size_t>> carrying;
    if (producer && depth < kMaxChain && readHereOnly)
      carrying = positionWiseOperands(*producer);
    if (!carrying)
      return slice(value);
    std::vector<Value *> operands = producer->operands();
    for (size_t i : *carrying)
      operands[i] = lastPosition(producer->operand(i), depth + 1);
    Node *rebuilt = graph_.createNode(producer->kind(), operands, unsigned(producer->numResults()),
                                      producer->name() + ".last", {}, nullptr);
    for (const auto &[key, attribute] : producer->attributes())
      rebuilt->setAttr(key, attribute);
    builder_.adopt(rebuilt);
    if (!inference_)
      inference_.emplace(graph_);
    inferNodeShapes(*rebuilt, *inference_);
    rewritten_.push_back(std::string(producer->opName()));
    return rebuilt->result(0);
  }

  const std::vector<std::string> &rewritten() const { return rewritten_; }
  void rollBack() {
    inference_.reset();
    builder_.rollBack();
  }

private:
  Value *slice(Value *value) {
    const std::string base = value->name() + ".last";
    return builder_.create(
        OpKind::Slice,
        {value, builder_.constantI64(base + ".start", {-1}),
         builder_.constantI64(base + ".end", {std::numeric_limits<int64_t>::max()}),
         builder_.constantI64(base + ".axes", {1})},
        base);
  }

  Graph &graph_;
  attention::RewriteBuilder builder_;
  std::optional<InferenceContext> inference_;
  std::vector<std::string> rewritten_;
};

/// Erases the nodes the old chain leaves without uses, from `value` back.
void eraseDeadChain(Graph &graph, Value *value) {
  std::vector<Value *> pending{value};
  while (!pending.empty()) {
    Value *dead = pending.back();
    pending.pop_back();
    Node *node = dead->definingNode();
    if (!node || graph.isOutput(dead))
      continue;
    bool unused = std::none_of(node->results().begin(), node->results().end(),
                               [&](Value *r) { return r->hasUses() || graph.isOutput(r); });
    if (!unused)
      continue;
    std::vector<Value *> operands = node->operands();
    graph.eraseNode(node);
    for (Value *operand : operands)
      if (operand)
        pending.push_back(operand);
  }
}

} // namespace

std::string keepLastPositionLogits(Graph &graph) {
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    const GraphOutput &output = graph.outputs()[o];
    Value *logits = output.value;
    const Shape &shape = logits->shape();
    // [batch, seq, vocab]: a fixed vocabulary after a sequence that varies (a layout with the
    // vocabulary before the positions, or a fixed length, is left as it is).
    if (!namedLikeLogits(output.name) || !isFloat(logits->dtype()) || shape.rank() != 3 ||
        shape.dims()[1].isConstant() || shape.dims()[1].isUnknown() ||
        !shape.dims()[2].isConstant())
      continue;
    // The rebuilt chain goes at the end of the graph: its operands are defined by then.
    LastPositionRewrite rewrite(graph, nullptr);
    Value *last = nullptr;
    try {
      last = rewrite.lastPosition(logits, 0);
      bool sameType = last->dtype() == logits->dtype() && last->shape().rank() == 3 &&
                      last->shape().dims()[0] == shape.dims()[0] &&
                      last->shape().dims()[1].constant() == 1 &&
                      last->shape().dims()[2] == shape.dims()[2];
      if (!sameType)
        throw Error("the last position's logits came out " + last->shape().str());
    } catch (const Error &) {
      // A shape rule that refuses (or a result unlike [batch, 1, vocab]): the
      // graph stays as it was, computing every position.
      rewrite.rollBack();
      return "";
    }
    std::string name = logits->name();
    graph.setOutputValue(o, last);
    eraseDeadChain(graph, logits);
    // The output's value keeps its name when the old one is gone (the dumps and --explain name it).
    if (!graph.findValue(name))
      graph.renameValue(last, name);
    std::string chain;
    for (const std::string &op : rewrite.rewritten())
      chain += (chain.empty() ? "" : ", ") + op;
    return "logits '" + output.name + "' at the last position only" +
           (chain.empty() ? std::string(" (a Slice of them)")
                          : " (" + chain + " on the last position of their inputs)");
  }
  return "";
}

} // namespace onnxc
