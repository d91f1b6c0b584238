//===- runtime/ExecutionPlan.h - Everything a run derives from the symbols -===//
//
// Buffer sizes, the arena layout, task counts and output dims depend only on
// the symbol values, so a session computes them once per distinct binding
// and a run with already-seen shapes reuses them without planning anything.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::runtime {

struct ExecutionPlan {
  std::vector<int64_t> symbols;     ///< The binding this plan is for (the cache key).
  std::vector<size_t> bufferBytes;  ///< Per descriptor buffer.
  std::vector<size_t> arenaOffsets; ///< Per descriptor buffer; intermediates only.
  size_t arenaBytes = 0;            ///< Arena the intermediates need.
  size_t intermediateBytes = 0;     ///< Their sum without sharing, for reports.
  std::vector<int64_t> taskCounts;  ///< Per step.
  std::vector<int64_t> outputDims;  ///< num_outputs x ONNXC_MAX_RANK.
  std::vector<size_t> outputBytes;  ///< Per output: its buffer's size.
};

/// Evaluates a checked descriptor for `symbols` into `plan`. Returns "" on
/// success, else one line (a size that overflows, a negative dim).
std::string buildExecutionPlan(const onnxc_model_descriptor &model, const int64_t *symbols,
                               ExecutionPlan &plan);

} // namespace onnxc::runtime
