//===- passes/fusion/FoldChannelAffine.cpp - Per-channel scale and shift into weights ---===//
//
// A per-output-channel affine map after a Conv with constant weights, as an
// inference BatchNormalization leaves it (frontend/ops/FunctionOps.cpp) or as
// exporters write a separate bias:
//
//   %c = Conv(%x, %W, [%B])              %y = Conv(%x, %W', %B')
//   %m = Mul(%c, %s)            ==>      W'[o, ...] = W[o, ...] * s[o]
//   %y = Add(%m, %t)                     B'[o] = B[o] * s[o] + t[o]
//
// (either step alone too), and a per-column scale after a MatMul by a
// constant [K, N] matrix, %y = Mul(MatMul(%x, %W), %s) ==> MatMul(%x, W * s).
// %s and %t are constants that vary only along the output channel (axis 1
// of the Conv result, the last axis of the MatMul result) or are scalars.
// The products are computed in double and rounded once to the weights'
// type. Each intermediate result must have no other use, so nothing is
// computed twice.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

#include "ir/infer/ShapeInference.h"

#include <optional>

namespace onnxc {

namespace {

using match::soleUser;

/// The constant operand of a binary `node` whose other operand is `from`.
const Value *constantSide(const Node &node, const Value *from) {
  if (node.numOperands() != 2)
    return nullptr;
  const Value *other = node.operand(0) == from ? node.operand(1) : node.operand(0);
  if (node.operand(0) != from && node.operand(1) != from)
    return nullptr;
  if (!other->isConstant() || !other->constantValue().hasData())
    return nullptr;
  return other;
}

/// The per-channel values of constant `c` against a result of rank `rank`
/// whose channels lie on `axis` (`channels` of them): one value per channel,
/// or nullopt when `c` varies along another axis or broadcasts the result.
std::optional<std::vector<double>> perChannel(const Value *c, size_t rank, size_t axis,
                                              int64_t channels) {
  const Tensor &t = c->constantValue();
  const std::vector<int64_t> &dims = t.dims();
  if (dims.size() > rank)
    return std::nullopt;
  size_t lead = rank - dims.size();
  int64_t length = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    bool onChannels = lead + i == axis;
    if (onChannels && dims[i] != 1 && dims[i] != channels)
      return std::nullopt;
    if (!onChannels && dims[i] != 1)
      return std::nullopt;
    if (onChannels)
      length = dims[i];
  }
  std::vector<double> values(static_cast<size_t>(channels));
  for (int64_t o = 0; o < channels; ++o)
    values[size_t(o)] = t.elementAsDouble(length == 1 ? 0 : o);
  return values;
}

struct AffineChain {
  Node *producer = nullptr; // the Conv or MatMul
  Node *scale = nullptr;    // Mul, optional
  Node *shift = nullptr;    // Add, optional (Conv only)
  std::vector<double> s, t; // per channel
};

class FoldChannelAffine : public Pass {
public:
  std::string_view name() const override { return "fold-channel-affine"; }
  std::string_view description() const override {
    return "fold a per-channel scale and shift after a Conv (an inference BatchNormalization) "
           "into its weights and bias, and a per-column scale into a MatMul's weights";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("folded", 0);
    bool changed = false;
    std::vector<Node *> candidates = graph.nodesOfKind(OpKind::Conv);
    for (Node *matmul : graph.nodesOfKind(OpKind::MatMul))
      candidates.push_back(matmul);
    for (Node *producer : candidates) {
      std::optional<AffineChain> chain = match(graph, *producer);
      if (!chain)
        continue;
      rewrite(graph, *chain);
      context.count("folded");
      changed = true;
    }
    return changed;
  }

private:
  static std::optional<AffineChain> match(const Graph &graph, Node &producer) {
    bool conv = producer.kind() == OpKind::Conv;
    const Value *w = producer.numOperands() > 1 ? producer.operand(1) : nullptr;
    if (!w || !w->isConstant() || !w->constantValue().hasData() || !isFloat(w->dtype()))
      return std::nullopt;
    const Shape &out = producer.result(0)->shape();
    const std::vector<int64_t> &wd = w->constantValue().dims();
    if (!out.isRanked() || out.rank() < 2 || (conv && wd.size() < 3) || (!conv && wd.size() != 2))
      return std::nullopt;
    if (conv && producer.numOperands() > 2 && producer.operand(2) &&
        (!producer.operand(2)->isConstant() || !producer.operand(2)->constantValue().hasData()))
      return std::nullopt;
    size_t axis = conv ? 1 : out.rank() - 1;
    int64_t channels = conv ? wd[0] : wd[1];
    if (out[axis] != Dim(channels))
      return std::nullopt;

    AffineChain chain;
    chain.producer = &producer;
    chain.s.assign(size_t(channels), 1.0);
    chain.t.assign(size_t(channels), 0.0);
    const Value *value = producer.result(0);
    Node *user = soleUser(graph, value);
    auto take = [&](OpKind kind, std::vector<double> &into) -> bool {
      if (!user || user->kind() != kind || user->result(0)->type() != value->type())
        return false;
      const Value *c = constantSide(*user, value);
      if (!c || c->dtype() != value->dtype())
        return false;
      std::optional<std::vector<double>> values = perChannel(c, out.rank(), axis, channels);
      if (!values)
        return false;
      into = *values;
      value = user->result(0);
      return true;
    };
    if (take(OpKind::Mul, chain.s)) {
      chain.scale = user;
      user = soleUser(graph, value);
    }
    if (conv && take(OpKind::Add, chain.t))
      chain.shift = user;
    if (!chain.scale && !chain.shift)
      return std::nullopt;
    return chain;
  }

