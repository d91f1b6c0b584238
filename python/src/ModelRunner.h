//===- python/src/ModelRunner.h - A compiled model and its sessions --------===//
//
// What the Python Model object holds: the descriptor of a compiled model
// (JIT-compiled in this process, or looked up in a dlopen'ed model.so), kept
// alive with whatever owns its code, and a pool of runtime sessions. A
// session serves one thread at a time (onnxc.h), so each run takes an idle
// session or creates one; threads calling one model run concurrently, and
// every session shares the model's constants. Nothing here touches Python:
// the binding releases the GIL around run().
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/ModelLibrary.h"
#include "onnxc/onnxc.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace onnxc {

class JitModel;

namespace python {

/// One output of a run, copied out of the session: the runtime's outputs
/// are valid only until the session's next run, the copy for as long as its
/// owner (a numpy array) wants.
struct OutputBuffer {
  std::unique_ptr<uint8_t[]> data;
  int32_t dtype = 0;
  std::vector<int64_t> dims;
  size_t sizeBytes = 0;
};

class ModelRunner {
public:
  /// A model compiled by the JIT.
  ModelRunner(std::unique_ptr<JitModel> jit, int numThreads);
  /// A model library, opened and checked as the onnxc tool does
  /// (driver/ModelLibrary.h). Throws onnxc::Error naming the file when it
  /// cannot.
  ModelRunner(const std::string &path, int numThreads);
  ~ModelRunner();
  ModelRunner(const ModelRunner &) = delete;
  ModelRunner &operator=(const ModelRunner &) = delete;

  const onnxc_model_descriptor &descriptor() const { return *descriptor_; }
  /// The runtime threads each session runs on (0: one per core).
  int numThreads() const { return numThreads_; }
  /// The .so it came from; empty for a JIT model.
  const std::string &libraryPath() const { return libraryPath_; }

  /// Runs on `inputs` (in the descriptor's input order; data read in place)
  /// and returns the outputs in the descriptor's order. Thread-safe. Throws
  /// onnxc::Error with the runtime's one-line message.
  std::vector<OutputBuffer> run(const std::vector<onnxc_tensor> &inputs);

private:
  onnxc_session *acquireSession();
  void releaseSession(onnxc_session *session);

  std::unique_ptr<JitModel> jit_;
  std::unique_ptr<ModelLibrary> library_;
  std::string libraryPath_;
  const onnxc_model_descriptor *descriptor_ = nullptr;
  int numThreads_;
  std::mutex mutex_;
  std::vector<onnxc_session *> idle_;
};

} // namespace python
} // namespace onnxc
