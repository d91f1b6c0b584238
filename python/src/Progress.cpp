//===- python/src/Progress.cpp - Compile progress and Ctrl-C in Python ----===//
#include "python/src/Progress.h"

#include <nanobind/stl/string.h>

namespace nb = nanobind;

namespace onnxc::python {

PythonProgress::PythonProgress(nb::object callable) : callable_(std::move(callable)) {}

ProgressCallback PythonProgress::callback() {
  return [this](const ProgressEvent &event) { return onEvent(event); };
}

bool PythonProgress::onEvent(const ProgressEvent &event) {
  nb::gil_scoped_acquire gil;
  if (pending_)
    return false;
  // Signals only: the handlers Python registered (SIGINT raises
  // KeyboardInterrupt) run here, on the main thread.
  if (PyErr_CheckSignals() != 0) {
    pending_.emplace();
    return false;
  }
  if (callable_.is_none())
    return true;
  try {
    callable_(stageName(event.stage), event.detail, event.done, event.total, event.bytes);
  } catch (nb::python_error &error) {
    pending_.emplace(std::move(error));
    return false;
  }
  return true;
}

void PythonProgress::raisePending() {
  if (!pending_)
    return;
  nb::python_error error = std::move(*pending_);
  pending_.reset();
  throw error;
}

void PythonProgress::raiseInterrupted() {
  raisePending();
  PyErr_SetNone(PyExc_KeyboardInterrupt);
  throw nb::python_error();
}

} // namespace onnxc::python
