//===- passes/attention/LiftBatchedHeads.cpp - Heads out of the batch, into 4-D ---===//
//
// torch's nn.MultiheadAttention and the HF models copied from BART (BART,
// Whisper, CLIP, Marian, ...) compute attention with the heads folded into
// the batch: [b*h, S, d] operands, batched MatMuls, a [b*h, Sq, Sk] Softmax.
// fuse-attention matches one form, [b, h, S, d]; rather than a second
// matcher, this pass rewrites the folded core into that form:
//
//   %s = MatMul(%q3, %kt3)           [b*h, Sq, Sk]
//   ... masks and scales (Add, Sub, Mul, Div, Where; BART's Reshape to
//       [b, h, Sq, Sk] around its Add) ...
//   %p = Softmax(%s) {axis = -1}
//   %o3 = MatMul(%p, %v3)            [b*h, Sq, dv]
//
// becomes the same ops on [b, h, ., .] tensors, followed by one Reshape of
// the result back to [b*h, Sq, dv] for its users. The 4-D operands are read
// from the plumbing that folded them, so that fuse-attention sees the split
// heads it knows and reads the projections in place:
//
//   %q3 = Reshape(%q4 [b, h, S, d])                      (BART)   -> %q4
//   %q3 = Transpose(Reshape(%p [S, b, h*d] -> [S, b*h, d]))
//                             {perm = [1, 0, 2]}         (torch)  ->
//         Transpose(Reshape(%p -> [S, b, h, d])) {perm = [1, 2, 0, 3]}
//   %kt3 = Transpose(%k3) {perm = [0, 2, 1]}                      -> Kᵀ of the 4-D K
//
// torch's head merge of the result, Transpose {[1, 0, 2]} to [Sq, b*h, dv],
// is rebuilt from the 4-D result as Transpose {[2, 0, 1, 3]} and a Reshape:
// the sequence-first merge, which batch-first-heads rewrites into the one
// fuse-attention reads (and fold-seq-first-attention folds back into the
// fused op's seq_first).
//
// and scalar scales on them are carried over. DeBERTa's XSoftmax takes its
// Softmax on the [b, h, Sq, Sk] view and zeroes the hidden probabilities
// (Where(hidden, 0, p)) before folding them back for the value MatMul:
//
//   %p4 = Softmax(Reshape(%s -> [b, h, Sq, Sk]))
//   %o3 = MatMul(Reshape(Where(%hidden, 0, %p4) -> [b*h, Sq, Sk]), %v3)
//
// is lifted the same way, the Where kept on the 4-D probabilities for
// expand-xsoftmax to read. A mask or other operand of
// rank 3 with a first dim of b*h is lifted the same way (Unsqueeze, then a
// Reshape to [-1, h, ., .]); one of rank <= 2, or with a first dim of 1,
// broadcasts to the same values in 4-D and is used as it is. The number of
// heads comes from the plumbing (or BART's Reshape of the scores); when no
// operand says it, the candidate is left alone (--explain says why). The old
// chain is left dead for dce; the cleanup after this pass merges the Reshape
// pairs the rewrite creates.
//
// This file is the pass; the matcher and the rewrite it runs on each
// candidate are split one step per file (LiftBatchedHeadsLifter.h lists
// them).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/attention/LiftBatchedHeadsLifter.h"

namespace onnxc::lift {

namespace {

class LiftBatchedHeads : public Pass {
public:
  std::string_view name() const override { return "lift-batched-heads"; }
  std::string_view description() const override {
    return "rewrite attention with heads folded into the batch ([b*h, S, d], as "
           "nn.MultiheadAttention and BART write it) into the [b, h, S, d] form fuse-attention "
           "matches";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("lifted", 0);
    bool changed = false;
    // Softmaxes first: a lift erases the value MatMul and the head merge
    // after its Softmax, which a snapshot of every node would still hold.
    for (Node *node : graph.nodesOfKind(OpKind::Softmax)) {
      if (!node->result(0)->hasUses())
        continue;
      // A 4-D Softmax is fuse-attention's form unless its probabilities are
      // folded back into the batch (DeBERTa): only those are candidates.
      bool folded = hasRank(node->result(0), 4) && foldAfterSoftmax(graph, *node, nullptr);
      if (!hasRank(node->result(0), 3) && !folded)
        continue;
      if (MatchStatus lifted = Lifter(graph, *node).run(); !lifted) {
        context.reject(*node, lifted.rejection().reason);
        continue;
      }
      context.count("lifted");
      changed = true;
    }
    // The lifted core is created just before the value MatMul, but a Shape
    // node moved onto a lifted value (DeBERTa measures its zeroed
    // probabilities to fold them back) may come earlier, between the old
    // value and that MatMul: the sort pulls the lifted nodes up to it.
    if (changed)
      graph.sortTopologically();
    return changed;
  }
};

} // namespace

} // namespace onnxc::lift

namespace onnxc {

std::unique_ptr<Pass> createLiftBatchedHeadsPass() {
  return std::make_unique<lift::LiftBatchedHeads>();
}

} // namespace onnxc
