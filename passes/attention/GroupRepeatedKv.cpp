//===- passes/attention/GroupRepeatedKv.cpp - Repeated KV heads in one spelling ---===//
//
// Grouped-query attention gives g KV heads to h = g*n query heads, and the
// exporters' graphs repeat each KV head n times to fill [b, h, S, d]. HF
// LLaMA's repeat_kv writes the repeat as
//
//   %u = Unsqueeze(%x [b, g, S, d], [2])           [b, g, 1, S, d]
//   %w = Expand(%u, shape)                          [b, g, n, S, d]
//   %r = Reshape(%w) -> [b, g*n, S, d]
//
// and that is the one form fuse-attention reads (it then gives the fused op
// %x itself, with kv_num_heads = g). Other models spell the same repeat
// differently; this pass rewrites each into that form:
//
// - `x.unsqueeze(2).repeat(1, 1, n, 1, 1)`: a Tile by [1, 1, n, 1, 1] of the
//   unit axis, which is an Expand to it;
// - a Reshape to [b, g, 1, S, d] in place of the Unsqueeze;
// - the repeat taken on the projection's [b, S, g, d] before the head
//   Transpose {perm = [0, 2, 1, 3]}, unit axis 3: the Transpose then moves to
//   the unrepeated heads, and the repeat follows it (for K, the Transpose
//   may be Kᵀ's [0, 2, 3, 1]: Kᵀ is then taken of the repeat).
//
// Every spelling is read on the inferred shapes: x's dims kept, a unit axis
// inserted after the heads, n copies of it, then merged into the heads. Each
// rewrite computes the same tensor. A repeat by Tile of the heads axis
// itself (head i reads KV head i mod g, not i / n) is not this grouping and
// is left alone, as is anything whose shapes do not prove the form.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/attention/RepeatedKv.h"
#include "passes/attention/RewriteBuilder.h"

