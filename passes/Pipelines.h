//===- passes/Pipelines.h - The -O0 ... -O3 pass pipelines ----------------===//
#pragma once

#include "passes/PassManager.h"

#include <string>
#include <string_view>
#include <vector>

namespace onnxc {

/// The level named by `text`, what follows -O ("0" to "3"): the one check of
/// a level, for the CLI's -O, Python's opt_level and the pipeline itself.
/// Throws onnxc::Error "unknown optimization level '-O<text>': use -O0 to -O3".
int parseOptimizationLevel(const std::string &text);

/// Appends the pipeline of optimization level `level` (0 to 3) to `pm`:
///   -O0  nothing (import and verify only);
///   -O1  cleanup: fold-constants, remove-identity, simplify-casts, simplify-shapes,
///        simplify-transposes, cse, dce, to a fixed point;
///   -O2  -O1 plus the transformer fusions;
///   -O3  -O2 plus codegen-level fusion and weight pre-packing.
/// Throws onnxc::Error for a level outside 0..3.
void addOptimizationPipeline(PassManager &pm, int level);

/// Appends registered passes by name (throws onnxc::Error naming an unknown one).
void addPassesByName(PassManager &pm, const std::vector<std::string> &names);

/// Splits "a,b,,c" into {"a", "b", "c"}.
std::vector<std::string> splitPassList(std::string_view list);

/// Rounds of the cleanup group before giving up on a fixed point: each round
/// exposes only what the previous one created, so more than a few means a
/// pass keeps undoing another.
constexpr unsigned kCleanupRounds = 4;

} // namespace onnxc
