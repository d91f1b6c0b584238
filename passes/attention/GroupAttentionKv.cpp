//===- passes/attention/GroupAttentionKv.cpp - An Attention op's repeated KV heads ---===//
//
// fuse-attention groups the repeated KV heads of the graphs it fuses. An
// Attention op a model brought (ONNX Attention, onnxruntime's
// MultiHeadAttention) may still read K and V after the graph repeated them
// for grouped-query attention, as onnxruntime-genai's fp16 CPU folders do:
//
//   4-D: %k = repeat_kv(%x [b, g, S, d])                      [b, g*n, S, d]
//   3-D: %k = Reshape(Transpose(repeat_kv(%x)) {perm = [0, 2, 1, 3]})
//                                                              [b, S, g*n*d]
//
// The op groups query heads itself (head i reads KV head i / n), so it is
// given %x instead, in its 4-D form: a 3-D op's Q is split into its heads
// [b, h, S, dq] first and its result merged back from [b, h, S, dv]. The
// repeated copies are then never made, and a KV cache concatenated into %x
// is read by the attention alone, so the generator updates it in place.
// group-repeated-kv has brought every spelling of the repeat to
// repeat_kv's; K and V must repeat the same heads the same number of times.
// An op with past operands, more than one result or seq_first is left alone.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "passes/MatchSupport.h"
#include "passes/Pass.h"
#include "passes/attention/RepeatedKv.h"
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

const std::vector<int64_t> HeadSwap = {0, 2, 1, 3};

/// The repeat a 3-D operand [b, S, h*d] merges, read through the head
/// Transpose and the merge of its last two dims.
MatchResult<RepeatedKv> readMergedRepeat(const Value *operand) {
  Node *merge = definedBy(operand, OpKind::Reshape);
  Node *swap = merge ? definedBy(merge->operand(0), OpKind::Transpose) : nullptr;
  if (!swap || transposePerm(*swap) != HeadSwap)
    return Rejection{"not a merge of heads transposed to [b, S, h, d]"};
  const Shape &heads = swap->result(0)->shape(), &merged = operand->shape();
  if (!heads.isRanked() || heads.rank() != 4 || !merged.isRanked() || merged.rank() != 3 ||
      !heads[0].provablyEqual(merged[0]) || !heads[1].provablyEqual(merged[1]) ||
      !(heads[2] * heads[3]).provablyEqual(merged[2]))
    return Rejection{"the merge does not join the heads of [b, S, h, d] into [b, S, h*d]"};
  return readRepeatKv(swap->operand(0));
}

/// K's and V's repeats, which must group alike.
struct Grouped {
  RepeatedKv key, value;
};

MatchResult<Grouped> readGrouped(const Node &attention, size_t rank) {
  if (attention.numOperands() > 4 || attention.numResults() != 1)
    return Rejection{"the attention has a past or more than one result"};
  if (attention.getInt("seq_first", 0) != 0)
    return Rejection{"the attention is sequence-first"};
  auto read = [&](size_t i) {
    return rank == 4 ? readRepeatKv(attention.operand(i)) : readMergedRepeat(attention.operand(i));
  };
  MatchResult<RepeatedKv> key = read(1), value = read(2);
  if (!key)
    return key.rejection();
  if (!value)
    return value.rejection();
  const Shape &k = key->source->shape(), &v = value->source->shape();
  if (key->copies != value->copies || !k[1].provablyEqual(v[1]))
    return Rejection{"K and V repeat different heads or a different number of times"};
  if (rank == 3) {
    int64_t heads = attention.getInt("q_num_heads", 0);
    std::optional<int64_t> kvHeads = k[1].constant();
    if (attention.getInt("kv_num_heads", 0) != heads || !kvHeads || *kvHeads * key->copies != heads)
      return Rejection{"the 3-D attention's heads are not the repeated KV heads"};
  }
  return Grouped{*key, *value};
}

