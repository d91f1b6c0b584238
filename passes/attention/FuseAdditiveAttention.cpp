//===- passes/attention/FuseAdditiveAttention.cpp - Bahdanau and Luong attention ---===//
//
// Single-head attention over 3-D [batch, Sq, Sk] scores, as recurrent
// seq2seq models write it (anchored at Softmax). Additive (Bahdanau):
//
//   %e = Add(%qu [b,Sq,1,d], %ku [b,1,Sk,d])     qu, ku: Unsqueeze (or any
//   %e = Add(%e, %bias [d])                       view) of q [b,Sq,d], k [b,Sk,d]
//   %t = Tanh(%e)                                 [b,Sq,Sk,d]
//   %s = MatMul(%t, %w [d,1]) -> Squeeze | Reshape [b,Sq,Sk]
//      | MatMul(%t, %w [d]) | ReduceSum(Mul(%t, %w), axes = -1)
//   %s = Add(%s, c)                              optional: Linear(d, 1)'s bias
//   %s = Mul(%s, a) | Div(%s, a)                 optional scalar scales
//   %s = Add(%s, %mask) | Where(%m, fill, %s) | Where(%m, %s, fill)
//   %p = Softmax(%s) {axis = -1}
//   %y = MatMul(%p, %values [b,Sk,dv])
//
// becomes %y = AdditiveAttention(%q, %k (+ bias), %values, %w (* a), [%mask])
// {mask_fill}: the [b, Sq, Sk, d] tanh tensor is never built. The constant
// c shifts every score of a row alike, which the softmax ignores (a Where
// fill moves by it instead). Multiplicative (Luong dot, or general: q is
// then q·W) attention over 3-D scores, which fuse-attention (4-D only)
// leaves:
//
//   %s = MatMul(%q [b,Sq,d], %kt [b,d,Sk]) -> scales -> masks -> Softmax -> MatMul(%p, %v)
//
// becomes the 3-D single-head %y = Attention(%q, %k, %v, [%mask])
// {q_num_heads = 1, kv_num_heads = 1, scale}: a data-dependent mask stays
// an operand (a 3-D one gains the heads axis); a Where's finite fill
// becomes Attention's mask_fill (less the dropped shift), so a row hiding
// every key is uniform as in the unfused graph. Dead nodes are left for dce.
//
// The matcher is in FuseAdditiveAttentionMatch.cpp; this file is the pass
// and the rewrite.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/Pass.h"
#include "passes/attention/FuseAdditiveAttentionMatch.h"

#include <cmath>

namespace onnxc::additive {

namespace {

using match::definedBy;
using match::matched;

class FuseAdditiveAttention : public Pass {
public:
  std::string_view name() const override { return "fuse-additive-attention"; }
  std::string_view description() const override {
    return "replace additive (Bahdanau) attention by one AdditiveAttention op and 3-D "
           "single-head dot attention (Luong) by Attention";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    // Softmaxes first: a fusion erases nodes after its Softmax.
    std::vector<Node *> candidates = graph.nodesOfKind(OpKind::Softmax);
    bool changed = false;
    for (Node *softmax : candidates) {
      // Other ranks are not single-head attention (4-D is fuse-attention's).
      const Shape &shape = softmax->result(0)->shape();
      if (!softmax->result(0)->hasUses() || !shape.isRanked() || shape.rank() != 3)
        continue;
      MatchResult<bool> fused = fuse(graph, *softmax, context);
      if (!fused)
        context.reject(*softmax, fused.rejection().reason);
      else if (*fused)
        changed = true;
    }
    return changed;
  }

private:
  /// Fuses the attention anchored at `softmax` (3-D scores): whether it did
  /// (not when its result is dead, left for dce), or why not.
  MatchResult<bool> fuse(Graph &graph, Node &softmax, PassContext &context) {
    const Shape &shape = softmax.result(0)->shape();
    MatchResult<ScoreChain> chain = matchScoreChain(graph, softmax);
    if (!chain)
      return chain.rejection();
    if (!chain->output->result(0)->hasUses() && !graph.isOutput(chain->output->result(0)))
      return false;
    if (chain->mask.mask) {
      if (MatchStatus mask = checkMaskShape(chain->mask, shape); !mask)
        return mask.rejection();
    }
    if (MatchStatus values = checkValues(*chain); !values)
      return values.rejection();
    Node *source = chain->source->definingNode();
    // A MatMul of 3-D operands is a dot product; anything else (a 4-D
    // tanh tensor reduced by w) is checked as additive attention.
    const Shape &lhs = source->operand(0)->shape();
    bool dot = source->kind() == OpKind::MatMul && lhs.isRanked() && lhs.rank() <= 3;
    MatchStatus rewritten;
    if (dot) {
      rewritten = rewriteDot(graph, *chain, context);
    } else {
      MatchResult<AdditiveCore> core = matchAdditiveCore(graph, *chain);
      if (!core)
        return core.rejection();
      rewritten = rewriteAdditive(graph, *chain, *core, context);
    }
    if (!rewritten)
      return rewritten.rejection();
    return true;
  }

