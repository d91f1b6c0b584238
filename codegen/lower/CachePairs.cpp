//===- codegen/lower/CachePairs.cpp - KV caches the runtime updates in place ===//
#include "codegen/lower/CachePairs.h"

#include "ir/Node.h"
#include "ir/OpAttributes.h"

#include <algorithm>
#include <set>

namespace onnxc::lower {

namespace {

/// A graph output that may share its buffer with a graph input.
struct Candidate {
  const Value *past = nullptr;
  const Value *present = nullptr;
  const Node *writer = nullptr; ///< The Concat, Attention or TensorScatter computing present.
  unsigned pastOperand = 0;     ///< Where writer reads past.
  int64_t axis = 0;
  int32_t output = 0;
};

std::optional<Candidate> candidateOf(const Graph &graph, size_t output) {
  const Value *present = graph.outputs()[output].value;
  const Node *writer = present->definingNode();
  if (!writer)
    return std::nullopt;
  Candidate c;
  c.present = present;
  c.writer = writer;
  c.output = int32_t(output);
  if (writer->kind() == OpKind::Concat && writer->numOperands() >= 1 && writer->operand(0) &&
      writer->operand(0)->isGraphInput()) {
    c.past = writer->operand(0);
    c.pastOperand = 0;
    c.axis = writer->getInt("axis", 0);
    int64_t rank = int64_t(present->shape().rank());
    if (c.axis < 0)
      c.axis += rank;
    return c;
  }
  // Opset 24's fixed-length cache: present = TensorScatter(past, update,
  // write_indices), of the past's shape.
  if (writer->kind() == OpKind::TensorScatter && writer->operand(0) &&
      writer->operand(0)->isGraphInput()) {
    c.past = writer->operand(0);
    c.pastOperand = 0;
    c.axis = writer->getInt("axis", -2);
    if (c.axis < 0)
      c.axis += int64_t(present->shape().rank());
    return c;
  }
  // The opset-23 Attention's own cache: present_key (result 1) from
  // past_key (operand 4), present_value (2) from past_value (5).
  if (writer->kind() == OpKind::Attention && present->resultIndex() >= 1 &&
      present->resultIndex() <= 2) {
    unsigned operand = present->resultIndex() + 3;
    const Value *past = writer->numOperands() > operand ? writer->operand(operand) : nullptr;
    if (!past || !past->isGraphInput())
      return std::nullopt;
    c.past = past;
    c.pastOperand = operand;
    c.axis = 2;
    return c;
  }
  return std::nullopt;
}

/// Why `c` cannot be updated in place, or "" when it can.
std::string refusal(const Graph &graph, const Candidate &c) {
  const Shape &past = c.past->shape(), &present = c.present->shape();
  if (!past.isRanked() || !present.isRanked() || past.rank() != present.rank())
    return "the past and the present differ in rank";
  if (c.axis < 0 || c.axis >= int64_t(past.rank()))
    return "the axis is out of range";
  bool scatter = c.writer->kind() == OpKind::TensorScatter;
  // A TensorScatter's cache has one length, which may be fixed; a Concat's
  // and an Attention's grows from the past's.
  if (!past[c.axis].isSymbol() && !(scatter && past[c.axis].isConstant()))
    return "the past's length " + past[c.axis].str() + " is not a symbol";
  if (scatter) {
    if (!(present[c.axis] == past[c.axis]))
      return "the TensorScatter's present is not of the past's length";
  } else if (c.writer->kind() == OpKind::Concat) {
    if (c.writer->numOperands() != 2 || !c.writer->operand(1) || c.writer->operand(1) == c.past)
      return "the Concat does not join the past with one other operand";
  } else if (past.rank() != 4) {
    return "the Attention's past is not 4-D";
  }
  if (c.past->dtype() != c.present->dtype())
    return "the past and the present differ in type";
  int outputs = 0;
  for (const GraphOutput &output : graph.outputs()) {
    if (output.value == c.present)
      ++outputs;
    if (output.value == c.past)
      return "the past is also a graph output";
  }
  if (outputs != 1)
    return "the present is returned more than once";
  // A node of an If or Loop body is lowered in a context of its own, which
  // knows nothing of the layouts: only the graph's own nodes may read them.
  for (const Value *value : {c.past, c.present})
    for (const Use &use : value->uses())
      if (use.user->graph() != &graph)
        return "the " + std::string(value == c.past ? "past" : "present") +
               " is read inside a subgraph, by " + use.user->describe();
  for (const Use &use : c.present->uses()) {
    const Node *user = use.user;
    if (user->kind() == OpKind::Shape)
      continue;
    // A 4-D Attention reads its K / V [b, heads, keys, size] with the
    // layout's rows per head (AttentionShape's k and v layouts).
    if (user->kind() == OpKind::Attention && (use.operandIndex == 1 || use.operandIndex == 2) &&
        c.axis == 2 && present.rank() == 4 && user->operand(0) &&
        user->operand(0)->shape().rank() == 4)
      continue;
    return "the present is also read by " + user->describe() + " (" + std::string(user->opName()) +
           ")";
  }
  for (const Use &use : c.past->uses()) {
    const Node *user = use.user;
    if (user->kind() == OpKind::Shape)
      continue;
    if (user == c.writer && use.operandIndex == c.pastOperand)
      continue;
    // An Attention reads its past_key / past_value [b, heads, past, size]
    // with the layout's row count (AttentionShape::pastKeyRows).
    if (user->kind() == OpKind::Attention && (use.operandIndex == 4 || use.operandIndex == 5) &&
        c.axis == 2 && past.rank() == 4)
      continue;
    return "the past is also read by " + user->describe() + " (" + std::string(user->opName()) +
           ")";
  }
  return "";
}

std::string uniqueSymbolName(const ModelPlan &plan, const std::string &base) {
  std::string name = base;
  for (int n = 2;; ++n) {
    bool taken = std::any_of(plan.symbols.begin(), plan.symbols.end(),
                             [&](const PlanSymbol &symbol) { return symbol.name == name; });
    if (!taken)
      return name;
    name = base + "_" + std::to_string(n);
  }
}

Shape withDim(const Shape &shape, int64_t axis, const Dim &dim) {
  std::vector<Dim> dims = shape.dims();
  dims[size_t(axis)] = dim;
  return Shape(std::move(dims));
}

} // namespace

std::unordered_map<const Value *, Shape> findCachePairs(const Graph &graph, ModelPlan &plan) {
  std::unordered_map<const Value *, Shape> layouts;
  // One capacity per past length symbol: the caches of all layers grow
  // together. Two symbols: the rows of the present's layout and of the
  // past's, equal when the runtime binds the two to one buffer, and the
  // present's and the past's own lengths in an ordinary run.
  std::map<std::string, std::pair<int32_t, int32_t>> capacityOf;
  std::set<const Value *> pastsTaken;
  const auto &inputs = graph.inputs();
  for (size_t o = 0; o < graph.outputs().size(); ++o) {
    std::optional<Candidate> c = candidateOf(graph, o);
    if (!c)
      continue;
    std::string why = refusal(graph, *c);
    if (why.empty() && !pastsTaken.insert(c->past).second)
      why = "the past feeds another present";
    if (!why.empty()) {
      plan.cacheNotes.push_back("cache '" + c->past->name() + "' -> '" + graph.outputs()[o].name +
                                "' keeps two buffers: " + why);
      continue;
    }
    const Dim &pastLength = c->past->shape()[c->axis];
    std::string length =
        pastLength.isSymbol() ? pastLength.symbolName() : "cache_length_" + pastLength.str();
    auto [it, added] = capacityOf.emplace(length, std::pair<int32_t, int32_t>());
    if (added) {
      it->second.first = int32_t(plan.symbols.size());
      plan.symbols.push_back({uniqueSymbolName(plan, length + "_capacity"), -1, -1});
      it->second.second = int32_t(plan.symbols.size());
      plan.symbols.push_back({uniqueSymbolName(plan, length + "_capacity_of_past"), -1, -1});
    }
    PlanCachePair pair;
    pair.input = int32_t(std::find(inputs.begin(), inputs.end(), c->past) - inputs.begin());
    pair.output = c->output;
    pair.axis = int32_t(c->axis);
    pair.capacitySymbol = it->second.first;
    pair.pastCapacitySymbol = it->second.second;
    plan.cachePairs.push_back(pair);
    layouts.emplace(c->past, withDim(c->past->shape(), c->axis,
                                     Dim::symbol(plan.symbols[pair.pastCapacitySymbol].name)));
    layouts.emplace(c->present, withDim(c->present->shape(), c->axis,
                                        Dim::symbol(plan.symbols[pair.capacitySymbol].name)));
  }
  return layouts;
}

} // namespace onnxc::lower
