//===- codegen/ShapeSpecialization.h - Compile for given input values -----===//
//
// Compiled code needs every shape known from the inputs' dims. Some graphs
// compute shapes from input *contents* instead (a Reshape whose target shape
// is a graph input, Range over input scalars, Slice with input starts): the
// reference evaluator follows them at run time, the AOT compiler refuses
// them, and the JIT, which has the inputs at hand, specializes: small graph
// inputs become constants with the given values, shapes are re-inferred, and
// the compiled model is only valid for those values.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// Whether some value's shape is not determined by the graph inputs' dims:
/// an unknown dim, or a symbol that is not a whole dim of any input.
bool hasDataDependentShapes(const Graph &graph);

/// Turns every graph input with at most `maxElements` elements into a
/// constant holding its value in `inputs`, re-infers shapes and cleans the
/// graph up at -O1 (constant folding). Returns the names of the inputs that
/// became constants (they are no longer inputs).
std::vector<std::string> specializeSmallInputs(Graph &graph,
                                               const std::map<std::string, Tensor> &inputs,
                                               int64_t maxElements = 64);

/// Fixes the symbolic dims of the graph inputs to those of the given values
/// and re-infers shapes: for sizes no polynomial of the dims expresses (a
/// stride-2 pool under ceil_mode, a resize by 1.5), which become constants.
void specializeInputDims(Graph &graph, const std::map<std::string, Tensor> &inputs);

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

/// compileForInputs with the JIT.
InputSpecificJit compileForInputs(Graph &graph, const std::map<std::string, Tensor> &inputs,
                                  const TargetSelection &target);

} // namespace onnxc