  /// Nodes made for one candidate, erased again when it is refused.
  struct Builder {
    Graph &graph;
    Node *before;
    std::string base;
    std::vector<Node *> created;
    size_t assumptionsBefore;

    Builder(Graph &g, Node *root, std::string name)
        : graph(g), before(root), base(std::move(name)), assumptionsBefore(g.assumptions().size()) {
    }

    Value *constantI64(const std::string &suffix, std::vector<int64_t> values) {
      int64_t n = int64_t(values.size());
      return graph.addConstant(graph.uniqueName(base + suffix),
                               Tensor::fromVector<int64_t>({n}, values));
    }
    Value *constantLike(const std::string &suffix, DType dtype, double value) {
      Tensor t(dtype, {});
      t.setElementFromDouble(0, value);
      return graph.addConstant(graph.uniqueName(base + suffix), std::move(t));
    }
    Node *node(OpKind kind, const std::vector<Value *> &operands, const std::string &suffix,
               const std::vector<std::pair<std::string, Attribute>> &attributes = {}) {
      Node *n = graph.createNode(kind, operands, 1, base + suffix,
                                 {graph.uniqueName(base + suffix)}, before);
      created.push_back(n);
      for (const auto &[key, value] : attributes)
        n->setAttr(key, value);
      InferenceContext inference(graph);
      inferNodeShapes(*n, inference);
      return n;
    }
    Value *make(OpKind kind, const std::vector<Value *> &operands, const std::string &suffix) {
      return node(kind, operands, suffix)->result(0);
    }
    void rollBack() {
      graph.truncateAssumptions(assumptionsBefore);
      for (auto it = created.rbegin(); it != created.rend(); ++it)
        graph.eraseNode(*it);
      created.clear();
    }
    /// Replaces `root`'s result by `fused`'s (same type, same name).
    MatchStatus replace(Node *fused) {
      Node *root = before;
      if (fused->result(0)->type() != root->result(0)->type())
        return Rejection{"the fused op's result type differs from the pattern's"};
      std::string name = root->result(0)->name();
      graph.replaceAllUsesWith(root->result(0), fused->result(0));
      graph.eraseNode(root);
      graph.renameValue(fused->result(0), name);
      return matched();
    }
  };

  static MatchStatus checkValues(const ScoreChain &chain) {
    const Shape &scores = chain.softmax->result(0)->shape();
    const Shape &v = chain.output->operand(1)->shape();
    if (!v.isRanked() || v.rank() != 3 || !v[0].provablyEqual(scores[0]) ||
        !v[1].provablyEqual(scores[2]))
      return Rejection{"the values are not [batch, source, size]"};
    if (!isFloat(chain.output->operand(1)->dtype()))
      return Rejection{"the values are not floating point"};
    return matched();
  }

  /// q [b, Sq, 1, d] (or k [b, 1, Sk, d]) without its unit axis: the
  /// tensor it views, or a Squeeze of it (a view too).
  static Value *dropUnitAxis(Builder &build, Value *value, int64_t axis, const char *suffix) {
    const Shape &s = value->shape();
    std::vector<Dim> dims = s.dims();
    dims.erase(dims.begin() + axis);
    Node *node = value->definingNode();
    if (node && (node->kind() == OpKind::Unsqueeze || node->kind() == OpKind::Reshape) &&
        match::provablySameShape(node->operand(0)->shape(), Shape(dims)))
      return node->operand(0);
    return build.make(OpKind::Squeeze, {value, build.constantI64(".axes", {axis})}, suffix);
  }

  static Value *fusedMask(Builder &build, const MaskTerm &mask) {
    if (!mask.mask)
      return nullptr;
    if (mask.hiddenWhereTrue)
      return build.make(OpKind::Not, {mask.mask}, ".visible");
    return mask.mask;
  }

