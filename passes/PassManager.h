//===- passes/PassManager.h - Running a list of passes --------------------===//
//
// The pass manager runs passes in order, optionally repeating a group of
// cleanup passes until none changes the graph, and offers the debugging
// hooks every pass gets for free: print the IR after a pass, verify after
// each pass, statistics and explanations.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Progress.h"
#include "ir/text/Printer.h"
#include "passes/Pass.h"

#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace onnxc {

struct PassManagerOptions {
  /// Print the IR after each run of these passes (registered names).
  std::vector<std::string> printIrAfter;
  /// Print the IR after every pass.
  bool printIrAfterAll = false;
  /// Run verifyGraph and inferShapes after every pass.
  bool verifyEach = false;
  /// Collect why candidates were rejected (PassContext::explaining).
  bool explain = false;
  /// How printed IR looks.
  PrintOptions printOptions;
  /// Told the name of each pass before it runs (CompileStage::Passes); a
  /// false answer stops the pipeline there with Interrupted.
  ProgressCallback progress;
};

class PassManager {
public:
  /// Printed IR goes to `irStream` (stdout by default), each dump preceded by
  /// "// ----- IR after NAME -----". Throws onnxc::Error when printIrAfter
  /// names a pass that is not registered.
  explicit PassManager(PassManagerOptions options = {}, std::ostream *irStream = nullptr);
  ~PassManager();

  /// Appends a pass that runs once.
  void addPass(std::unique_ptr<Pass> pass);
  /// Appends a registered pass by name (throws onnxc::Error if unknown).
  void addPass(std::string_view name);
  /// Appends a group run in order, again and again, until one round changes
  /// nothing or `maxRounds` rounds have run.
  void addFixedPointGroup(std::vector<std::unique_ptr<Pass>> passes, unsigned maxRounds);

  /// Runs every pass; returns true if any changed the graph. Errors thrown by
  /// a pass or by --verify-each are rethrown prefixed with the pass name.
  bool run(Graph &graph);

  /// Pass names in pipeline order (a pass in a group appears once).
  std::vector<std::string> passNames() const;
  bool empty() const { return steps_.empty(); }

  /// Statistics of a pass that has run (null if it has not).
  const PassContext *context(std::string_view passName) const;
  /// One statisticsLine() per pass that has run, in pipeline order.
  void printStatistics(std::ostream &os) const;
  /// Every explanation recorded, one per line.
  void printExplanations(std::ostream &os) const;

private:
  struct Step {
    std::vector<std::unique_ptr<Pass>> passes;
    unsigned maxRounds = 1;
  };

  bool runPass(Pass &pass, Graph &graph);
  /// Passes in one round of every step: the progress total.
  int64_t passCount() const;
  PassContext &contextFor(const Pass &pass);
  bool shouldPrintAfter(std::string_view passName) const;

  PassManagerOptions options_;
  std::ostream *irStream_;
  std::vector<Step> steps_;
  std::vector<PassContext> contexts_; // in the order passes first ran
};

} // namespace onnxc
