//===- driver/MergedDecoder.cpp - Optimum's merged decoder, for generation -----===//
#include "driver/MergedDecoder.h"

#include "ir/Tensor.h"
#include "passes/cleanup/SpecializeInputs.h"

#include <map>
#include <optional>
#include <string>

namespace onnxc {

bool hasCacheBranchInput(const Graph &graph) {
  for (const Value *input : graph.inputs())
    if (input->name() == kUseCacheBranch && input->dtype() == DType::Bool) {
      std::optional<int64_t> elements = input->shape().numElements().constant();
      return elements && *elements == 1;
    }
  return false;
}

bool fixCacheBranchForGeneration(Graph &graph) {
  if (!hasCacheBranchInput(graph))
    return false;
  std::vector<int64_t> dims;
  for (const Value *input : graph.inputs())
    if (input->name() == kUseCacheBranch)
      for (const Dim &dim : input->shape().dims())
        dims.push_back(*dim.constant());
  Tensor branch(DType::Bool, dims);
  branch.data<uint8_t>()[0] = 1;
  std::map<std::string, Tensor> values{{kUseCacheBranch, branch}};
  specializeSmallInputs(graph, values, /*maxElements=*/1);
  return true;
}

} // namespace onnxc