/// The 4-D Attention reading the grouped K and V, with `attention`'s
/// attributes but the 3-D form's head counts.
Value *groupedAttention(RewriteBuilder &builder, const Node &attention, Value *q,
                        const Grouped &grouped, const std::string &base) {
  std::vector<Value *> operands = {q, grouped.key.source, grouped.value.source};
  if (attention.numOperands() > 3)
    operands.push_back(attention.operand(3));
  std::vector<std::pair<std::string, Attribute>> attributes;
  for (const auto &[name, value] : attention.attributes())
    if (name != "q_num_heads" && name != "kv_num_heads")
      attributes.emplace_back(name, value);
  return builder.create(OpKind::Attention, operands, base, attributes);
}

/// Y of a 3-D attention computed in 4-D: Q split into its heads, the result
/// merged back.
Value *groupedIn4d(RewriteBuilder &builder, const Node &attention, const Grouped &grouped,
                   const std::string &base) {
  int64_t heads = attention.requireInt("q_num_heads");
  std::optional<int64_t> qSize = grouped.key.source->shape()[3].constant();
  std::optional<int64_t> vSize = grouped.value.source->shape()[3].constant();
  if (!qSize || !vSize)
    fail("the head sizes are not constants");
  Value *split = builder.create(
      OpKind::Reshape,
      {attention.operand(0), builder.constantI64(base + ".q_heads", {0, 0, heads, *qSize})},
      base + ".q_split");
  Value *q =
      builder.create(OpKind::Transpose, {split}, base + ".q", {{"perm", Attribute(HeadSwap)}});
  Value *y = groupedAttention(builder, attention, q, grouped, base + ".grouped");
  Value *swapped =
      builder.create(OpKind::Transpose, {y}, base + ".y", {{"perm", Attribute(HeadSwap)}});
  return builder.create(OpKind::Reshape,
                        {swapped, builder.constantI64(base + ".y_heads", {0, 0, heads * *vSize})},
                        base + ".merged");
}

MatchStatus rewrite(Graph &graph, Node &attention, const Grouped &grouped, size_t rank) {
  RewriteBuilder builder(graph, &attention);
  Value *old = attention.result(0);
  std::string name = old->name(), base = (name.empty() ? "attention" : name) + ".kv";
  Value *grouped4d = nullptr;
  try {
    grouped4d = rank == 4 ? groupedAttention(builder, attention, attention.operand(0), grouped,
                                             base + ".grouped")
                          : groupedIn4d(builder, attention, grouped, base);
  } catch (const Error &) {
    builder.rollBack();
    return Rejection{"shape inference rejects the attention on the grouped K and V"};
  }
  if (grouped4d->type() != old->type()) {
    builder.rollBack();
    return Rejection{"the attention on the grouped K and V differs in type from it"};
  }
  graph.replaceAllUsesWith(old, grouped4d);
  graph.renameValue(old, graph.uniqueName(name + ".repeated"));
  graph.renameValue(grouped4d, name);
  return matched();
}

class GroupAttentionKv : public Pass {
public:
  std::string_view name() const override { return "group-attention-kv"; }
  std::string_view description() const override {
    return "give an Attention op that reads KV heads repeated for grouped-query attention the "
           "unrepeated ones (4-D), so the copies are never made and a KV cache is read in place";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("grouped", 0);
    bool changed = false;
    for (Node *attention : graph.nodesOfKind(OpKind::Attention)) {
      const Shape &q = attention->operand(0)->shape();
      size_t rank = q.isRanked() ? q.rank() : 0;
      // Only an operand made by a Reshape can be a repeat (4-D) or a merge of one (3-D).
      if ((rank != 3 && rank != 4) || !definedBy(attention->operand(1), OpKind::Reshape))
        continue;
      MatchResult<Grouped> grouped = readGrouped(*attention, rank);
      MatchStatus status =
          grouped ? rewrite(graph, *attention, *grouped, rank) : grouped.rejection();
      changed |= tally(context, *attention, status, "grouped");
      if (status)
        graph.eraseNode(attention); // read by nothing now
    }
    return changed;
  }
};

} // namespace

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createGroupAttentionKvPass() {
  return std::make_unique<attention::GroupAttentionKv>();
}

} // namespace onnxc