namespace onnxc::attention {

namespace {

using match::matched;
using match::MatchResult;
using match::MatchStatus;
using match::Rejection;
using match::soleUser;
using match::tally;
using match::transposePerm;

/// A repeat of x's heads read off the graph: Reshape(Expand or Tile(unit)).
struct Repeat {
  Node *merge = nullptr;  // the Reshape to [.., g*n, ..]
  Node *widen = nullptr;  // the Expand or Tile to n copies
  Node *insert = nullptr; // the Unsqueeze or Reshape inserting the unit axis
  Value *source = nullptr;
  size_t headsAxis = 0;
  int64_t copies = 0;
};

bool same(const Dim &a, const Dim &b) { return a.provablyEqual(b); }

/// Whether `widened` is `shape` with `axis` inserted, of size `size`.
bool insertsAxis(const Shape &shape, const Shape &widened, size_t axis, const Dim &size) {
  if (widened.rank() != shape.rank() + 1 || !same(widened[axis], size))
    return false;
  for (size_t i = 0; i < shape.rank(); ++i)
    if (!same(shape[i], widened[i < axis ? i : i + 1]))
      return false;
  return true;
}

/// The node inserting the unit axis after x's heads, and x.
MatchStatus readInsert(Repeat &repeat) {
  Node *insert = repeat.widen->operand(0)->definingNode();
  if (!insert || (insert->kind() != OpKind::Unsqueeze && insert->kind() != OpKind::Reshape))
    return Rejection{"the repeated heads are not widened from an Unsqueeze or Reshape"};
  const Shape &x = insert->operand(0)->shape(), &unit = insert->result(0)->shape();
  if (!x.isRanked() || !unit.isRanked() || x.rank() != 4 || repeat.headsAxis > 2)
    return Rejection{"the repeated heads are not of a 4-D tensor"};
  if (!insertsAxis(x, unit, repeat.headsAxis + 1, Dim(1)))
    return Rejection{"the repeat does not insert a unit axis after the heads"};
  repeat.insert = insert;
  repeat.source = insert->operand(0);
  return matched();
}

/// Whether `widen`, an Expand or Tile of the unit axis, makes exactly n
/// copies of it and keeps every other dim.
MatchStatus readWiden(Repeat &repeat) {
  Node *widen = repeat.widen;
  const Shape &unit = widen->operand(0)->shape(), &wide = widen->result(0)->shape();
  size_t axis = repeat.headsAxis + 1;
  if (!unit.isRanked() || !wide.isRanked() || unit.rank() != 5 || wide.rank() != 5)
    return Rejection{"the repeated heads are not widened in 5-D"};
  for (size_t i = 0; i < 5; ++i)
    if (i != axis && !same(unit[i], wide[i]))
      return Rejection{"the widening of the repeated heads changes another dim"};
  std::optional<int64_t> copies = wide[axis].constant();
  if (!copies || *copies < 1)
    return Rejection{"the number of copies of each KV head is not a constant"};
  if (widen->kind() == OpKind::Tile) {
    // A Tile must repeat the unit axis alone: other reps would copy whole
    // dims, which the shapes above already refuse unless they are ones.
    const Value *reps = widen->operand(1);
    if (!reps->isConstant() || !reps->constantValue().hasData())
      return Rejection{"the Tile's repeats are not a constant"};
    std::vector<int64_t> expected(5, 1);
    expected[axis] = *copies;
    if (reps->constantValue().toInt64Vector() != expected)
      return Rejection{"the Tile repeats more than the unit axis"};
  }
  repeat.copies = *copies;
  return matched();
}

/// Reshape(Expand or Tile(Unsqueeze or Reshape(x))) merging the copies into
/// the heads, read off `merge`; or why it is not one.
MatchResult<Repeat> readRepeat(Node &merge) {
  Repeat repeat;
  repeat.merge = &merge;
  repeat.widen = merge.operand(0)->definingNode();
  const Shape &wide = merge.operand(0)->shape(), &out = merge.result(0)->shape();
  if (!wide.isRanked() || !out.isRanked() || wide.rank() != 5 || out.rank() != 4)
    return Rejection{"the repeated heads are not merged from 5-D into 4-D"};
  // The heads axis is where the merge keeps no dim of the widened tensor.
  std::optional<size_t> heads;
  for (size_t axis : {size_t(1), size_t(2)})
    if (same(out[0], wide[0]) && (axis == 1 || same(out[1], wide[1])) &&
        same(out[axis + 1], wide[axis + 2]) && (axis == 2 || same(out[3], wide[4])))
      heads = heads ? heads : axis;
  if (!heads)
    return Rejection{"the merge of the repeated heads keeps no [b, S, d] of theirs"};
  repeat.headsAxis = *heads;
  if (MatchStatus status = readWiden(repeat); !status)
    return status.rejection();
  if (MatchStatus status = readInsert(repeat); !status)
    return status.rejection();
  std::optional<int64_t> kvHeads = repeat.source->shape()[*heads].constant();
  std::optional<int64_t> merged = out[*heads].constant();
  if (!kvHeads || !merged || *merged != *kvHeads * repeat.copies)
    return Rejection{"the merged heads are not the KV heads times the copies"};
  return repeat;
}

/// Whether `repeat` is already in repeat_kv's form.
bool isCanonical(const Repeat &repeat) {
  return repeat.headsAxis == 1 && repeat.insert->kind() == OpKind::Unsqueeze &&
         repeat.widen->kind() == OpKind::Expand;
}

/// x [b, g, S, d] repeated in repeat_kv's form, to `heads` heads.
Value *canonicalRepeat(RewriteBuilder &builder, Value *x, int64_t copies, int64_t heads,
                       const std::string &base) {
  Value *unit = builder.create(OpKind::Unsqueeze, {x, builder.constantI64(base + ".axis", {2})},
                               base + ".unit");
  // Expand broadcasts the ones against x's dims, whatever they are.
  Value *wide = builder.create(OpKind::Expand,
                               {unit, builder.constantI64(base + ".copies", {1, 1, copies, 1, 1})},
                               base + ".wide");
  auto dimsOf = [&](int64_t start, int64_t end) {
    return builder.create(OpKind::Shape, {x}, base + ".dims",
                          {{"start", Attribute(start)}, {"end", Attribute(end)}});
  };
  Value *shape = builder.create(
      OpKind::Concat, {dimsOf(0, 1), builder.constantI64(base + ".heads", {heads}), dimsOf(2, 4)},
      base + ".shape", {{"axis", Attribute(int64_t(0))}});
  return builder.create(OpKind::Reshape, {wide, shape}, base + ".repeated");
}

/// Where the canonical repeat goes: the value it replaces, the x it
/// repeats, and the transpose (if any) to take of the repeat.
struct Target {
  Value *old = nullptr, *source = nullptr;
  std::vector<int64_t> perm;
};

/// The merge itself for heads on axis 1. For heads on axis 2, the head
/// Transpose after the merge, which may also be Kᵀ (simplify-transposes
/// merges the two into [0, 2, 3, 1]): x is then transposed first and the
/// repeat, for Kᵀ, transposed after.
MatchResult<Target> rewriteTarget(const Graph &graph, RewriteBuilder &builder, const Repeat &repeat,
                                  const std::string &base) {
  if (repeat.headsAxis == 1)
    return Target{repeat.merge->result(0), repeat.source, {}};
  Node *transpose = soleUser(graph, repeat.merge->result(0));
  std::vector<int64_t> perm = transpose && transpose->kind() == OpKind::Transpose
                                  ? transposePerm(*transpose)
                                  : std::vector<int64_t>{};
  std::vector<int64_t> after;
  if (perm == std::vector<int64_t>{0, 2, 3, 1})
    after = {0, 1, 3, 2};
  else if (perm != std::vector<int64_t>{0, 2, 1, 3})
    return Rejection{"heads repeated on axis 2 are not then transposed to [b, h, S, d] or Kᵀ"};
  Value *x = builder.create(OpKind::Transpose, {repeat.source}, base + ".heads",
                            {{"perm", Attribute(std::vector<int64_t>{0, 2, 1, 3})}});
  return Target{transpose->result(0), x, after};
}

/// Replaces the repeat (and the head Transpose after it, for heads on axis
/// 2) by repeat_kv's form; the old nodes are left for dce.
MatchStatus rewriteRepeat(Graph &graph, const Repeat &repeat) {
  RewriteBuilder builder(graph, repeat.merge);
  const std::string &merged = repeat.merge->result(0)->name();
  std::string base = (merged.empty() ? "repeat_kv" : merged) + ".grouped";
  std::optional<int64_t> heads = repeat.merge->result(0)->shape()[repeat.headsAxis].constant();
  Value *old = nullptr, *repeated = nullptr;
  try {
    MatchResult<Target> target = rewriteTarget(graph, builder, repeat, base);
    if (!target) {
      builder.rollBack();
      return target.rejection();
    }
    old = target->old;
    repeated = canonicalRepeat(builder, target->source, repeat.copies, *heads, base);
    if (!target->perm.empty())
      repeated = builder.create(OpKind::Transpose, {repeated}, base + ".t",
                                {{"perm", Attribute(target->perm)}});
  } catch (const Error &) {
    builder.rollBack();
    return Rejection{"shape inference rejects repeat_kv's form of the repeat"};
  }
  if (repeated->type() != old->type()) {
    builder.rollBack();
    return Rejection{"repeat_kv's form of the repeat differs in type from it"};
  }
  std::string name = old->name();
  graph.replaceAllUsesWith(old, repeated);
  graph.renameValue(old, graph.uniqueName(name + ".spelled"));
  graph.renameValue(repeated, name);
  return matched();
}

class GroupRepeatedKv : public Pass {
public:
  std::string_view name() const override { return "group-repeated-kv"; }
  std::string_view description() const override {
    return "rewrite KV heads repeated for grouped-query attention (Tile, Reshape, before the head "
           "Transpose) into LLaMA repeat_kv's form, which fuse-attention reads";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("grouped", 0);
    bool changed = false;
    for (Node *merge : graph.nodesOfKind(OpKind::Reshape)) {
      // Only a merge of a widened 5-D tensor is a candidate.
      Node *widen = merge->operand(0)->definingNode();
      const Shape &wide = merge->operand(0)->shape();
      if (!widen || (widen->kind() != OpKind::Expand && widen->kind() != OpKind::Tile) ||
          !wide.isRanked() || wide.rank() != 5)
        continue;
      MatchResult<Repeat> repeat = readRepeat(*merge);
      if (repeat && isCanonical(*repeat))
        continue;
      MatchStatus status = repeat ? rewriteRepeat(graph, *repeat) : repeat.rejection();
      changed |= tally(context, *merge, status, "grouped");
    }
    return changed;
  }
};

} // namespace

MatchResult<RepeatedKv> readRepeatKv(const Value *value) {
  Node *merge = match::definedBy(value, OpKind::Reshape);
  Node *widen = merge ? merge->operand(0)->definingNode() : nullptr;
  if (!widen || widen->kind() != OpKind::Expand)
    return Rejection{"not a Reshape of an Expand (repeat_kv's form)"};
  MatchResult<Repeat> repeat = readRepeat(*merge);
  if (!repeat)
    return repeat.rejection();
  if (!isCanonical(*repeat))
    return Rejection{"the repeat is not in repeat_kv's form"};
  return RepeatedKv{repeat->source, repeat->copies};
}

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createGroupRepeatedKvPass() {
  return std::make_unique<attention::GroupRepeatedKv>();
}

} // namespace onnxc
