//===- driver/InputSpecialization.cpp - Compile for given input values ---===//
#include "driver/InputSpecialization.h"

#include "driver/Compilation.h"
#include "ir/Error.h"
#include "passes/cleanup/SpecializeInputs.h"

#include <algorithm>

namespace onnxc {

namespace {

/// Specializes, then compiles; an error names the inputs whose values were
/// built in, since they (not the model) may be what is wrong.
std::vector<std::string> specializeAndCompile(Graph &graph,
                                              const std::map<std::string, Tensor> &inputs,
                                              const std::function<void(const Graph &)> &compile) {
  std::vector<std::string> specialized;
  try {
    specialized = specializeSmallInputs(graph, inputs);
    if (hasDataDependentShapes(graph))
      specializeInputDims(graph, inputs);
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
                                  const TargetSelection &target, const ProgressCallback &progress) {
  InputSpecificJit result;
  result.specialized = compileForInputs(
      graph, inputs, [&](const Graph &g) { result.model = compileJit(g, target, progress); });
  return result;
}

} // namespace onnxc
