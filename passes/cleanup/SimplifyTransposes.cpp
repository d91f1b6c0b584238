//===- passes/cleanup/SimplifyTransposes.cpp - Collapse Transpose/Reshape chains ---===//
//
//   %t = Transpose(%x) {perm = p}              ==>  %z = Transpose(%x) {perm = q}
//   %z = Transpose(%t) {perm = r}                   q[i] = p[r[i]]; nothing when
//                                                   q is the identity
//   %y = Transpose(%x) {perm = [0, 1, 2]}      ==>  uses of %x
//
//   %r = Reshape(%x, %a)                       ==>  %z = Reshape(%x, %c)
//   %z = Reshape(%r, %b)
//   %y = Reshape(%x, %t) : same shape as %x    ==>  uses of %x
//
// Two Transposes merge only when the inner one has no other use (otherwise
// both would still run); when they cancel, the outer one goes whatever the
// inner's uses. Two Reshapes merge under the same condition. The merged
// Reshape keeps the outer target when it does not depend on the input (a
// constant without 0, or with allowzero = 1); otherwise its 0 entries
// referred to the inner result, and the target is rewritten from the inferred
// shapes (ReshapeTarget.h), or the pair is left alone if it cannot be written
// exactly. Results keep their values and names, so graph outputs do not
// change; a bypassed node's output is rebound to its operand under the
// output's name. A head-splitting Reshape followed by its Transpose, as the
// attention fusion matches them, is never touched: only like ops merge.
//
// Candidates left alone are only explained (--explain), not counted: the
// pass runs in the -O1 fixed point, where a count would repeat every round.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"
#include "passes/cleanup/ReshapeTarget.h"

#include "ir/OpAttributes.h"

namespace onnxc {

namespace {

/// The node defining `value` when it is a `kind` node whose only use is one
/// operand of one node and which is not a graph output.
Node *soleUseProducer(const Graph &graph, const Value *value, OpKind kind) {
  Node *producer = value->definingNode();
  if (!producer || producer->kind() != kind || value->numUses() != 1 || graph.isOutput(value))
    return nullptr;
  return producer;
}

bool isIdentityPermutation(const std::vector<int64_t> &perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != int64_t(i))
      return false;
  return true;
}

/// Makes every use of `node`'s result a use of `replacement`, then erases it.
void bypass(Graph &graph, Node *node, Value *replacement) {
  graph.replaceAllUsesWith(node->result(), replacement);
  graph.eraseNode(node);
}

/// True when a Reshape's target gives the same result whatever the input
/// (same element count assumed): a constant with no 0 entry to copy.
bool targetIgnoresInput(const Node &reshape) {
  const Value *target = reshape.operand(1);
  if (!target || !target->isConstant() || !target->constantValue().hasData())
    return false;
  if (reshape.getInt("allowzero", 0) != 0)
    return true;
  for (int64_t d : target->constantValue().toInt64Vector())
    if (d == 0)
      return false;
  return true;
}

class SimplifyTransposes : public Pass {
public:
  std::string_view name() const override { return "simplify-transposes"; }
  std::string_view description() const override {
    return "merge Transpose pairs and Reshape pairs, drop identity Transposes and Reshapes";
  }

  bool run(Graph &graph, PassContext &context) override {
    for (const char *counter :
         {"transposes merged", "transposes removed", "reshapes merged", "reshapes removed"})
      context.count(counter, 0);
    bool changed = false;
    for (Node *node : graph.nodeList()) {
      if (node->kind() == OpKind::Transpose)
        changed |= simplifyTranspose(graph, node, context);
      else if (node->kind() == OpKind::Reshape)
        changed |= simplifyReshape(graph, node, context);
    }
    return changed;
  }

private:
  static bool simplifyTranspose(Graph &graph, Node *transpose, PassContext &context) {
    Value *input = transpose->operand(0);
    if (!input || !input->shape().isRanked())
      return false;
    size_t rank = input->shape().rank();
    std::vector<int64_t> perm = transposePermutation(*transpose, rank);
    if (isIdentityPermutation(perm)) {
      bypass(graph, transpose, input);
      context.count("transposes removed");
      return true;
    }
    Node *inner = input->definingNode();
    if (!inner || inner->kind() != OpKind::Transpose || !inner->operand(0) ||
        !inner->operand(0)->shape().isRanked())
      return false;
    std::vector<int64_t> innerPerm = transposePermutation(*inner, rank);
    std::vector<int64_t> composed(rank);
    for (size_t i = 0; i < rank; ++i)
      composed[i] = innerPerm[size_t(perm[i])];
    if (isIdentityPermutation(composed)) {
      bypass(graph, transpose, inner->operand(0));
      context.count("transposes removed");
      return true;
    }
    if (!soleUseProducer(graph, input, OpKind::Transpose)) {
      context.explain(*transpose, "transpose: the inner transpose has other uses");
      return false;
    }
    transpose->setOperand(0, inner->operand(0));
    transpose->setAttr("perm", composed);
    context.count("transposes merged");
    return true;
  }

  static bool simplifyReshape(Graph &graph, Node *reshape, PassContext &context) {
    Value *input = reshape->operand(0);
    Value *result = reshape->result();
    if (!input)
      return false;
    if (provablySameShape(input->shape(), result->shape())) {
      bypass(graph, reshape, input);
      context.count("reshapes removed");
      return true;
    }
    Node *inner = input->definingNode();
    if (!inner || inner->kind() != OpKind::Reshape || !inner->operand(0))
      return false;
    if (!soleUseProducer(graph, input, OpKind::Reshape)) {
      context.explain(*reshape, "reshape: the inner reshape has other uses");
      return false;
    }
    Value *source = inner->operand(0);
    if (!targetIgnoresInput(*reshape)) {
      match::MatchResult<std::vector<int64_t>> target =
          expressReshapeTarget(source->shape(), result->shape());
      if (!target) {
        context.explain(*reshape,
                        std::string("reshape: merged target: ") + target.rejection().reason);
        return false;
      }
      reshape->setOperand(1, addIndexConstant(graph, result->name() + ".shape", *target));
      reshape->removeAttr("allowzero");
    }
    reshape->setOperand(0, source);
    context.count("reshapes merged");
    return true;
  }
};

} // namespace

std::unique_ptr<Pass> createSimplifyTransposesPass() {
  return std::make_unique<SimplifyTransposes>();
}

} // namespace onnxc
