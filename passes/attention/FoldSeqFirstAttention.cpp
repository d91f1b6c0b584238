//===- passes/attention/FoldSeqFirstAttention.cpp - Transposes into seq_first ---===//
//
// batch-first-heads gives fuse-attention the batch-first plumbing of
// torch's sequence-first attention, so its 3-D Attention reads and writes
// the sequence-first tensors through Transposes:
//
//   %y = Transpose(Attention(Transpose(%q [Sq, b, h*d]) {perm = [1, 0, 2]},
//                            Transpose(%k [Skv, b, ...]) {perm = [1, 0, 2]},
//                            Transpose(%v [Skv, b, ...]) {perm = [1, 0, 2]}, [%mask]))
//          {perm = [1, 0, 2]}
//
// Attention's onnxc attribute seq_first = 1 reads Q, K, V and writes Y as
// [S, b, h*d] in place, meaning the same scores otherwise (the mask is in
// the 4-D view either way), so this becomes
//
//   %y = Attention(%q, %k, %v, [%mask]) {..., seq_first = 1}
//
// and no transpose copy runs. Q's length may differ from K's and V's
// (cross-attention). An Attention that reads a KV cache, or whose result
// is read other than through one such Transpose, is left alone (--explain
// says why). The Transposes left dead are erased.
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
using match::soleUser;
using match::tally;
using match::transposePerm;

/// The Transpose {[1, 0, 2]} defining `value`, or null.
Node *swapOf(const Value *value) {
  Node *node = value ? definedBy(value, OpKind::Transpose) : nullptr;
  return node && transposePerm(*node) == std::vector<int64_t>{1, 0, 2} ? node : nullptr;
}

/// What the fold reads: the Transposes around the op.
struct Swaps {
  std::vector<Node *> inputs; // of Q, K, V
  Node *output = nullptr;
};

/// The Transposes of a 3-D Attention that seq_first can take in, or why not.
MatchResult<Swaps> matchSwaps(const Graph &graph, const Node &attention) {
  Swaps swaps;
  const char *names[] = {"Q", "K", "V"};
  for (size_t i = 0; i < 3; ++i) {
    Node *swap = swapOf(attention.operand(i));
    if (!swap)
      return Rejection::built(std::string(names[i]) + " is not a Transpose [1, 0, 2]");
    swaps.inputs.push_back(swap);
  }
  for (size_t i = 4; i < attention.numOperands(); ++i)
    if (attention.operand(i))
      return Rejection{"the op reads a KV cache"};
  for (size_t i = 1; i < attention.numResults(); ++i)
    if (attention.result(i)->hasUses() || graph.isOutput(attention.result(i)))
      return Rejection{"the op's present key, value or scores are read"};
  swaps.output = soleUser(graph, attention.result(0));
  if (!swaps.output || !swapOf(swaps.output->result(0)))
    return Rejection{"the result is read other than through one Transpose [1, 0, 2]"};
  return swaps;
}

/// Replaces the output Transpose by an Attention {seq_first = 1} reading
/// what the input Transposes read.
MatchStatus fold(Graph &graph, Node &attention, const Swaps &swaps) {
  std::vector<Value *> operands;
  for (size_t i = 0; i < attention.numOperands(); ++i)
    operands.push_back(i < 3 ? swaps.inputs[i]->operand(0) : attention.operand(i));
  std::vector<std::pair<std::string, Attribute>> attributes(attention.attributes().begin(),
                                                            attention.attributes().end());
  attributes.emplace_back("seq_first", Attribute(int64_t(1)));
  RewriteBuilder builder(graph, &attention);
  std::string base = attention.name().empty() ? "attention" : attention.name();
  Value *folded = nullptr;
  try {
    folded = builder.create(OpKind::Attention, operands, base, attributes);
  } catch (const Error &) {
    builder.rollBack();
    return Rejection{"shape inference rejects the sequence-first op"};
  }
  Value *old = swaps.output->result(0);
  if (folded->type() != old->type()) {
    builder.rollBack();
    return Rejection{"the sequence-first op differs in type from the transposed result"};
  }
  std::string name = old->name();
  graph.replaceAllUsesWith(old, folded);
  graph.eraseNode(swaps.output);
  graph.eraseNode(&attention);
  for (Node *swap : swaps.inputs)
    if (!swap->result(0)->hasUses() && !graph.isOutput(swap->result(0)))
      graph.eraseNode(swap);
  graph.renameValue(folded, name);
  return matched();
}

class FoldSeqFirstAttention : public Pass {
public:
  std::string_view name() const override { return "fold-seq-first-attention"; }
  std::string_view description() const override {
    return "fold Transposes [1, 0, 2] around a 3-D Attention into its seq_first, so it reads and "
           "writes sequence-first tensors in place";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("folded", 0);
    bool changed = false;
    for (Node *attention : graph.nodesOfKind(OpKind::Attention)) {
      // Candidates: 3-D batch-first ops with a transposed Q.
      const Shape &q = attention->operand(0)->shape();
      if (attention->getInt("seq_first", 0) != 0 || !q.isRanked() || q.rank() != 3 ||
          !swapOf(attention->operand(0)))
        continue;
      MatchResult<Swaps> swaps = matchSwaps(graph, *attention);
      MatchStatus status = swaps ? fold(graph, *attention, *swaps) : swaps.rejection();
      changed |= tally(context, *attention, status, "folded");
    }
    return changed;
  }
};

} // namespace

} // namespace onnxc::attention

namespace onnxc {

std::unique_ptr<Pass> createFoldSeqFirstAttentionPass() {
  return std::make_unique<attention::FoldSeqFirstAttention>();
}

} // namespace onnxc
