//===- passes/attention/BatchFirstHeads.cpp - Sequence-first heads as batch-first ---===//
//
// torch's nn.MultiheadAttention (as lift-batched-heads rebuilds it) splits
// and merges heads of sequence-first projections:
//
//   %q = Transpose(Reshape(%p [S, b, h*d] -> [S, b, h, d])) {perm = [1, 2, 0, 3]}
//   %kt = Transpose(Reshape(%p ...)) {perm = [1, 2, 3, 0]}           (Kᵀ)
//   %y = Reshape(Transpose(%o [b, h, Sq, dv]) {perm = [2, 0, 1, 3]})
//          -> [Sq, b, h*dv]  (or the [Sq*b, h*dv] view out_proj reads)
//
// fuse-attention reads one form of head split and merge, the batch-first
// one; rather than a branch in its matcher, this pass rewrites these into
// it, with the sequence and batch swapped around it:
//
//   %q = Transpose(Reshape(Transpose(%p) {perm = [1, 0, 2]} -> [b, S, h, d]))
//          {perm = [0, 2, 1, 3]}                                (Kᵀ: [0, 2, 3, 1])
//   %y = Transpose(Reshape(Transpose(%o) {perm = [0, 2, 1, 3]}
//          -> [b, Sq, h*dv])) {perm = [1, 0, 2]}  (then the [Sq*b, h*dv] view)
//
// Both sides hold p[s, b, j*d + e] at [b, j, s, e] (and o[b, j, s, e] at
// [s, b, j*dv + e]), so the rewrite is exact whatever reads the results.
// fuse-attention's 3-D Attention then reads the transposed projections, and
// fold-seq-first-attention folds those Transposes back into the op's
// seq_first, so nothing is copied at run time. A split or merge whose head
// count or size is not constant, or whose sequence and batch dims are not
// provably kept, is left alone (--explain says why). The old nodes that no
// longer have readers are erased, so fuse-attention sees the merge's
// Transpose as the sole reader of the heads.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/attention/RewriteBuilder.h"

