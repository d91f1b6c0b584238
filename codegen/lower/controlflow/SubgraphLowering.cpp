//===- codegen/lower/controlflow/SubgraphLowering.cpp - A region lowered into its parent -===//

#include "codegen/lower/controlflow/SubgraphLowering.h"

#include "codegen/lower/OpLowerings.h"
#include "ir/Error.h"

namespace onnxc::lower {

const char *const kReferenceFallback = " (use `onnxc run --backend=ref` to evaluate this model)";

Dim byteSize(const Value *value) {
  Dim bytes(int64_t(dtypeSize(value->dtype())));
  for (const Dim &dim : value->shape().dims())
    bytes = bytes * dim;
  return bytes;
}

bool hasUnknownDim(const Shape &shape) {
  if (!shape.isRanked())
    return true;
  for (const Dim &dim : shape.dims())
    if (dim.isUnknown())
      return true;
  return false;
}

void inheritTarget(LoweringContext &inner, const LoweringContext &parent) {
  inner.setAvx2Fma(parent.hasAvx2Fma());
  inner.setGemmLanes(parent.gemmLanes());
  inner.setIntegerGemmIsa(parent.integerGemmIsa());
  inner.setBf16GemmIsa(parent.bf16GemmIsa());
}

void lowerSubgraphNodes(LoweringContext &ctx, const Graph &graph) {
  for (const Node *node : graph.topologicalOrder()) {
    if (ctx.isClaimed(*node))
      continue;
    bool used = false;
    for (const Value *result : node->results())
      used = used || (result && (result->hasUses() || graph.isOutput(result)));
    if (!used)
      continue;
    withSizeContext(node->describe(),
                    [&] { opLowerings().lowerings[unsigned(node->kind())](ctx, *node); });
    ctx.markLowered(*node);
  }
}

std::optional<std::string> unsizableValue(const Graph &graph, const std::set<std::string> &bound) {
  auto sizable = [&](const Value *value) {
    if (hasUnknownDim(value->shape()))
      return false;
    for (const Dim &dim : value->shape().dims())
      for (const std::string &symbol : dim.symbols())
        if (!bound.count(symbol))
          return false;
    return true;
  };
  for (const Node *node : graph.topologicalOrder())
    for (const Value *result : node->results())
      if (result && (result->hasUses() || graph.isOutput(result)) && !sizable(result))
        return "'" + result->name() + "' of shape " + result->shape().str();
  return std::nullopt;
}

std::optional<std::string> opsWithoutKernel(const std::vector<Node *> &order) {
  std::set<std::string> missing;
  for (const Node *node : order)
    if (!opLowerings().lowerings[unsigned(node->kind())])
      missing.insert(std::string(node->opName()));
  if (missing.empty())
    return std::nullopt;
  std::string text;
  for (const std::string &op : missing)
    text += (text.empty() ? "" : ", ") + op;
  return text;
}

} // namespace onnxc::lower
