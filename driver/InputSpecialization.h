//===- driver/InputSpecialization.h - Compile for given input values -----===//
//
// When a model's shapes follow its input contents (passes/cleanup/
// SpecializeInputs.h), the JIT compiles it for the input values at hand:
// first as it is, then, if that fails, with the small inputs built in.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"
#include "passes/cleanup/SpecializeInputs.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// Calls `compile(graph)`: as the graph is when that works; otherwise
/// (shapes follow input contents, or a lowering needs an operand's value at
/// compile time, like a training-mode Dropout ratio given as an input) after
/// specializeSmallInputs (and specializeInputDims when shapes still depend
/// on more than the inputs' dims), modifying `graph`. Returns the inputs that became
/// constants. Rethrows the first compile error when specializing does not
/// help.
std::vector<std::string> compileForInputs(Graph &graph, const std::map<std::string, Tensor> &inputs,
                                          const std::function<void(const Graph &)> &compile);

/// A JIT-compiled model for particular input values.
struct InputSpecificJit {
  std::unique_ptr<JitModel> model;
  /// Inputs that became constants (the model no longer takes them).
  std::vector<std::string> specialized;
};

/// compileForInputs with the JIT, each step told to `progress`.
InputSpecificJit compileForInputs(Graph &graph, const std::map<std::string, Tensor> &inputs,
                                  const TargetSelection &target,
                                  const ProgressCallback &progress = {});

} // namespace onnxc
