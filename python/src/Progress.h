//===- python/src/Progress.h - Compile progress and Ctrl-C in Python ------===//
//
// onnxc.compile runs the compiler with the GIL released, so Python cannot
// deliver a Ctrl-C (its handler runs only between bytecodes) nor see how
// far the compile is. The driver's progress callback (ir/Progress.h) is the
// way back in: at each step it takes the GIL, runs pending signal handlers
// (PyErr_CheckSignals) and calls the user's progress= callable. Either one
// raising stops the compile at that step; the driver removes what it had
// started to write and throws Interrupted, and the binding raises the kept
// Python exception (KeyboardInterrupt) in its place.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Progress.h"

#include <nanobind/nanobind.h>

#include <optional>

namespace onnxc::python {

class PythonProgress {
public:
  /// `callable(stage, detail, done, total, bytes)`, or None (Ctrl-C only).
  /// Created and destroyed with the GIL held.
  explicit PythonProgress(nanobind::object callable);

  /// The callback for CompileOptions: called without the GIL, takes it.
  ProgressCallback callback();

  /// With the GIL: raises the exception a callback or signal handler
  /// raised, if any (a compile that finished despite it still raises: the
  /// user asked to stop).
  void raisePending();
  /// With the GIL, after the driver threw Interrupted: raises what stopped
  /// it (KeyboardInterrupt when nothing was kept).
  [[noreturn]] void raiseInterrupted();

private:
  bool onEvent(const ProgressEvent &event);

  nanobind::object callable_;
  std::optional<nanobind::python_error> pending_;
};

} // namespace onnxc::python
