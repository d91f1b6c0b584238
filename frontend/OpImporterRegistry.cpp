//===- frontend/OpImporterRegistry.cpp - (domain, op, opset) -> importer ----===//
#include "frontend/OpImporterRegistry.h"

#include <algorithm>
#include <cassert>

namespace onnxc {

const OpImporterRegistry &OpImporterRegistry::instance() {
  static const OpImporterRegistry registry = [] {
    OpImporterRegistry r;
    registerElementwiseImporters(r);
    registerReductionImporters(r);
    registerMovementImporters(r);
    registerNeuralNetImporters(r);
    registerFunctionImporters(r);
    registerQuantizationImporters(r);
    registerVisionImporters(r);
    registerNormalizationFunctionImporters(r);
    registerControlFlowImporters(r);
    registerAttentionImporters(r);
    registerCausalConvImporters(r);
    registerFlexAttentionImporters(r);
    registerLinearAttentionImporters(r);
    registerMicrosoftQuantizationImporters(r);
    registerMicrosoftNormalizationImporters(r);
    registerMicrosoftRotaryGqaImporters(r);
    registerMicrosoftBertAttentionImporters(r);
    return r;
  }();
  return registry;
}

void OpImporterRegistry::add(OpImporter importer) {
  auto &versions = entries_[{importer.domain, importer.opType}];
  assert(
      std::none_of(versions.begin(), versions.end(),
                   [&](const OpImporter &e) { return e.sinceVersion == importer.sinceVersion; }) &&
      "an op version is registered twice");
  versions.push_back(std::move(importer));
  std::sort(versions.begin(), versions.end(), [](const OpImporter &a, const OpImporter &b) {
    return a.sinceVersion < b.sinceVersion;
  });
}

void OpImporterRegistry::addOneToOne(OpKind kind, int64_t sinceVersion) {
  add({"", std::string(opName(kind)), sinceVersion, kind, importOneToOne});
}

const OpImporter *OpImporterRegistry::lookup(const std::string &domain, const std::string &opType,
                                             int64_t opset) const {
  auto it = entries_.find({domain, opType});
  if (it == entries_.end())
    return nullptr;
  const OpImporter *best = nullptr;
  for (const OpImporter &entry : it->second)
    if (entry.sinceVersion <= opset)
      best = &entry;
  return best;
}

void importOneToOne(OnnxNode &node) { node.emit(node.kind(), node.operands(), node.attributes()); }

} // namespace onnxc
