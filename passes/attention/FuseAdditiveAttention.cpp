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
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

#include <cmath>

namespace onnxc {

namespace {

using match::definedBy;
using match::scalarConstant;
using match::soleUser;

/// A rejected candidate's reason (a static string, so equal reasons tally).
struct Rejection {
  const char *reason;
};

/// The one mask between the scores and Softmax.
struct MaskTerm {
  Value *mask = nullptr;
  bool additive = false;
  bool hiddenWhereTrue = false; // Where(%m, fill, %s): %m marks hidden keys
  double fill = 0;              // Where forms only
};

/// What sits between the score source and the value MatMul. The scores
/// before the mask are scale * source + shift.
struct ScoreChain {
  Node *softmax = nullptr, *output = nullptr;
  Value *source = nullptr;
  double scale = 1, shift = 0;
  MaskTerm mask;
};

/// The additive core under the scores.
struct AdditiveCore {
  Value *query = nullptr, *key = nullptr; // [b, Sq, 1, d] and [b, 1, Sk, d]
  Value *bias = nullptr;                  // added inside the tanh, or null
  Value *score = nullptr;                 // [d] or [d, 1]
};

bool sameShape(const Shape &a, std::initializer_list<Dim> dims) {
  return match::provablySameShape(a, Shape(std::vector<Dim>(dims)));
}

/// Whether `value` is read by `consumer` alone.
void requireSoleUse(const Graph &graph, const Value *value, const Node *consumer) {
  if (soleUser(graph, value) != consumer)
    throw Rejection{"an intermediate tensor is used elsewhere"};
}

/// Whether `value` is computed (through masks, scales and views) from a
/// MatMul or ReduceSum: the scores side of an Add or Where.
bool leadsToScores(const Value *value, int depth = 0) {
  const Node *node = value ? value->definingNode() : nullptr;
  if (!node || depth > 8)
    return false;
  switch (node->kind()) {
  case OpKind::MatMul:
  case OpKind::ReduceSum:
    return true;
  case OpKind::Squeeze:
  case OpKind::Reshape:
    return leadsToScores(node->operand(0), depth + 1);
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::Div:
    return leadsToScores(node->operand(0), depth + 1) || leadsToScores(node->operand(1), depth + 1);
  case OpKind::Where:
    return leadsToScores(node->operand(1), depth + 1) || leadsToScores(node->operand(2), depth + 1);
  default:
    return false;
  }
}

/// Folds an Add, Mul or Div of the scores by a scalar constant into
/// chain.scale / chain.shift and sets `next` to the scores operand; false
/// when `node` is not one.
bool absorbAffine(const Node &node, ScoreChain &chain, Value *&next) {
  if (node.numOperands() != 2)
    return false;
  std::optional<double> c0 = scalarConstant(node.operand(0));
  std::optional<double> c1 = scalarConstant(node.operand(1));
  if (bool(c0) == bool(c1))
    return false;
  double c = c1 ? *c1 : *c0;
  Value *scores = node.operand(c1 ? 0 : 1);
  switch (node.kind()) {
  case OpKind::Add:
    chain.shift += chain.scale * c;
    break;
  case OpKind::Mul:
    chain.scale *= c;
    break;
  case OpKind::Div:
    if (!c1 || c == 0)
      return false;
    chain.scale /= c;
    break;
  default:
    return false;
  }
  next = scores;
  return true;
}

/// Reads the mask of an Add or Where on the scores into `mask` and sets
/// `next` to the scores operand; false when `node` is neither.
bool absorbMask(const Node &node, MaskTerm &mask, Value *&next) {
  if (node.kind() == OpKind::Add) {
    bool first = leadsToScores(node.operand(0)), second = leadsToScores(node.operand(1));
    if (first == second)
      throw Rejection{"an Add before Softmax does not add a mask to the scores"};
    mask = {node.operand(first ? 1 : 0), true};
    next = node.operand(first ? 0 : 1);
    if (mask.mask->dtype() != next->dtype())
      throw Rejection{"an additive mask is not of the scores' type"};
    return true;
  }
  if (node.kind() != OpKind::Where)
    return false;
  std::optional<double> onTrue = scalarConstant(node.operand(1));
  std::optional<double> onFalse = scalarConstant(node.operand(2));
  if (onTrue && !onFalse && leadsToScores(node.operand(2))) {
    mask = {node.operand(0), false, true, *onTrue};
    next = node.operand(2);
  } else if (onFalse && !onTrue && leadsToScores(node.operand(1))) {
    mask = {node.operand(0), false, false, *onFalse};
    next = node.operand(1);
  } else {
    throw Rejection{"a Where before Softmax does not replace scores by a constant"};
  }
  if (mask.mask->dtype() != DType::Bool)
    throw Rejection{"a Where mask condition is not bool"};
  return true;
}

/// Walks back from Softmax over the mask, scales and shifts.
ScoreChain matchScoreChain(const Graph &graph, Node &softmax) {
  ScoreChain chain;
  chain.softmax = &softmax;
  const Shape &shape = softmax.result(0)->shape();
  int64_t axis = softmax.getInt("axis", -1);
  if (axis != -1 && axis != 2)
    throw Rejection{"Softmax is not over the last (source) axis"};
  chain.output = soleUser(graph, softmax.result(0));
  if (!chain.output || chain.output->kind() != OpKind::MatMul ||
      chain.output->operand(0) != softmax.result(0))
    throw Rejection{"Softmax output is not multiplied by the values alone"};

  Value *value = softmax.operand(0);
  Node *consumer = &softmax;
  bool sawAffine = false;
  for (;;) {
    Node *node = value->definingNode();
    if (!node)
      throw Rejection{"the scores are not computed from the queries and keys"};
    requireSoleUse(graph, value, consumer);
    if (node->kind() != OpKind::Add && node->kind() != OpKind::Mul && node->kind() != OpKind::Div &&
        node->kind() != OpKind::Where)
      break;
    if (!match::provablySameShape(node->result(0)->shape(), shape))
      throw Rejection{"a mask or scale broadcasts the scores to another shape"};
    Value *next = nullptr;
    MaskTerm mask;
    if (absorbAffine(*node, chain, next)) {
      sawAffine = true;
    } else if (absorbMask(*node, mask, next)) {
      if (sawAffine)
        throw Rejection{"the scores are scaled or shifted after the mask"};
      if (chain.mask.mask)
        throw Rejection{"more than one mask"};
      chain.mask = mask;
    } else {
      throw Rejection{"an unexpected op sits between the scores and Softmax"};
    }
    value = next;
    consumer = node;
  }
  chain.source = value;
  return chain;
}

/// Below the 3-D score source, a Squeeze or Reshape of [b, Sq, Sk, 1] (w
/// is then [d, 1]) with Linear(d, 1)'s bias under it: the value the scores
/// are read from, with `columnScore` set when the unit axis was there.
Value *peelUnitScoreAxis(const Graph &graph, ScoreChain &chain, bool &columnScore) {
  const Shape &scores = chain.softmax->result(0)->shape();
  Value *value = chain.source;
  Node *node = value->definingNode();
  if (node->kind() != OpKind::Squeeze && node->kind() != OpKind::Reshape)
    return value;
  Value *input = node->operand(0);
  if (!sameShape(input->shape(), {scores[0], scores[1], scores[2], Dim(1)}))
    throw Rejection{"the squeezed scores are not [batch, query, source, 1]"};
  requireSoleUse(graph, input, node);
  value = input;
  node = value->definingNode();
  // Linear(d, 1)'s bias, added before the squeeze.
  for (Value *next = nullptr; node && absorbAffine(*node, chain, next);
       node = value->definingNode()) {
    requireSoleUse(graph, next, node);
    value = next;
  }
  columnScore = true;
  return value;
}

/// `node`, the projection of tanh by w (MatMul, or ReduceSum of a Mul):
/// sets core.score and `reducer` (the node reading tanh) and returns tanh.
Value *matchScoreProjection(const Graph &graph, Node *node, AdditiveCore &core, bool &columnScore,
                            Node *&reducer) {
  reducer = node;
  if (node && node->kind() == OpKind::MatMul) {
    core.score = node->operand(1);
    return node->operand(0);
  }
  if (!node || node->kind() != OpKind::ReduceSum)
    throw Rejection{"the scores do not come from a MatMul"};
  const Value *axes = node->numOperands() > 1 ? node->operand(1) : nullptr;
  std::optional<double> axis = scalarConstant(axes);
  bool keep = node->getInt("keepdims", 1) != 0;
  if (!axis || (*axis != -1 && *axis != 3) || keep != columnScore)
    throw Rejection{"the scores reduce tanh over another axis than the last"};
  Node *mul = definedBy(node->operand(0), OpKind::Mul);
  if (!mul)
    throw Rejection{"the scores are not a projection of tanh"};
  requireSoleUse(graph, mul->result(0), node);
  bool first = definedBy(mul->operand(0), OpKind::Tanh) != nullptr;
  core.score = mul->operand(first ? 1 : 0);
  reducer = mul;
  columnScore = false;
  return mul->operand(first ? 0 : 1);
}

/// The sum under tanh [b, Sq, Sk, d]: query [b, Sq, 1, d] + key [b, 1, Sk, d],
/// with a bias [d] added inside the tanh; sets core.query, core.key and
/// core.bias.
void matchTanhSum(const Graph &graph, Node &tanhNode, AdditiveCore &core) {
  const Shape &t = tanhNode.result(0)->shape();
  const Dim &size = t[3];
  Node *sum = definedBy(tanhNode.operand(0), OpKind::Add);
  if (!sum)
    throw Rejection{"tanh is not of a sum"};
  requireSoleUse(graph, sum->result(0), &tanhNode);
  // A bias inside the tanh: Add(Add(qu, ku), bias [d]).
  for (int side = 0; side < 2; ++side) {
    Value *inner = sum->operand(size_t(side)), *bias = sum->operand(size_t(1 - side));
    Node *innerSum = definedBy(inner, OpKind::Add);
    const Shape &b = bias->shape();
    bool vector = b.isRanked() && b.rank() >= 1 && b.rank() <= 4 && b[b.rank() - 1] == size;
    for (size_t i = 0; vector && i + 1 < b.rank(); ++i)
      vector = b[i] == Dim(1);
    if (innerSum && vector && sameShape(inner->shape(), {t[0], t[1], t[2], size})) {
      requireSoleUse(graph, inner, sum);
      core.bias = bias;
      sum = innerSum;
      break;
    }
  }
  for (int side = 0; side < 2; ++side) {
    Value *a = sum->operand(size_t(side)), *b = sum->operand(size_t(1 - side));
    if (sameShape(a->shape(), {t[0], t[1], Dim(1), size}) &&
        sameShape(b->shape(), {t[0], Dim(1), t[2], size})) {
      core.query = a;
      core.key = b;
      break;
    }
  }
  if (!core.query)
    throw Rejection{"the tanh's sum is not [batch, query, 1, size] + [batch, 1, source, size]"};
}

/// Below the (3-D) score source: the tanh of the broadcast sum, reduced by w.
AdditiveCore matchAdditiveCore(const Graph &graph, ScoreChain &chain) {
  const Shape &scores = chain.softmax->result(0)->shape();
  AdditiveCore core;
  bool columnScore = false; // w is [d, 1] (or the reduction keeps the axis)
  Value *value = peelUnitScoreAxis(graph, chain, columnScore);
  Node *reducer = nullptr;
  Value *tanh = matchScoreProjection(graph, value->definingNode(), core, columnScore, reducer);
  Node *tanhNode = definedBy(tanh, OpKind::Tanh);
  if (!tanhNode)
    throw Rejection{"the scores are not a projection of tanh"};
  requireSoleUse(graph, tanh, reducer);
  const Shape &t = tanh->shape();
  if (!t.isRanked() || t.rank() != 4 || !t[0].provablyEqual(scores[0]) ||
      !t[1].provablyEqual(scores[1]) || !t[2].provablyEqual(scores[2]))
    throw Rejection{"tanh is not [batch, query, source, size]"};
  const Dim &size = t[3];
  const Shape &w = core.score->shape();
  bool wOk = columnScore ? sameShape(w, {size, Dim(1)}) : sameShape(w, {size});
  if (!wOk)
    throw Rejection{"the score vector is not [size] or [size, 1]"};
  matchTanhSum(graph, *tanhNode, core);
  return core;
}

/// The mask as an operand of the fused op: dims 1 or the scores' own (the
/// fused op broadcasts no other way).
void checkMaskShape(const MaskTerm &mask, const Shape &scores) {
  const Shape &m = mask.mask->shape();
  if (!m.isRanked() || m.rank() == 0 || m.rank() > 3)
    throw Rejection{"the mask is not of rank 1 to 3"};
  size_t skip = 3 - m.rank();
  for (size_t i = 0; i < m.rank(); ++i)
    if (!(m[i] == Dim(1)) && !m[i].provablyEqual(scores[skip + i]))
      throw Rejection{"the mask broadcasts over an axis of unknown extent"};
}

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
      try {
        ScoreChain chain = matchScoreChain(graph, *softmax);
        if (!chain.output->result(0)->hasUses() && !graph.isOutput(chain.output->result(0)))
          continue;
        if (chain.mask.mask)
          checkMaskShape(chain.mask, shape);
        checkValues(chain);
        Node *source = chain.source->definingNode();
        // A MatMul of 3-D operands is a dot product; anything else (a 4-D
        // tanh tensor reduced by w) is checked as additive attention.
        const Shape &lhs = source->operand(0)->shape();
        bool dot = source->kind() == OpKind::MatMul && lhs.isRanked() && lhs.rank() <= 3;
        if (dot)
          rewriteDot(graph, chain, context);
        else
          rewriteAdditive(graph, chain, matchAdditiveCore(graph, chain), context);
        changed = true;
      } catch (const Rejection &r) {
        context.reject(*softmax, r.reason);
      }
    }
    return changed;
  }

