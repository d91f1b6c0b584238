//===- codegen/lower/elementwise/ElementwiseFusion.cpp - Elementwise chains, one kernel -===//

#include "codegen/lower/elementwise/ElementwiseFusion.h"

#include "codegen/lower/elementwise/ElementwiseOps.h"

#include <cctype>

namespace onnxc::lower {

namespace {

/// The one node using `value` (at one or more operands), or null when it
/// has no use, several users, or is a graph output.
const Node *soleUser(const LoweringContext &context, const Value *value) {
  if (context.graph().isOutput(value) || !value->hasUses())
    return nullptr;
  const Node *user = value->uses().front().user;
  for (const Use &use : value->uses())
    if (use.user != user)
      return nullptr;
  return user;
}

/// Whether `next` can join a group whose current result is `value`.
bool canAbsorb(const LoweringContext &context, const Value *value, const Node &next) {
  if (!isElementwiseOp(next.kind()) || context.isClaimed(next) ||
      !elementwiseUnsupportedReason(next).empty())
    return false;
  const Value *result = next.result(0);
  if (!result->hasUses() && !context.graph().isOutput(result))
    return false; // dead: the driver skips it, so should we
  if (result->shape() != value->shape())
    return false;
  for (size_t i = 0; i < next.numOperands(); ++i) {
    const Value *operand = next.operand(i);
    if (operand == value) {
      // CastLike reads only its second operand's dtype: keep it simple.
      if (next.kind() == OpKind::CastLike && i == 1)
        return false;
      continue;
    }
    if (operand && !context.isAvailable(operand))
      return false;
  }
  return true;
}

} // namespace

std::string ElementwiseGroup::stepName() const {
  // "Div+Erf+Add+Mul /layers.1/Div /layers.1/Erf ...": the ops first, as
  // one word, so profiles group fused chains by what they compute.
  std::string ops, names;
  for (const Node *node : nodes) {
    ops += (ops.empty() ? "" : "+") + std::string(node->opName());
    if (!node->name().empty())
      names += " " + node->name();
  }
  return ops + names;
}

std::string ElementwiseGroup::kernelName() const {
  std::string name = "ew";
  for (size_t i = 0; i < nodes.size() && i < 6; ++i) {
    name += '.';
    for (char c : nodes[i]->opName())
      name += char(std::tolower(static_cast<unsigned char>(c)));
  }
  if (nodes.size() > 6)
    name += ".etc";
  return name;
}

ElementwiseGroup formElementwiseGroup(LoweringContext &context, const Node &first) {
  ElementwiseGroup group;
  group.nodes.push_back(&first);
  while (group.nodes.size() < kMaxFusedNodes) {
    const Value *value = group.result();
    const Node *next = soleUser(context, value);
    if (!next || !canAbsorb(context, value, *next))
      break;
    context.claim(*next);
    group.nodes.push_back(next);
  }
  return group;
}

} // namespace onnxc::lower
