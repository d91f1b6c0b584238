//===- codegen/ShapeSpecialization.cpp - Compile for given input values ---===//

#include "codegen/ShapeSpecialization.h"

#include "codegen/ModelCompiler.h"
#include "ir/Error.h"
#include "ir/infer/ShapeInference.h"
#include "passes/PassManager.h"
#include "passes/Pipelines.h"

#include <algorithm>
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

std::vector<std::string> specializeSmallInputs(Graph &graph,
                                               const std::map<std::string, Tensor> &inputs,
                                               int64_t maxElements) {
  std::vector<std::string> specialized;
  std::vector<Value *> candidates = graph.inputs();
  for (Value *input : candidates) {
    auto it = inputs.find(input->name());
    if (it == inputs.end() || it->second.numElements() > maxElements)
      continue;
    std::string name = input->name();
    Value *constant = graph.addConstant(graph.uniqueName(name + ".value"),
                                        std::make_shared<const Tensor>(it->second));
    graph.replaceAllUsesWith(input, constant);
    graph.eraseInput(input);
    specialized.push_back(name);
  }
  if (!specialized.empty())
    inferShapes(graph);
  // Fold what is constant now (a Range over a specialized size computed
  // through Cast and Sub; Shape of a fixed-size input), so shapes become known.
  PassManager cleanup;
  addOptimizationPipeline(cleanup, 1);
  cleanup.run(graph);
  return specialized;
}

namespace {

/// Specializes, then compiles; an error names the inputs whose values were
/// built in, since they (not the model) may be what is wrong.
std::vector<std::string> specializeAndCompile(Graph &graph,
                                              const std::map<std::string, Tensor> &inputs,
                                              const std::function<void(const Graph &)> &compile) {
  std::vector<std::string> specialized;
  try {
    specialized = specializeSmallInputs(graph, inputs);
    compile(graph);
  } catch (const Error &error) {
    std::vector<std::string> names;
    for (const Value *input : graph.inputs())
      names.push_back(input->name());
    std::string given;
    for (const auto &[name, tensor] : inputs)
      if (std::find(names.begin(), names.end(), name) == names.end())
        given += (given.empty() ? "'" : ", '") + name + "'";
    if (given.empty())
      throw;
    fail("with the values given for input", given.find(',') == std::string::npos ? " " : "s ",
         given, " built in: ", error.what());
  }
  return specialized;
}

} // namespace

std::vector<std::string> compileForInputs(Graph &graph, const std::map<std::string, Tensor> &inputs,
                                          const std::function<void(const Graph &)> &compile) {
  if (hasDataDependentShapes(graph))
    return specializeAndCompile(graph, inputs, compile);
  try {
    compile(graph);
    return {};
  } catch (const Error &firstError) {
    try {
      return specializeAndCompile(graph, inputs, compile);
    } catch (const Error &) {
      throw firstError;
    }
  }
}

InputSpecificJit compileForInputs(Graph &graph, const std::map<std::string, Tensor> &inputs,
                                  const TargetSelection &target) {
  InputSpecificJit result;
  result.specialized = compileForInputs(
      graph, inputs, [&](const Graph &g) { result.model = compileModelJit(g, target); });
  return result;
}

} // namespace onnxc
