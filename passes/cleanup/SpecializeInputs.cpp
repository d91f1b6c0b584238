//===- passes/cleanup/SpecializeInputs.cpp - Build given input values in -===//
#include "passes/cleanup/SpecializeInputs.h"

#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"

#include <set>

namespace onnxc {

bool hasDataDependentShapes(const Graph &graph) {
  std::set<std::string> bound;
  for (const Value *input : graph.inputs())
    for (size_t axis = 0; axis < input->shape().rank(); ++axis)
      if (input->shape()[axis].isSymbol())
        bound.insert(input->shape()[axis].symbolName());
  auto dependent = [&](const Value *value) {
    if (!value->shape().isRanked())
      return true;
    for (size_t axis = 0; axis < value->shape().rank(); ++axis) {
      const Dim &d = value->shape()[axis];
      if (d.isUnknown())
        return true;
      for (const std::string &symbol : d.symbols())
        if (!bound.count(symbol))
          return true;
    }
    return false;
  };
  for (const Node *node : graph.topologicalOrder())
    for (const Value *result : node->results())
      if (dependent(result))
        return true;
  return false;
}

namespace {

/// Decides the graph's shape assumptions over `bindings` now: a refuted one
/// is an error, a proven one is dropped, the others keep their remaining
/// symbols.
void bindAssumptions(Graph &graph, const std::map<std::string, int64_t> &bindings) {
  std::vector<ShapeAssumption> kept;
  for (const ShapeAssumption &assumption : graph.assumptions()) {
    ShapeAssumption bound = assumption;
    bound.expr = assumption.expr.substitute(bindings);
    if (bound.refuted())
      fail(assumption.message, "; the values given bind ", assumption.expr.str(), " to ",
           bound.expr.str());
    if (!bound.provable())
      kept.push_back(std::move(bound));
  }
  graph.eraseAssumptionsIf([](const ShapeAssumption &) { return true; });
  for (ShapeAssumption &assumption : kept)
    graph.addAssumption(std::move(assumption));
}

} // namespace

std::vector<std::string> specializeSmallInputs(Graph &graph,
                                               const std::map<std::string, Tensor> &inputs,
                                               int64_t maxElements) {
  std::vector<std::string> specialized;
  std::vector<Value *> candidates = graph.inputs();
  std::map<std::string, int64_t> bindings; // the symbols only specialized inputs bind
  for (Value *input : candidates) {
    auto it = inputs.find(input->name());
    if (it == inputs.end() || it->second.numElements() > maxElements)
      continue;
    const Shape &shape = input->shape();
    for (size_t axis = 0; shape.isRanked() && axis < shape.rank(); ++axis)
      if (shape[axis].isSymbol() && axis < it->second.rank())
        bindings.emplace(shape[axis].symbolName(), it->second.dims()[axis]);
    std::string name = input->name();
    Value *constant = graph.addConstant(graph.uniqueName(name + ".value"),
                                        std::make_shared<const Tensor>(it->second));
    graph.replaceAllUsesWith(input, constant);
    graph.eraseInput(input);
    specialized.push_back(name);
  }
  // Assumptions over the specialized inputs' symbols are decided now; the
  // rest keep the symbols that the remaining inputs bind.
  for (const Value *input : graph.inputs())
    for (size_t axis = 0; input->shape().isRanked() && axis < input->shape().rank(); ++axis)
      if (input->shape()[axis].isSymbol())
        bindings.erase(input->shape()[axis].symbolName());
  bindAssumptions(graph, bindings);
  if (!specialized.empty())
    inferShapes(graph);
  // Fold what is constant now (a Range over a specialized size computed
  // through Cast and Sub; Shape of a fixed-size input), so shapes become known.
  PassManager cleanup;
  addOptimizationPipeline(cleanup, 1);
  cleanup.run(graph);
  return specialized;
}

void specializeInputDims(Graph &graph, const std::map<std::string, Tensor> &inputs) {
  std::map<std::string, int64_t> bindings;
  for (Value *input : graph.inputs()) {
    auto it = inputs.find(input->name());
    const Shape &shape = input->shape();
    if (it == inputs.end() || !shape.isRanked() || shape.rank() != it->second.rank())
      continue;
    for (size_t axis = 0; axis < shape.rank(); ++axis)
      if (shape[axis].isSymbol())
        bindings.emplace(shape[axis].symbolName(), it->second.dims()[axis]);
  }
  if (bindings.empty())
    return;
  for (Value *input : graph.inputs()) {
    Shape shape = input->shape();
    if (!shape.isRanked())
      continue;
    for (size_t axis = 0; axis < shape.rank(); ++axis)
      shape[axis] = shape[axis].substitute(bindings);
    input->setType({input->dtype(), shape});
  }
  bindAssumptions(graph, bindings);
  inferShapes(graph);
  PassManager cleanup;
  addOptimizationPipeline(cleanup, 1);
  cleanup.run(graph);
}

} // namespace onnxc
