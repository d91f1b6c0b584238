//===- passes/PassRegistry.h - Every pass by name -------------------------===//
//
// One table maps pass names to their descriptions and factories. The
// --passes= and --print-ir-after= flags and the --help listing all read it,
// so a pass is usable everywhere as soon as it has a line in the table.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "passes/Pass.h"

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace onnxc {

struct PassInfo {
  std::string name;
  std::string description;
  PassFactory create;
};

/// All registered passes, in table order.
const std::vector<PassInfo> &registeredPasses();
/// The entry for `name`, or null.
const PassInfo *findPass(std::string_view name);
/// Creates the named pass; throws onnxc::Error listing the known names when
/// there is no such pass.
std::unique_ptr<Pass> createPass(std::string_view name);
/// "  name  description" lines for --help, one per pass.
std::string passListing();

} // namespace onnxc
