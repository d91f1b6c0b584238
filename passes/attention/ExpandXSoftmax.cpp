//===- passes/attention/ExpandXSoftmax.cpp - XSoftmax as a masked core and zeroed rows ---===//
//
// DeBERTa's XSoftmax masks the scores and then zeroes the probabilities of
// the keys it hid:
//
//   %m = Where(%hidden, %fill, Add(%s, %rel))     %fill <= -1e30 (finfo.min)
//   %p = Softmax(%m) {axis = -1}
//   %o = MatMul(Where(%hidden, 0, %p), %v)        (or Where(%visible, %p, 0))
//
// where %s is the scores (a MatMul, maybe scaled by constants) and %rel an
// optional bias (DeBERTa's relative position terms). fuse-attention matches
// the masked core alone; rather than a branch in its matcher, this pass
// rewrites the pattern into
//
//   %m = Add(%s, Where(%hidden, %fill, %rel))     (%m as it was, without %rel)
//   %o = Where(any visible key in the row, MatMul(Softmax(%m), %v), 0)
//
// with the row test applied after the head merge (Transpose [0, 2, 1, 3],
// Reshape to [b, Sq, h*dv]) when %hidden does not vary over heads, so that
// fuse-attention still reads the projections in place.
//
// Why it is exact, for finite scores: in a row that sees some key, a hidden
// key scores %fill (or %s + %fill, which rounds to about %fill) and its
// probability exp(fill - max) underflows to exactly 0, so the zeroing
// changes nothing there and the two forms agree; a row that sees no key is
// 0 in both. That needs the visible keys' scores to be finite, which the
// pass checks as far as the graph says: the Where must repeat the mask
// applied last before Softmax with the same condition, fill at most -1e30,
// and nothing else may mask the scores (a shape-only bias or another mask
// could hide every key a row shows, which the zeroing would have made 0).
// When a check fails the graph is left alone (--explain says why). The old
// Where nodes are erased when dead, so that fuse-attention finds the
// probabilities and scores used once.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/attention/RewriteBuilder.h"
#include "passes/attention/masks/AttentionMasks.h"

