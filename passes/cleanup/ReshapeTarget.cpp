//===- passes/cleanup/ReshapeTarget.cpp - Constant Reshape targets from shapes ---===//
//
// Writing a result shape as a Reshape target relative to the input shape:
// constants stay constants, a symbolic dim that is the input's dim at the
// same position becomes 0 ("copy", allowzero = 0), and one dim that is
// neither becomes -1. See ReshapeTarget.h.
//
//===----------------------------------------------------------------------===//
#include "passes/cleanup/ReshapeTarget.h"

namespace onnxc {

match::MatchResult<std::vector<int64_t>> expressReshapeTarget(const Shape &input,
                                                              const Shape &output) {
  if (!input.isRanked() || !output.isRanked())
    return match::Rejection{"the input or result shape has an unknown rank"};
  std::vector<int64_t> target;
  bool inferredUsed = false;
  for (size_t i = 0; i < output.rank(); ++i) {
    const Dim &dim = output[i];
    if (std::optional<int64_t> c = dim.constant()) {
      if (*c <= 0)
        return match::Rejection{"a result dim is 0, which a target without allowzero cannot write"};
      target.push_back(*c);
    } else if (i < input.rank() && dim.provablyEqual(input[i])) {
      target.push_back(0);
    } else if (!inferredUsed) {
      inferredUsed = true;
      target.push_back(-1);
    } else {
      return match::Rejection{
          "two result dims are neither constant nor the input's dim at their position"};
    }
  }
  return target;
}

Value *addIndexConstant(Graph &graph, const std::string &base, const std::vector<int64_t> &values) {
  Tensor tensor = Tensor::fromVector<int64_t>({int64_t(values.size())}, values);
  return graph.addConstant(graph.uniqueName(base), std::move(tensor));
}

} // namespace onnxc
