//===- codegen/CompilableShapes.cpp - Shapes a compiled model can run with -===//
#include "codegen/CompilableShapes.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "onnxc/onnxc.h"

namespace onnxc {

namespace {

void checkNoNegativeDim(const Value &value, const char *role) {
  const Shape &shape = value.shape();
  if (!shape.isRanked())
    return;
  for (size_t axis = 0; axis < shape.rank(); ++axis) {
    std::optional<int64_t> size = shape[axis].constant();
    if (size && *size < 0)
      fail(role, " '", value.name(), "' (", value.type().str(), "): dimension ", axis, " is ",
           *size, "; a dimension cannot be negative");
  }
}

/// Inputs and outputs cross the C API as onnxc_tensor, whose dims array
/// holds ONNXC_MAX_RANK entries; intermediates never do, so any rank is
/// theirs to have.
void checkAbiRank(const Value &value, const std::string &name, const char *role) {
  const Shape &shape = value.shape();
  if (shape.isRanked() && shape.rank() > ONNXC_MAX_RANK)
    fail(role, " '", name, "' (", value.type().str(), ") has rank ", shape.rank(),
         "; a compiled model's inputs and outputs have rank at most ", ONNXC_MAX_RANK);
}

} // namespace

void checkCompilableShapes(const Graph &graph) {
  for (const Value *input : graph.inputs()) {
    checkNoNegativeDim(*input, "graph input");
    checkAbiRank(*input, input->name(), "graph input");
  }
  for (const Value *constant : graph.constants())
    checkNoNegativeDim(*constant, "constant");
  for (const auto &node : graph.nodes())
    for (const Value *result : node->results())
      checkNoNegativeDim(*result, "value");
  for (const GraphOutput &output : graph.outputs())
    if (output.value)
      checkAbiRank(*output.value, output.name, "graph output");
}

} // namespace onnxc
