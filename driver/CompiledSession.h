//===- driver/CompiledSession.h - Run a compiled model on ir::Tensors ------===//
//
// The C API (runtime/include/onnxc/onnxc.h) speaks raw buffers; the driver
// and the tests speak ir::Tensor. This adapter owns one runtime session for
// a descriptor (from the JIT or a loaded model.so) and converts both ways.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Tensor.h"
#include "onnxc/model_abi.h"

#include <vector>

struct onnxc_session;

namespace onnxc {

class CompiledSession {
public:
  /// A session with `numThreads` threads (0: one per core). Throws
  /// onnxc::Error with the runtime's reason when it cannot be created.
  CompiledSession(const onnxc_model_descriptor *model, int numThreads);
  ~CompiledSession();
  CompiledSession(const CompiledSession &) = delete;
  CompiledSession &operator=(const CompiledSession &) = delete;

  const onnxc_model_descriptor &model() const { return *model_; }

  /// Runs on `inputs` (in the model's input order) and returns the outputs
  /// in the model's output order. Throws onnxc::Error with the runtime's
  /// one-line message on bad inputs, naming an input that is missing (too
  /// few, a null entry, or a tensor without data).
  std::vector<Tensor> run(const std::vector<const Tensor *> &inputs);

  /// Bytes of the session's intermediate arena after the last run.
  size_t arenaBytes() const;

  /// Per-step wall time (onnxc_session_set_profiling): enabling resets it.
  void setProfiling(bool enabled);
  int64_t stepNanoseconds(int32_t step) const;

private:
  const onnxc_model_descriptor *model_;
  onnxc_session *session_;
};

} // namespace onnxc