  static void rewrite(Graph &graph, const AffineChain &chain) {
    Node &producer = *chain.producer;
    bool conv = producer.kind() == OpKind::Conv;
    const Tensor &w = producer.operand(1)->constantValue();
    int64_t channels = conv ? w.dims()[0] : w.dims()[1];
    std::vector<Value *> operands = {producer.operand(0), producer.operand(1)};
    if (chain.scale) {
      Tensor scaled(w.dtype(), w.dims());
      int64_t inner = w.numElements() / channels;
      for (int64_t i = 0; i < w.numElements(); ++i) {
        int64_t o = conv ? i / inner : i % channels;
        scaled.setElementFromDouble(i, w.elementAsDouble(i) * chain.s[size_t(o)]);
      }
      operands[1] = graph.addConstant(graph.uniqueName(producer.operand(1)->name() + ".scaled"),
                                      std::move(scaled));
    }
    if (conv) {
      const Value *b = producer.numOperands() > 2 ? producer.operand(2) : nullptr;
      Tensor bias(w.dtype(), {channels});
      for (int64_t o = 0; o < channels; ++o)
        bias.setElementFromDouble(o, (b ? b->constantValue().elementAsDouble(o) : 0.0) *
                                             chain.s[size_t(o)] +
                                         chain.t[size_t(o)]);
      operands.push_back(graph.addConstant(graph.uniqueName(producer.result(0)->name() + ".bias"),
                                           std::move(bias)));
    }
    Node *last = chain.shift ? chain.shift : chain.scale;
    Node *folded = graph.createNode(producer.kind(), operands, 1, producer.name(),
                                    {graph.uniqueName(last->result(0)->name())}, last);
    for (const auto &[key, value] : producer.attributes())
      folded->setAttr(key, value);
    InferenceContext inference(graph);
    inferNodeShapes(*folded, inference);
    assert(folded->result(0)->type() == last->result(0)->type());
    std::string name = last->result(0)->name();
    graph.replaceAllUsesWith(last->result(0), folded->result(0));
    for (Node *dead : {chain.shift, chain.scale, chain.producer})
      if (dead)
        graph.eraseNode(dead);
    graph.renameValue(folded->result(0), name);
  }
};

} // namespace

std::unique_ptr<Pass> createFoldChannelAffinePass() {
  return std::make_unique<FoldChannelAffine>();
}

} // namespace onnxc