private:
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
    void replace(Node *fused) {
      Node *root = before;
      if (fused->result(0)->type() != root->result(0)->type())
        throw Rejection{"the fused op's result type differs from the pattern's"};
      std::string name = root->result(0)->name();
      graph.replaceAllUsesWith(root->result(0), fused->result(0));
      graph.eraseNode(root);
      graph.renameValue(fused->result(0), name);
    }
  };

  static void checkValues(const ScoreChain &chain) {
    const Shape &scores = chain.softmax->result(0)->shape();
    const Shape &v = chain.output->operand(1)->shape();
    if (!v.isRanked() || v.rank() != 3 || !v[0].provablyEqual(scores[0]) ||
        !v[1].provablyEqual(scores[2]))
      throw Rejection{"the values are not [batch, source, size]"};
    if (!isFloat(chain.output->operand(1)->dtype()))
      throw Rejection{"the values are not floating point"};
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

  void rewriteAdditive(Graph &graph, const ScoreChain &chain, const AdditiveCore &core,
                       PassContext &context) {
    Builder build(graph, chain.output,
                  chain.softmax->name().empty() ? "additive_attention" : chain.softmax->name());
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
      build.replace(fused);
    } catch (const Error &) {
      build.rollBack();
      throw Rejection{"shape inference rejects the fused op"};
    } catch (const Rejection &) {
      build.rollBack();
      throw;
    }
    context.count("fused");
    context.count("additive");
    if (chain.mask.mask)
      context.count("with a mask operand");
  }

  void rewriteDot(Graph &graph, const ScoreChain &chain, PassContext &context) {
    Node *scores = chain.source->definingNode();
    Value *q = scores->operand(0), *kt = scores->operand(1);
    const Shape &qs = q->shape(), &ks = kt->shape();
    if (!qs.isRanked() || !ks.isRanked() || qs.rank() != 3 || ks.rank() != 3)
      throw Rejection{"Q or Kᵀ is not 3-D"};
    const Shape &s = chain.source->shape();
    if (!qs[0].provablyEqual(s[0]) || !ks[0].provablyEqual(s[0]))
      throw Rejection{"Q and K do not share the batch (broadcast)"};
    if (!isFloat(q->dtype()) || q->dtype() != kt->dtype())
      throw Rejection{"Q and K do not share one floating type"};
    const MaskTerm &mask = chain.mask;
    Builder build(graph, chain.output,
                  chain.softmax->name().empty() ? "attention" : chain.softmax->name());
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
      build.replace(fused);
    } catch (const Error &) {
      build.rollBack();
      throw Rejection{"shape inference rejects the fused op"};
    } catch (const Rejection &) {
      build.rollBack();
      throw;
    }
    context.count("fused");
    context.count("dot-product");
    if (mask.mask)
      context.count("with a mask operand");
  }
};

} // namespace

std::unique_ptr<Pass> createFuseAdditiveAttentionPass() {
  return std::make_unique<FuseAdditiveAttention>();
}

} // namespace onnxc