  MatchStatus rewriteAdditive(Graph &graph, const ScoreChain &chain, const AdditiveCore &core,
                              PassContext &context) {
    Builder build(graph, chain.output,
                  chain.softmax->name().empty() ? "additive_attention" : chain.softmax->name());
    MatchStatus replaced;
    try {
      DType dtype = core.query->dtype();
      Value *query = dropUnitAxis(build, core.query, 2, ".query");
      Value *key = dropUnitAxis(build, core.key, 1, ".key");
      if (core.bias)
        key = build.make(OpKind::Add, {key, core.bias}, ".key_bias");
      Value *score = core.score;
      if (score->shape().rank() == 2)
        score =
            build.make(OpKind::Reshape, {score, build.constantI64(".score_shape", {-1})}, ".score");
      if (chain.scale != 1)
        score = build.make(OpKind::Mul, {score, build.constantLike(".scale", dtype, chain.scale)},
                           ".scaled_score");
      std::vector<Value *> operands = {query, key, chain.output->operand(1), score};
      if (Value *mask = fusedMask(build, chain.mask))
        operands.push_back(mask);
      Node *fused =
          graph.createNode(OpKind::AdditiveAttention, operands, 1, build.base, {}, chain.output);
      build.created.push_back(fused);
      if (chain.mask.mask && !chain.mask.additive &&
          !(std::isinf(chain.mask.fill) && chain.mask.fill < 0))
        fused->setAttr("mask_fill", Attribute(float(chain.mask.fill - chain.shift)));
      InferenceContext inference(graph);
      inferNodeShapes(*fused, inference);
      replaced = build.replace(fused);
    } catch (const Error &) {
      replaced = Rejection{"shape inference rejects the fused op"};
    }
    if (!replaced) {
      build.rollBack();
      return replaced;
    }
    context.count("fused");
    context.count("additive");
    if (chain.mask.mask)
      context.count("with a mask operand");
    return matched();
  }

  MatchStatus rewriteDot(Graph &graph, const ScoreChain &chain, PassContext &context) {
    Node *scores = chain.source->definingNode();
    Value *q = scores->operand(0), *kt = scores->operand(1);
    const Shape &qs = q->shape(), &ks = kt->shape();
    if (!qs.isRanked() || !ks.isRanked() || qs.rank() != 3 || ks.rank() != 3)
      return Rejection{"Q or Kᵀ is not 3-D"};
    const Shape &s = chain.source->shape();
    if (!qs[0].provablyEqual(s[0]) || !ks[0].provablyEqual(s[0]))
      return Rejection{"Q and K do not share the batch (broadcast)"};
    if (!isFloat(q->dtype()) || q->dtype() != kt->dtype())
      return Rejection{"Q and K do not share one floating type"};
    const MaskTerm &mask = chain.mask;
    Builder build(graph, chain.output,
                  chain.softmax->name().empty() ? "attention" : chain.softmax->name());
    MatchStatus replaced;
    try {
      Node *transpose = definedBy(kt, OpKind::Transpose);
      Value *k = transpose && match::transposePerm(*transpose) == std::vector<int64_t>{0, 2, 1}
                     ? transpose->operand(0)
                     : build
                           .node(OpKind::Transpose, {kt}, ".k",
                                 {{"perm", Attribute(std::vector<int64_t>{0, 2, 1})}})
                           ->result(0);
      std::vector<Value *> operands = {q, k, chain.output->operand(1)};
      if (Value *m = fusedMask(build, mask)) {
        // Attention's mask is right-aligned to [batch, heads, Sq, Sk].
        if (m->shape().rank() == 3)
          m = build.make(OpKind::Unsqueeze, {m, build.constantI64(".mask_axes", {1})}, ".mask");
        operands.push_back(m);
      }
      Node *fused = graph.createNode(OpKind::Attention, operands, 1, build.base, {}, chain.output);
      build.created.push_back(fused);
      fused->setAttr("scale", Attribute(float(chain.scale)));
      fused->setAttr("q_num_heads", Attribute(int64_t(1)));
      fused->setAttr("kv_num_heads", Attribute(int64_t(1)));
      // A finite Where fill is what Attention's hidden keys score (its
      // mask_fill), moved by the shift the op drops, as in rewriteAdditive.
      if (mask.mask && !mask.additive && !(std::isinf(mask.fill) && mask.fill < 0))
        fused->setAttr("mask_fill", Attribute(float(mask.fill - chain.shift)));
      InferenceContext inference(graph);
      inferNodeShapes(*fused, inference);
      replaced = build.replace(fused);
    } catch (const Error &) {
      replaced = Rejection{"shape inference rejects the fused op"};
    }
    if (!replaced) {
      build.rollBack();
      return replaced;
    }
    context.count("fused");
    context.count("dot-product");
    if (mask.mask)
      context.count("with a mask operand");
    return matched();
  }
};

} // namespace

} // namespace onnxc::additive

namespace onnxc {

std::unique_ptr<Pass> createFuseAdditiveAttentionPass() {
  return std::make_unique<additive::FuseAdditiveAttention>();
}

} // namespace onnxc
