//===- tools/onnxc/BenchProfile.h - Time by op of `onnxc bench --profile` ---===//
//
// After timing, `bench --profile` runs again with the runtime's per-step
// timers on and reports where a run spends its time: by op (the first word
// of each step's name: the op, or the fused group) and the slowest steps.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/CompiledSession.h"

#include <llvm/Support/JSON.h>

#include <string>
#include <utility>
#include <vector>

namespace onnxc {

/// Time per run by op, most expensive first, and every step, slowest first.
struct Profile {
  struct OpTime {
    std::string op;
    int steps = 0;
    double ms = 0;
  };
  int runs = 0;
  double totalMs = 0;
  std::vector<OpTime> byOp;
  std::vector<std::pair<double, std::string>> bySteps;
};

/// The step timers of `session` after `runs` profiled runs.
Profile collectProfile(const onnxc_model_descriptor &model, const CompiledSession &session,
                       int runs);
void printProfile(const Profile &profile);
llvm::json::Object profileJson(const Profile &profile);

} // namespace onnxc
