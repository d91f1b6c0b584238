//===- passes/PassRegistry.cpp - The table of passes ----------------------===//
#include "passes/PassRegistry.h"

#include "ir/Error.h"

#include <algorithm>

namespace onnxc {

namespace {
// The one table. Names and descriptions come from the passes themselves, so
// they are written once; add a factory here to make a pass available to
// --passes=, --print-ir-after= and --help.
constexpr PassFactory kPassFactories[] = {
    createWidenHalfPrecisionPass,
    createFoldConstantsPass,
    createInlineConstantIfPass,
    createFoldChannelAffinePass,
    createRemoveIdentityPass,
    createSimplifyCastsPass,
    createSimplifyShapesPass,
    createSimplifyTransposesPass,
    createCommonSubexpressionEliminationPass,
    createDeadCodeEliminationPass,
    createFuseGeluPass,
    createFuseLayerNormPass,
    createFuseRmsNormPass,
    createFuseSkipLayerNormPass,
    createLiftBatchedHeadsPass,
    createSplitPackedQkvPass,
    createBatchFirstHeadsPass,
    createGroupRepeatedKvPass,
    createGroupAttentionKvPass,
    createExpandXSoftmaxPass,
    createFuseAttentionPass,
    createFoldSeqFirstAttentionPass,
    createFuseAdditiveAttentionPass,
    createFuseDynamicQuantizedMatMulPass,
    createFuseStaticQuantizedMatMulPass,
    createFuseBlockQuantizedMatMulPass,
    createFuseStaticQuantizedConvPass,
    createSinkDequantizePass,
    createExpandFakeQuantizePass,
};
} // namespace

const std::vector<PassInfo> &registeredPasses() {
  static const std::vector<PassInfo> table = [] {
    std::vector<PassInfo> out;
    for (PassFactory factory : kPassFactories) {
      std::unique_ptr<Pass> pass = factory();
      out.push_back({std::string(pass->name()), std::string(pass->description()), factory});
    }
    return out;
  }();
  return table;
}

const PassInfo *findPass(std::string_view name) {
  for (const PassInfo &info : registeredPasses())
    if (info.name == name)
      return &info;
  return nullptr;
}

std::unique_ptr<Pass> createPass(std::string_view name) {
  if (const PassInfo *info = findPass(name))
    return info->create();
  std::string known;
  for (const PassInfo &info : registeredPasses())
    known += (known.empty() ? "" : ", ") + info.name;
  fail("unknown pass '", name, "' (known passes: ", known, ")");
}

std::string passListing() {
  size_t width = 0;
  for (const PassInfo &info : registeredPasses())
    width = std::max(width, info.name.size());
  std::string out;
  for (const PassInfo &info : registeredPasses())
    out +=
        "  " + info.name + std::string(width - info.name.size() + 2, ' ') + info.description + "\n";
  return out;
}

} // namespace onnxc