namespace onnxc::attention {

namespace {

using match::definedBy;
using match::matched;
using match::MatchResult;
using match::MatchStatus;
using match::Rejection;
using match::tally;
using match::transposePerm;

const std::vector<int64_t> kSwapOuter = {1, 0, 2};

/// The constant [h, d] a head split Reshape(P [S, b, h*d]) -> [S, b, h, d]
/// splits P's last axis into, keeping the outer two dims; or why not.
MatchResult<std::vector<int64_t>> readHeadSplit(const Node &reshape) {
  const Shape &in = reshape.operand(0)->shape(), &out = reshape.result(0)->shape();
  if (!in.isRanked() || !out.isRanked() || in.rank() != 3 || out.rank() != 4)
    return Rejection{"the sequence-first heads are not split from a 3-D projection into 4-D"};
  if (!in[0].provablyEqual(out[0]) || !in[1].provablyEqual(out[1]))
    return Rejection{"the sequence-first head split does not keep sequence and batch"};
  std::optional<int64_t> heads = out[2].constant(), size = out[3].constant();
  std::optional<int64_t> channels = in[2].constant();
  if (!heads || !size || !channels || *channels != *heads * *size)
    return Rejection{"the sequence-first head split is not of a constant last axis into h*d"};
  return std::vector<int64_t>{*heads, *size};
}

/// Replaces `old`'s result by `value` and erases it, when their types agree.
MatchStatus replaceNode(Graph &graph, RewriteBuilder &builder, Node &old, Value *value) {
  Value *result = old.result(0);
  if (value->type() != result->type()) {
    builder.rollBack();
    return Rejection{"the batch-first form differs in type from the sequence-first one"};
  }
  std::string name = result->name();
  graph.replaceAllUsesWith(result, value);
  graph.eraseNode(&old);
  graph.renameValue(value, name);
  return matched();
}

/// Erases `node` when nothing reads its result any more.
void eraseIfDead(Graph &graph, Node *node) {
  if (node && !node->result(0)->hasUses() && !graph.isOutput(node->result(0)))
    graph.eraseNode(node);
}

/// Transpose {perm} of the sequence-first split Reshape(P) -> [S, b, h, d]
/// as the same Transpose, with 0 and 1 swapped in its perm, of the
/// batch-first split of Transpose(P) {[1, 0, 2]}.
MatchStatus rewriteSplit(Graph &graph, Node &transpose, Node &reshape) {
  MatchResult<std::vector<int64_t>> dims = readHeadSplit(reshape);
  if (!dims)
    return dims.rejection();
  std::vector<int64_t> perm = transposePerm(transpose);
  for (int64_t &axis : perm)
    axis = axis == 0 ? 1 : axis == 1 ? 0 : axis;
  RewriteBuilder builder(graph, &transpose);
  std::string base = transpose.name().empty() ? "heads" : transpose.name();
  Value *heads = nullptr;
  try {
    Value *swapped = builder.create(OpKind::Transpose, {reshape.operand(0)}, base + ".batch_first",
                                    {{"perm", Attribute(kSwapOuter)}});
    Value *split = builder.create(
        OpKind::Reshape,
        {swapped, builder.constantI64(base + ".split", {0, 0, (*dims)[0], (*dims)[1]})},
        base + ".split");
    heads =
        builder.create(OpKind::Transpose, {split}, base + ".heads", {{"perm", Attribute(perm)}});
  } catch (const Error &) {
    builder.rollBack();
    return Rejection{"shape inference rejects the batch-first head split"};
  }
  if (MatchStatus status = replaceNode(graph, builder, transpose, heads); !status)
    return status;
  eraseIfDead(graph, &reshape);
  return matched();
}

/// The width h*dv a sequence-first merge, Reshape(Transpose(O [b, h, Sq,
/// dv])) -> [Sq, b, h*dv] or [Sq*b, h*dv], merges into; or why not.
MatchResult<int64_t> readMerge(Node &reshape, Node &transpose) {
  const Shape &in = transpose.operand(0)->shape(), &out = reshape.result(0)->shape();
  if (!in.isRanked() || !out.isRanked() || in.rank() != 4)
    return Rejection{"the sequence-first head merge is not of 4-D heads"};
  std::optional<int64_t> heads = in[1].constant(), size = in[3].constant();
  if (!heads || !size)
    return Rejection{"the sequence-first head merge has no constant head count and size"};
  int64_t width = *heads * *size;
  std::optional<int64_t> last = out.rank() ? out[out.rank() - 1].constant() : std::nullopt;
  bool split = out.rank() == 3 && out[0].provablyEqual(in[2]) && out[1].provablyEqual(in[0]);
  bool flat = out.rank() == 2 && out[0].provablyEqual(in[2] * in[0]);
  if (!(split || flat) || last != width)
    return Rejection{"the sequence-first head merge is not to [Sq, b, h*dv] or [Sq*b, h*dv]"};
  return width;
}

/// The sequence-first head merge as the batch-first one, transposed back
/// to [Sq, b, h*dv] (and viewed flat when it was).
MatchStatus rewriteMerge(Graph &graph, Node &reshape, Node &transpose) {
  MatchResult<int64_t> width = readMerge(reshape, transpose);
  if (!width)
    return width.rejection();
  RewriteBuilder builder(graph, &reshape);
  std::string base = reshape.name().empty() ? "merge" : reshape.name();
  Value *merged = nullptr;
  try {
    Value *heads = builder.create(OpKind::Transpose, {transpose.operand(0)}, base + ".heads",
                                  {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}});
    Value *batchFirst = builder.create(
        OpKind::Reshape, {heads, builder.constantI64(base + ".merge", {0, 0, *width})},
        base + ".merge");
    merged = builder.create(OpKind::Transpose, {batchFirst}, base + ".seq_first",
                            {{"perm", Attribute(kSwapOuter)}});
    if (reshape.result(0)->shape().rank() == 2)
      merged = builder.create(OpKind::Reshape,
                              {merged, builder.constantI64(base + ".flat", {-1, *width})},
                              base + ".flat");
  } catch (const Error &) {
    builder.rollBack();
    return Rejection{"shape inference rejects the batch-first head merge"};
  }
  if (MatchStatus status = replaceNode(graph, builder, reshape, merged); !status)
    return status;
  eraseIfDead(graph, &transpose);
  return matched();
}

bool isPerm(const Node *node, const std::vector<int64_t> &perm) {
  return node && node->kind() == OpKind::Transpose && transposePerm(*node) == perm;
}

class BatchFirstHeads : public Pass {
public:
  std::string_view name() const override { return "batch-first-heads"; }
  std::string_view description() const override {
    return "rewrite sequence-first head splits and merges (torch's nn.MultiheadAttention) into "
           "the batch-first ones fuse-attention matches";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("splits", 0);
    context.count("merges", 0);
    bool changed = false;
    // Splits first: a merge candidate is a Reshape, which a split erases.
    for (Node *transpose : graph.nodesOfKind(OpKind::Transpose)) {
      Node *reshape = definedBy(transpose->operand(0), OpKind::Reshape);
      if (!reshape || !(isPerm(transpose, {1, 2, 0, 3}) || isPerm(transpose, {1, 2, 3, 0})))
        continue;
      changed |= tally(context, *transpose, rewriteSplit(graph, *transpose, *reshape), "splits");
    }
    for (Node *reshape : graph.nodesOfKind(OpKind::Reshape)) {
      Node *transpose = definedBy(reshape->operand(0), OpKind::Transpose);
      if (!isPerm(transpose, {2, 0, 1, 3}))
        continue;
      changed |= tally(context, *reshape, rewriteMerge(graph, *reshape, *transpose), "merges");
    }
    return changed;
  }
};

} // namespace

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createBatchFirstHeadsPass() {
  return std::make_unique<attention::BatchFirstHeads>();
}

} // namespace onnxc
