//===- passes/fusion/FuseSkipLayerNorm.cpp - Residual Add + LayerNorm -> one op ---===//
//
// A transformer block's residual connection feeds a LayerNorm:
//
//   post-LN (BERT):  %s = Add(%x, %sublayer)      pre-LN (GPT):  %s = Add(%x, %sublayer)
//                    %y = LayerNormalization(%s)                 %y = LayerNormalization(%s)
//                                                                ... Add(%s, %next) ...
//
// and both become
//
//   %y[, %s] = SkipLayerNormalization(%x, %sublayer, γ, [β]) {axis = -1, epsilon}
//
// with the sum as a second result only when something else reads it (pre-LN:
// the residual stream goes on). The sum and the normalization then take one
// pass over each row instead of two kernels. Candidates are LayerNorms
// whose input is an Add; one is rejected (counted, --explain says why)
// when the Add broadcasts (x and skip must both have the LayerNorm input's
// shape), when the LayerNorm is over more than the last axis, reads its
// Mean/InvStdDev results, or is not f32 with per-channel γ/β (what the
// compiled kernel takes).
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/fusion/NormalizationMatch.h"

namespace onnxc {

using namespace normmatch;

namespace {

bool isF32PerChannel(const Value *operand, const Shape &x) {
  return !operand || (operand->dtype() == DType::F32 && isPerChannel(operand, x));
}

/// Whether `norm` (a LayerNormalization of an Add) can absorb the Add, or
/// why not.
MatchStatus checkCandidate(const Graph &graph, const Node &norm, const Node &add) {
  const Value *sum = add.result(0);
  const Shape &shape = sum->shape();
  if (sum->dtype() != DType::F32 || !shape.isRanked() || shape.rank() == 0)
    return Rejection{"the residual sum is not an f32 tensor of known rank"};
  int64_t axis = norm.getInt("axis", -1);
  if (axis != -1 && axis != int64_t(shape.rank()) - 1)
    return Rejection{"the LayerNorm normalizes more than the last axis"};
  if (norm.getInt("stash_type", 1) != 1)
    return Rejection{"the LayerNorm keeps its statistics in another type than f32"};
  for (size_t i = 1; i < norm.numResults(); ++i)
    if (norm.result(i)->hasUses() || graph.isOutput(norm.result(i)))
      return Rejection{"the LayerNorm's Mean or InvStdDev result is read"};
  for (const Value *operand : add.operands())
    if (operand->dtype() != DType::F32 || !provablySameShape(operand->shape(), shape))
      return Rejection{"the residual Add broadcasts an operand"};
  if (!isF32PerChannel(norm.operand(1), shape) || !isF32PerChannel(norm.operand(2), shape))
    return Rejection{"the scale or bias is not an f32 vector of the last axis"};
  return matched();
}

/// Where the fused node goes: at the Add, so that the sum's other readers
/// (which may come before the LayerNorm) still follow their definition;
/// at the LayerNorm when γ or β is computed after the Add.
Node *insertionPoint(const Graph &graph, Node &norm, Node &add) {
  for (size_t i = 1; i < norm.numOperands(); ++i) {
    const Node *producer = norm.operand(i) ? norm.operand(i)->definingNode() : nullptr;
    if (!producer)
      continue;
    for (const auto &node : graph.nodes()) {
      if (node.get() == &add)
        break;
      if (node.get() == producer)
        producer = nullptr;
    }
    if (producer)
      return &norm;
  }
  return &add;
}

class FuseSkipLayerNorm : public Pass {
public:
  std::string_view name() const override { return "fuse-skip-layernorm"; }
  std::string_view description() const override {
    return "fold the residual Add feeding a LayerNormalization into one SkipLayerNormalization "
           "op";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("fused", 0);
    bool changed = false, needsSort = false;
    for (Node *norm : graph.nodeList()) {
      if (norm->kind() != OpKind::LayerNormalization)
        continue;
      Node *add = norm->operand(0)->definingNode();
      if (!add || add->kind() != OpKind::Add)
        continue;
      if (MatchStatus candidate = checkCandidate(graph, *norm, *add); !candidate) {
        context.reject(*norm, candidate.rejection().reason);
        continue;
      }
      Value *sum = add->result(0);
      bool keepSum = sum->numUses() > 1 || graph.isOutput(sum);
      std::vector<Value *> operands = {add->operand(0), add->operand(1), norm->operand(1)};
      if (norm->operand(2))
        operands.push_back(norm->operand(2));
      Node *position = insertionPoint(graph, *norm, *add);
      needsSort |= position == norm && keepSum;
      Node *fused = graph.createNode(OpKind::SkipLayerNormalization, operands, keepSum ? 2 : 1,
                                     norm->name(), {}, position);
      fused->setAttr("axis", int64_t(-1));
      fused->setAttr("epsilon", norm->getFloat("epsilon", 1e-5f));
      Value *y = norm->result(0);
      std::string yName = y->name(), sumName = sum->name();
      fused->result(0)->setType(y->type());
      graph.replaceAllUsesWith(y, fused->result(0));
      graph.eraseNode(norm);
      graph.renameValue(fused->result(0), yName);
      if (keepSum) {
        fused->result(1)->setType(sum->type());
        graph.replaceAllUsesWith(sum, fused->result(1));
      }
      graph.eraseNode(add);
      if (keepSum)
        graph.renameValue(fused->result(1), sumName);
      context.count("fused");
      changed = true;
    }
    // A sum read between the Add and a LayerNorm whose γ/β came later.
    if (needsSort)
      graph.sortTopologically();
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFuseSkipLayerNormPass() {
  return std::make_unique<FuseSkipLayerNorm>();
}

} // namespace onnxc
