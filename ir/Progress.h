//===- ir/Progress.h - What a long compile reports as it goes -------------===//
//
// Compiling a large model takes seconds to minutes: loading, the passes,
// lowering node by node, LLVM's optimizer and code generator, linking. Each
// of those reports its steps to one callback (CompileOptions::progress in
// driver/Compilation.h), which the tool draws as a status line and Python
// as a tqdm bar. The callback also answers whether to go on: a false answer
// (Ctrl-C in Python) stops the compile at its next step, which throws
// Interrupted after removing what it had started to write.
//
// It lives in ir/ because the passes and codegen, which both stand on ir,
// report to it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <string>

namespace onnxc {

/// The stages of a compile, in the order they run.
enum class CompileStage {
  Load,     // reading the model file
  Passes,   // the -O pipeline, one step per pass
  Lower,    // one step per node that becomes a kernel
  Optimize, // LLVM's -O3, one step per function reached
  Codegen,  // machine code, one step per function
  Link,     // the shared library (lld or the compiler driver)
  Done,     // everything written (Event::bytes: the library's size)
};

/// "load", "passes", "lower", "optimize", "codegen", "link", "done".
const char *stageName(CompileStage stage);

struct ProgressEvent {
  CompileStage stage = CompileStage::Load;
  /// What within the stage: the pass, the node, the file.
  std::string detail;
  /// Steps done and the stage's total (0: not known in advance).
  int64_t done = 0;
  int64_t total = 0;
  /// Done: the size of the artifact written (0 for the JIT).
  int64_t bytes = 0;
};

/// Sees every event; returns false to stop the compile.
using ProgressCallback = std::function<bool(const ProgressEvent &)>;

/// Thrown when a progress callback asks to stop. Deliberately not an
/// onnxc::Error: the handlers that add a pass or node name to an error must
/// let it through unchanged.
class Interrupted : public std::exception {
public:
  const char *what() const noexcept override { return "interrupted"; }
};

/// Calls `callback` (when set) and throws Interrupted when it asks to stop.
void reportProgress(const ProgressCallback &callback, const ProgressEvent &event);

/// Calls `callback` (when set) where stopping is no longer possible (the
/// artifact is complete); its answer is ignored.
void notifyProgress(const ProgressCallback &callback, const ProgressEvent &event);

} // namespace onnxc
