//===- passes/cleanup/SimplifyShapes.cpp - Constant targets for symbolic shapes ---===//
//
// Exported graphs compute Reshape targets at run time even when the batch
// and sequence length are the only unknowns:
//
//   %s = Shape(%x: f32[batch, seq, 64])
//   %b = Gather(%s, 0)   %n = Gather(%s, 1)
//   %t = Concat(Unsqueeze(%b), Unsqueeze(%n), [4], [16])
//   %y = Reshape(%x, %t)    : f32[batch, seq, 4, 16]
//                                          ==>  %y = Reshape(%x, [0, 0, 4, 16])
//
// Shape inference already knows the result shape; it is written back as a
// constant target (ReshapeTarget.h: constants, 0 = "the input's dim here",
// one -1), and dce removes the chain. A target that cannot be written
// exactly (two dims that are neither constant nor the input's, e.g.
// [batch*seq, 64] -> [batch, seq, 4, 16]) is left alone.
//
//   %y = Expand(%x: f32[batch, seq], %t)   : f32[batch, seq]   ==>  uses of %x
//   %y = Expand(%x: f32[batch, 1, seq], %t): f32[batch, 4, seq]
//                                          ==>  %y = Expand(%x, [1, 4, 1])
//
// An Expand to the operand's own shape is the operand; one whose result dims
// are each constant or the operand's own gets a constant target (1 keeps the
// operand's dim). Gather/Slice of Shape over constant dims, and Shape of a
// static shape, are folded by fold-constants (through the known contents of
// shape inference), so they are not repeated here.
//
// Candidates left alone are only explained (--explain), not counted: the
// pass runs in the -O1 fixed point, where a count would repeat every round.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/cleanup/ReshapeTarget.h"

namespace onnxc {

namespace {

bool hasConstantOperand(const Node &node, size_t i) {
  const Value *value = node.operand(i);
  return value && value->isConstant();
}

/// The constant Expand target giving `output` from `input`: each output dim
/// a constant, or 1 where it is provably the aligned input dim.
std::optional<std::vector<int64_t>> expressExpandTarget(const Shape &input, const Shape &output) {
  if (!input.isRanked() || !output.isRanked() || output.rank() < input.rank())
    return std::nullopt;
  std::vector<int64_t> target;
  size_t offset = output.rank() - input.rank();
  for (size_t i = 0; i < output.rank(); ++i) {
    if (std::optional<int64_t> c = output[i].constant())
      target.push_back(*c);
    else if (i >= offset && output[i].provablyEqual(input[i - offset]))
      target.push_back(1);
    else
      return std::nullopt;
  }
  return target;
}

class SimplifyShapes : public Pass {
public:
  std::string_view name() const override { return "simplify-shapes"; }
  std::string_view description() const override {
    return "constant Reshape/Expand targets from inferred symbolic shapes; drop no-op Expands";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("reshape targets", 0);
    context.count("expand targets", 0);
    context.count("expands removed", 0);
    bool changed = false;
    for (Node *node : graph.nodeList()) {
      if (node->kind() == OpKind::Reshape)
        changed |= simplifyReshape(graph, *node, context);
      else if (node->kind() == OpKind::Expand)
        changed |= simplifyExpand(graph, node, context);
    }
    return changed;
  }

private:
  static bool simplifyReshape(Graph &graph, Node &reshape, PassContext &context) {
    if (hasConstantOperand(reshape, 1) || !reshape.operand(1))
      return false;
    match::MatchResult<std::vector<int64_t>> target =
        expressReshapeTarget(reshape.operand(0)->shape(), reshape.result()->shape());
    if (!target) {
      context.explain(reshape, std::string("reshape: ") + target.rejection().reason);
      return false;
    }
    Value *constant = addIndexConstant(graph, reshape.operand(1)->name() + ".const", *target);
    reshape.setOperand(1, constant);
    // 0 in the new target means "copy the input dim".
    reshape.removeAttr("allowzero");
    context.count("reshape targets");
    return true;
  }

  static bool simplifyExpand(Graph &graph, Node *expand, PassContext &context) {
    Value *input = expand->operand(0);
    Value *result = expand->result();
    if (input && provablySameShape(input->shape(), result->shape()) &&
        input->dtype() == result->dtype()) {
      graph.replaceAllUsesWith(result, input);
      graph.eraseNode(expand);
      context.count("expands removed");
      return true;
    }
    if (!input || hasConstantOperand(*expand, 1) || !expand->operand(1))
      return false;
    std::optional<std::vector<int64_t>> target =
        expressExpandTarget(input->shape(), result->shape());
    if (!target) {
      context.explain(*expand, "expand: a result dim is neither constant nor the operand's own");
      return false;
    }
    expand->setOperand(1, addIndexConstant(graph, expand->operand(1)->name() + ".const", *target));
    context.count("expand targets");
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createSimplifyShapesPass() { return std::make_unique<SimplifyShapes>(); }

} // namespace onnxc
