//===- tests/node/CaseIsolation.h - Run a case in a forked child -----------===//
//
// Cases run in-process against the real kernels, so a kernel that segfaults,
// aborts on an assert or loops forever would take the whole run down. Each
// case runs in a forked child instead; the parent turns a signal into
// "crashed" and an overrun into "timed out" and carries on.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tests/node/NodeCase.h"

#include <string>

namespace onnxc::nodetest {

struct CaseOutcome {
  enum class Kind { Passed, Failed, Crashed, TimedOut };
  Kind kind = Kind::Passed;
  std::string message; // empty when passed
};

/// Runs runCase(info) in a forked child with a wall-clock limit.
CaseOutcome runCaseIsolated(const CaseInfo &info, int timeoutSeconds);

/// Runs runCase(info) in this process (for debuggers; a crash ends the run).
CaseOutcome runCaseInProcess(const CaseInfo &info);

} // namespace onnxc::nodetest
