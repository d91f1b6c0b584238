//===- tools/onnxc/ProgressLine.h - A status line for long commands -------===//
//
// `onnxc compile|bench|generate|run` of a large model spend seconds in the
// passes, lowering, LLVM and the link. On a terminal they say where they are
// in one line on stderr, redrawn in place and erased when the compile ends:
//
//   onnxc: lower 412/1630  MatMul  (3.2 s)
//
// Nothing is drawn when stderr is not a terminal (a pipe, a file, a test),
// under --quiet or --json, or while the IR is being printed. The line
// draws the driver's progress events (ir/Progress.h); a process has one
// stderr, so there is one line, which main.cpp erases before an error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Progress.h"
#include "tools/onnxc/CommandLine.h"

#include <chrono>
#include <string>
#include <vector>

namespace onnxc {

/// --quiet and --verbose (the commands that compile).
std::vector<OptionSpec> progressOptions();

class ProgressLine {
public:
  static ProgressLine &instance();

  /// Turns the line on for a command given `args`, when stderr is a
  /// terminal and nothing else writes there while it compiles.
  void configure(const ParsedArgs &args);
  /// The callback for the driver (CompileOptions::progress): empty when the
  /// line is off. It never asks to stop (Ctrl-C ends the tool).
  ProgressCallback callback();
  /// Erases the line if it is shown (before other output on the terminal).
  void clear();

private:
  void draw(const ProgressEvent &event);

  bool enabled_ = false;
  bool shown_ = false;
  CompileStage stage_ = CompileStage::Load;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point lastDraw_;
};

} // namespace onnxc
