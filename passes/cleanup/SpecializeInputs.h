//===- passes/cleanup/SpecializeInputs.h - Build given input values in ---===//
//
// Compiled code needs every shape known from the inputs' dims. Some graphs
// compute shapes from input *contents* instead (a Reshape whose target shape
// is a graph input, Range over input scalars, Slice with input starts): the
// reference evaluator follows them at run time, the AOT compiler refuses
// them, and the JIT, which has the inputs at hand, specializes: small graph
// inputs become constants with the given values, shapes are re-inferred and
// the graph is cleaned up at -O1, and what is compiled from it is valid for
// those values only. These are the graph edits; driver/InputSpecialization.h
// decides when to make them.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"
#include "ir/Tensor.h"

#include <map>
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

} // namespace onnxc
