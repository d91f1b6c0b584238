//===- passes/attention/SplitPackedQkv.cpp - A packed qkv as three head splits ---===//
//
// ViT (timm) projects Q, K and V with one MatMul and splits the heads of
// all three at once:
//
//   %r = Reshape(%qkv [b, S, k*h*d]) -> [b, S, k, h, d]
//   %t = Transpose(%r) {perm = [2, 0, 3, 1, 4]}          [k, b, h, S, d]
//   %q = Gather(%t, i) {axis = 0}                        [b, h, S, d], i a constant
//
// fuse-attention reads one form of head split, the one of a projection of
// its own; rather than a branch in its matcher, this pass rewrites each such
// Gather into that form, on the i-th slice of the packed last axis:
//
//   %p = Slice(%qkv, [i*h*d], [(i+1)*h*d], axes = [2])  [b, S, h*d]
//   %q = Transpose(Reshape(%p -> [b, S, h, d])) {perm = [0, 2, 1, 3]}
//
// Both hold qkv[b, s, i*h*d + j*d + e] at [b, j, s, e], so the rewrite is
// exact whatever reads %q. A Kᵀ the graph takes of the Gather's result
// stays a Transpose of the new K, which simplify-transposes merges into the
// [0, 2, 3, 1] Kᵀ fuse-attention reads; its 3-D Attention then reads the
// slices in place. A Gather of that Transpose whose plumbing is not the
// packed split is left alone (--explain says why). The old chain is left for
// dce.
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
using match::scalarConstant;
using match::tally;
using match::transposePerm;

/// One head split taken out of a packed projection.
struct PackedPart {
  Value *packed = nullptr; // [b, S, parts*heads*size]
  int64_t index = 0, heads = 0, size = 0;
};

/// The constant dims [k, h, d] that Reshape(P [b, S, k*h*d]) splits P's
/// last axis into, keeping b and S: P and them, or why not.
MatchResult<PackedPart> readPackedSplit(Node &reshape, int64_t &parts) {
  const Shape &in = reshape.operand(0)->shape(), &out = reshape.result(0)->shape();
  if (!in.isRanked() || !out.isRanked() || in.rank() != 3 || out.rank() != 5)
    return Rejection{"the packed heads are not split from a 3-D projection into 5-D"};
  if (!in[0].provablyEqual(out[0]) || !in[1].provablyEqual(out[1]))
    return Rejection{"the packed head split does not keep batch and sequence"};
  std::optional<int64_t> k = out[2].constant(), h = out[3].constant(), d = out[4].constant();
  std::optional<int64_t> channels = in[2].constant();
  if (!k || !h || !d || !channels || *channels != *k * *h * *d)
    return Rejection{"the packed head split is not of a constant last axis into k*h*d"};
  parts = *k;
  return PackedPart{reshape.operand(0), 0, *h, *d};
}

/// Gather(Transpose(Reshape(qkv -> [b, S, k, h, d])) {perm = [2, 0, 3, 1,
/// 4]}, i) {axis = 0}: the part it takes, or why it is not one.
MatchResult<PackedPart> matchPackedPart(Node &gather) {
  Node *transpose = definedBy(gather.operand(0), OpKind::Transpose);
  Node *reshape = definedBy(transpose->operand(0), OpKind::Reshape);
  if (!reshape)
    return Rejection{"the packed heads are not split by a Reshape"};
  int64_t parts = 0;
  MatchResult<PackedPart> part = readPackedSplit(*reshape, parts);
  if (!part)
    return part.rejection();
  std::optional<double> index = scalarConstant(gather.operand(1));
  if (gather.getInt("axis", 0) != 0 || !index || gather.operand(1)->shape().rank() != 0 ||
      !isInteger(gather.operand(1)->dtype()))
    return Rejection{"the Gather does not take one constant part of the packed heads"};
  if (*index < 0 || *index >= double(parts))
    return Rejection{"the Gather's index is outside the packed parts"};
  part->index = int64_t(*index);
  return part;
}

/// The part as the ordinary head split of its slice of the packed axis.
Value *splitPart(RewriteBuilder &builder, const PackedPart &part, const std::string &base) {
  int64_t width = part.heads * part.size;
  Value *sliced =
      builder.create(OpKind::Slice,
                     {part.packed, builder.constantI64(base + ".start", {part.index * width}),
                      builder.constantI64(base + ".end", {(part.index + 1) * width}),
                      builder.constantI64(base + ".axes", {2})},
                     base + ".slice");
  Value *split =
      builder.create(OpKind::Reshape,
                     {sliced, builder.constantI64(base + ".split", {0, 0, part.heads, part.size})},
                     base + ".split");
  return builder.create(OpKind::Transpose, {split}, base + ".heads",
                        {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}});
}

/// Replaces `gather` by the head split of its part of the packed axis.
MatchStatus rewritePart(Graph &graph, Node &gather, const PackedPart &part) {
  RewriteBuilder builder(graph, &gather);
  std::string base = gather.name().empty() ? "qkv" : gather.name();
  Value *heads = nullptr;
  try {
    heads = splitPart(builder, part, base);
  } catch (const Error &) {
    builder.rollBack();
    return Rejection{"shape inference rejects the split of the packed part"};
  }
  Value *old = gather.result(0);
  if (heads->type() != old->type()) {
    builder.rollBack();
    return Rejection{"the split of the packed part differs in type from the Gather's"};
  }
  std::string name = old->name();
  graph.replaceAllUsesWith(old, heads);
  graph.eraseNode(&gather);
  graph.renameValue(heads, name);
  return matched();
}

class SplitPackedQkv : public Pass {
public:
  std::string_view name() const override { return "split-packed-qkv"; }
  std::string_view description() const override {
    return "rewrite heads gathered from a packed qkv projection (ViT) into slices of it with the "
           "head split fuse-attention matches";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("split", 0);
    bool changed = false;
    for (Node *gather : graph.nodesOfKind(OpKind::Gather)) {
      // Only a Gather of the packed layout's Transpose is a candidate.
      Node *transpose = definedBy(gather->operand(0), OpKind::Transpose);
      if (!transpose || transposePerm(*transpose) != std::vector<int64_t>{2, 0, 3, 1, 4})
        continue;
      MatchResult<PackedPart> part = matchPackedPart(*gather);
      MatchStatus status = part ? rewritePart(graph, *gather, *part) : part.rejection();
      changed |= tally(context, *gather, status, "split");
    }
    return changed;
  }
};

} // namespace

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createSplitPackedQkvPass() {
  return std::make_unique<attention::SplitPackedQkv>();
}

} // namespace onnxc
