//===- passes/Pipelines.cpp - The -O0 ... -O3 pass pipelines --------------===//
#include "passes/Pipelines.h"

#include "ir/Error.h"
#include "passes/PassRegistry.h"

namespace onnxc {

namespace {
// Folding exposes identities and duplicates, merging exposes dead nodes, and
// removing dead nodes can leave more to fold, hence the fixed point.
void addCleanup(PassManager &pm) {
  std::vector<std::unique_ptr<Pass>> group;
  for (const char *name : {"fold-constants", "remove-identity", "cse", "dce"})
    group.push_back(createPass(name));
  pm.addFixedPointGroup(std::move(group), kCleanupRounds);
}
} // namespace

void addOptimizationPipeline(PassManager &pm, int level) {
  if (level < 0 || level > 3)
    fail("optimization level -O", level, " does not exist (use -O0 to -O3)");
  if (level == 0)
    return;
  addCleanup(pm);
  // -O2 and -O3 are -O1 for now. The transformer fusions (attention,
  // layer norm, gelu, elementwise groups) of a later issue join at -O2,
  // followed by another cleanup round; -O3 adds codegen-level fusion and
  // weight pre-packing once codegen exists.
}

void addPassesByName(PassManager &pm, const std::vector<std::string> &names) {
  for (const std::string &name : names)
    pm.addPass(name);
}

std::vector<std::string> splitPassList(std::string_view list) {
  std::vector<std::string> names;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string_view::npos)
      comma = list.size();
    if (comma > start)
      names.emplace_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return names;
}

} // namespace onnxc