namespace onnxc::attention {

namespace {

using match::definedBy;
using match::matched;
using match::MatchStatus;
using match::provablySameShape;
using match::Rejection;
using match::scalarConstant;
using match::soleUser;
using match::tally;

/// A fill whose exp underflows against any ordinary finite score.
constexpr double kUnderflowingFill = -1e30;

/// The matched XSoftmax.
struct XSoftmax {
  Node *softmax = nullptr, *masked = nullptr, *zeroing = nullptr, *product = nullptr;
  Value *hidden = nullptr;
  bool hiddenWhereTrue = true; // Where(hidden, fill, s); else Where(visible, s, fill)
  Value *scores = nullptr;     // %s
  Value *bias = nullptr;       // %rel, when the masked scores are Add(%s, %rel)
};

/// Whether `value` is attention scores with no mask: a MatMul's result,
/// maybe multiplied or divided by scalar constants.
bool plainScores(const Value *value) {
  while (const Node *node = value->definingNode()) {
    OpKind kind = node->kind();
    if (kind == OpKind::MatMul)
      return true;
    if (kind != OpKind::Mul && kind != OpKind::Div)
      return false;
    if (scalarConstant(node->operand(1)))
      value = node->operand(0);
    else if (kind == OpKind::Mul && scalarConstant(node->operand(0)))
      value = node->operand(1);
    else
      return false;
  }
  return false;
}

/// Where(c, 0, p) or Where(c, p, 0) of the probabilities `probs`: whether
/// `node` is one, and which way its condition reads.
bool zeroesProbabilities(const Node *node, const Value *probs, bool &hiddenWhereTrue) {
  if (!node || node->kind() != OpKind::Where)
    return false;
  std::optional<double> onTrue = scalarConstant(node->operand(1));
  std::optional<double> onFalse = scalarConstant(node->operand(2));
  hiddenWhereTrue = onTrue && *onTrue == 0 && node->operand(2) == probs;
  bool visibleWhereTrue = onFalse && *onFalse == 0 && node->operand(1) == probs;
  return hiddenWhereTrue || visibleWhereTrue;
}

/// The zeroing Where and the value MatMul after Softmax.
MatchStatus matchAfterSoftmax(const Graph &graph, XSoftmax &x) {
  Value *probs = x.softmax->result(0);
  if (x.zeroing->operand(0)->dtype() != DType::Bool)
    return Rejection{"a Where zeroing probabilities has a condition that is not bool"};
  if (!provablySameShape(x.zeroing->result(0)->shape(), probs->shape()))
    return Rejection{"the Where zeroing probabilities broadcasts them to another shape"};
  if (probs->dtype() != DType::F32)
    return Rejection{"the zeroed probabilities are not f32"};
  x.product = soleUser(graph, x.zeroing->result(0));
  if (!x.product || x.product->kind() != OpKind::MatMul ||
      x.product->operand(0) != x.zeroing->result(0))
    return Rejection{"the zeroed probabilities are not multiplied by V alone"};
  const Shape &shape = probs->shape();
  int64_t axis = x.softmax->getInt("axis", -1);
  if (!shape.isRanked() || (axis != -1 && axis != int64_t(shape.rank()) - 1))
    return Rejection{"Softmax is not over the last (key) axis"};
  return matched();
}

/// The Where masking the scores before Softmax, and what it masks.
MatchStatus matchBeforeSoftmax(XSoftmax &x) {
  x.hidden = x.zeroing->operand(0);
  x.masked = definedBy(x.softmax->operand(0), OpKind::Where);
  int fillOperand = x.hiddenWhereTrue ? 1 : 2;
  if (!x.masked || x.masked->operand(0) != x.hidden ||
      !scalarConstant(x.masked->operand(fillOperand)))
    return Rejection{"the Where zeroing probabilities after Softmax does not repeat the mask "
                     "applied last before it"};
  if (*scalarConstant(x.masked->operand(fillOperand)) > kUnderflowingFill)
    return Rejection{"probabilities are zeroed after Softmax, but the Where before it fills a "
                     "value under which hidden keys keep some probability"};
  Value *masked = x.masked->operand(x.hiddenWhereTrue ? 2 : 1);
  if (!provablySameShape(masked->shape(), x.softmax->operand(0)->shape()))
    return Rejection{"XSoftmax's mask broadcasts the scores to another shape"};
  if (plainScores(masked)) {
    x.scores = masked;
    return matched();
  }
  Node *add = definedBy(masked, OpKind::Add);
  bool first = add && plainScores(add->operand(0)), second = add && plainScores(add->operand(1));
  if (first == second)
    return Rejection{"XSoftmax masks scores that other masks or terms apply to (a row its mask "
                     "shows keys in might see none)"};
  x.scores = add->operand(first ? 0 : 1);
  x.bias = add->operand(first ? 1 : 0);
  if (x.bias->dtype() != x.scores->dtype())
    return Rejection{"the bias under XSoftmax's mask is not of the scores' type"};
  if (dependsOnShapesOnly(x.bias))
    return Rejection{"a shape-only mask is added under XSoftmax's mask (it could hide every key "
                     "a row shows)"};
  return matched();
}

/// Whether the row flags of `hidden` [.., Sq, 1] broadcast over the merged
/// [b, Sq, h*dv] result once the head axis is dropped: `hidden` does not
/// vary over heads.
bool rowsBroadcastOverMerged(const Value *hidden) {
  const Shape &cond = hidden->shape();
  if (!cond.isRanked())
    return false;
  return cond.rank() <= 2 || (cond.rank() <= 4 && cond[cond.rank() - 3] == Dim(1));
}

/// The head merge Reshape(Transpose(o) {perm = [0, 2, 1, 3]}) -> [b, Sq,
/// h*dv] reading the value product alone, or null.
Node *mergedHeads(const Graph &graph, const Node &product) {
  const Value *o = product.result(0);
  Node *transpose = soleUser(graph, o);
  if (!transpose || transpose->kind() != OpKind::Transpose ||
      match::transposePerm(*transpose) != std::vector<int64_t>{0, 2, 1, 3})
    return nullptr;
  Node *reshape = soleUser(graph, transpose->result(0));
  if (!reshape || reshape->kind() != OpKind::Reshape || reshape->operand(0) != transpose->result(0))
    return nullptr;
  const Shape &in = o->shape(), &out = reshape->result(0)->shape();
  if (!in.isRanked() || !out.isRanked() || in.rank() != 4 || out.rank() != 3)
    return nullptr;
  std::optional<int64_t> heads = in[1].constant(), size = in[3].constant(),
                         merged = out[2].constant();
  bool rows = in[0].provablyEqual(out[0]) && in[2].provablyEqual(out[1]);
  return rows && heads && size && merged && *merged == *heads * *size ? reshape : nullptr;
}

/// Whether each row of `hidden` shows some key, as a bool [.., Sq, 1]
/// (without the head axis when `dropHeads`).
Value *rowSeesKey(RewriteBuilder &builder, const XSoftmax &x, bool dropHeads,
                  const std::string &name) {
  Value *visible = x.hidden;
  if (x.hiddenWhereTrue)
    visible = builder.create(OpKind::Not, {visible}, name);
  Value *asFloat = builder.create(OpKind::Cast, {visible}, name, {{"to", Attribute(int64_t(1))}});
  Value *any =
      builder.create(OpKind::ReduceMax, {asFloat, builder.constantI64(name + ".axes", {-1})}, name);
  size_t rank = any->shape().rank();
  if (dropHeads && rank >= 3)
    any = builder.create(OpKind::Squeeze,
                         {any, builder.constantI64(name + ".heads", {int64_t(rank) - 3})}, name);
  return builder.create(OpKind::Cast, {any}, name, {{"to", Attribute(int64_t(9))}});
}

/// Rewrites a matched XSoftmax (see the file comment); rolls back and says
/// why when a created node's type is not what it replaces.
class Expander {
public:
  Expander(Graph &graph, const XSoftmax &x) : graph_(graph), x_(x) {}

