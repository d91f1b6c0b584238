//===- passes/cleanup/CommonSubexpressionElimination.cpp - Merge duplicate work ---===//
//
//   %a = Shape(%x)                          %a = Shape(%x)
//   %b = Shape(%x)              ==>         %s = Add(%a, %a)
//   %s = Add(%a, %b)
//
// Two nodes with the same op, the same operands (in any order for
// commutative ops) and equal attributes compute the same thing: uses of the
// later one's results go to the earlier one's. Small constants (at most 64
// elements) with identical type and bytes are merged first, so that nodes
// reading duplicated constants merge too. Dropout is never merged: in
// training mode it is random.
//
//===----------------------------------------------------------------------===//
#include "passes/Pass.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string_view>
#include <unordered_map>

namespace onnxc {

namespace {

constexpr int64_t kMaxMergedConstantElements = 64;

void hashCombine(size_t &seed, size_t value) {
  seed ^= value + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

bool isCommutative(OpKind kind) {
  switch (kind) {
  case OpKind::Add:
  case OpKind::Mul:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::Equal:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
    return true;
  default:
    return false;
  }
}

/// Operands in the order that identifies the computation.
std::vector<Value *> canonicalOperands(const Node &node) {
  std::vector<Value *> operands = node.operands();
  if (isCommutative(node.kind()))
    std::sort(operands.begin(), operands.end(), std::less<Value *>());
  return operands;
}

size_t hashNode(const Node &node) {
  size_t seed = std::hash<unsigned>()(unsigned(node.kind()));
  hashCombine(seed, node.numResults());
  for (Value *operand : canonicalOperands(node))
    hashCombine(seed, std::hash<Value *>()(operand));
  // Attribute names and kinds are enough to spread buckets; equality does
  // the full comparison.
  for (const auto &[name, attr] : node.attributes()) {
    hashCombine(seed, std::hash<std::string>()(name));
    hashCombine(seed, size_t(attr.kind()));
  }
  return seed;
}

bool sameComputation(const Node &a, const Node &b) {
  return a.kind() == b.kind() && a.numResults() == b.numResults() &&
         canonicalOperands(a) == canonicalOperands(b) && a.attributes() == b.attributes();
}

size_t hashTensor(const Tensor &t) {
  size_t seed = std::hash<unsigned>()(unsigned(t.dtype()));
  for (int64_t d : t.dims())
    hashCombine(seed, std::hash<int64_t>()(d));
  std::string_view bytes(static_cast<const char *>(t.rawData()), t.byteSize());
  hashCombine(seed, std::hash<std::string_view>()(bytes));
  return seed;
}

/// Merges identical small constants; returns how many were merged away.
int64_t mergeConstants(Graph &graph) {
  std::unordered_multimap<size_t, Value *> seen;
  int64_t merged = 0;
  std::vector<Value *> constants = graph.constants(); // erasing edits the list
  for (Value *constant : constants) {
    const Tensor &t = constant->constantValue();
    if (!t.hasData() || t.numElements() > kMaxMergedConstantElements)
      continue;
    size_t hash = hashTensor(t);
    auto [begin, end] = seen.equal_range(hash);
    auto match = std::find_if(begin, end, [&](const auto &entry) {
      return entry.second->constantValue().identicalTo(t);
    });
    if (match == end) {
      seen.emplace(hash, constant);
      continue;
    }
    graph.replaceAllUsesWith(constant, match->second);
    graph.eraseConstant(constant);
    ++merged;
  }
  return merged;
}

/// Merges duplicate nodes; returns how many were erased.
int64_t mergeNodes(Graph &graph) {
  std::unordered_multimap<size_t, Node *> seen;
  int64_t merged = 0;
  // Program order: the kept node always comes first, so it dominates the
  // uses it takes over.
  for (Node *node : graph.nodeList()) {
    // Regions are not compared: two Ifs on the same condition and captures
    // with different branches compute different things.
    if (node->kind() == OpKind::Dropout || node->hasSubgraphs())
      continue;
    size_t hash = hashNode(*node);
    auto [begin, end] = seen.equal_range(hash);
    auto match = std::find_if(
        begin, end, [&](const auto &entry) { return sameComputation(*entry.second, *node); });
    if (match == end) {
      seen.emplace(hash, node);
      continue;
    }
    for (size_t i = 0; i < node->numResults(); ++i)
      graph.replaceAllUsesWith(node->result(i), match->second->result(i));
    graph.eraseNode(node);
    ++merged;
  }
  return merged;
}

class CommonSubexpressionElimination : public Pass {
public:
  std::string_view name() const override { return "cse"; }
  std::string_view description() const override {
    return "merge nodes computing the same thing, and identical small constants";
  }

  bool run(Graph &graph, PassContext &context) override {
    int64_t constants = mergeConstants(graph);
    int64_t nodes = mergeNodes(graph);
    context.count("merged", nodes);
    if (constants)
      context.count("constants merged", constants);
    return nodes + constants > 0;
  }
};

} // namespace

std::unique_ptr<Pass> createCommonSubexpressionEliminationPass() {
  return std::make_unique<CommonSubexpressionElimination>();
}

} // namespace onnxc