  MatchStatus run() {
    base_ = x_.softmax->name().empty() ? "xsoftmax" : x_.softmax->name();
    RewriteBuilder before(graph_, x_.product);
    // Appended: the sort at the end of the pass puts it after `target`.
    RewriteBuilder after(graph_, nullptr);
    Node *merge = rowsBroadcastOverMerged(x_.hidden) ? mergedHeads(graph_, *x_.product) : nullptr;
    Value *target = merge ? merge->result(0) : x_.product->result(0);
    Value *scores = nullptr, *zeroed = nullptr;
    std::optional<Rejection> refused;
    try {
      if (x_.bias)
        scores = combinedScores(before);
      Value *sees = rowSeesKey(before, x_, merge != nullptr, base_ + ".rows");
      Value *zero =
          graph_.addConstant(graph_.uniqueName(base_ + ".zero"), Tensor::scalar<float>(0.0f));
      zeroed = after.create(OpKind::Where, {sees, target, zero}, base_ + ".rows");
      if (zeroed->type() != target->type() ||
          (scores && scores->type() != x_.softmax->operand(0)->type()))
        refused = Rejection{"the zeroed rows or the combined mask differ in type from XSoftmax's"};
    } catch (const Error &) {
      refused = Rejection{"shape inference rejects the expanded XSoftmax"};
    }
    if (refused) {
      after.rollBack();
      before.rollBack();
      return *refused;
    }
    replace(scores, target, zeroed);
    return matched();
  }

private:
  /// Add(%s, Where(%hidden, %fill, %rel)), the Where's operands in its order.
  Value *combinedScores(RewriteBuilder &builder) {
    Node &masked = *x_.masked;
    std::vector<Value *> where = {masked.operand(0), masked.operand(1), masked.operand(2)};
    where[x_.hiddenWhereTrue ? 2 : 1] = x_.bias;
    Value *bias = builder.create(OpKind::Where, where, base_ + ".bias");
    return builder.create(OpKind::Add, {x_.scores, bias}, base_ + ".scores");
  }

  void replace(Value *scores, Value *target, Value *zeroed) {
    if (scores)
      x_.softmax->setOperand(0, scores);
    x_.product->setOperand(0, x_.softmax->result(0));
    // The zeroed rows take the target's place (and name) for its readers.
    std::string name = target->name();
    graph_.replaceAllUsesWith(target, zeroed);
    zeroed->definingNode()->setOperand(1, target);
    graph_.renameValue(target, graph_.uniqueName(name + ".unzeroed"));
    graph_.renameValue(zeroed, name);
    // fuse-attention wants the probabilities and scores used once: the
    // replaced nodes that read them go now rather than at dce.
    Node *biased =
        x_.bias ? x_.masked->operand(x_.hiddenWhereTrue ? 2 : 1)->definingNode() : nullptr;
    eraseIfDead(x_.zeroing);
    if (eraseIfDead(x_.masked) && biased)
      eraseIfDead(biased);
  }

  bool eraseIfDead(Node *node) {
    if (node->result(0)->hasUses() || graph_.isOutput(node->result(0)))
      return false;
    graph_.eraseNode(node);
    return true;
  }

  Graph &graph_;
  const XSoftmax &x_;
  std::string base_;
};

class ExpandXSoftmax : public Pass {
public:
  std::string_view name() const override { return "expand-xsoftmax"; }
  std::string_view description() const override {
    return "rewrite DeBERTa's XSoftmax (probabilities zeroed where its mask hides keys) into the "
           "masked attention core fuse-attention matches and a zeroing of rows that see no key";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("expanded", 0);
    bool changed = false;
    for (Node *softmax : graph.nodesOfKind(OpKind::Softmax)) {
      XSoftmax x;
      x.softmax = softmax;
      // Only a Softmax whose probabilities a Where zeroes is a candidate.
      x.zeroing = soleUser(graph, softmax->result(0));
      if (!zeroesProbabilities(x.zeroing, softmax->result(0), x.hiddenWhereTrue))
        continue;
      MatchStatus status = matchAfterSoftmax(graph, x);
      if (status)
        status = matchBeforeSoftmax(x);
      if (status)
        status = Expander(graph, x).run();
      changed |= tally(context, *softmax, status, "expanded");
    }
    if (changed)
      graph.sortTopologically();
    return changed;
  }
};

} // namespace

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createExpandXSoftmaxPass() {
  return std::make_unique<attention::ExpandXSoftmax>();
}

} // namespace onnxc
