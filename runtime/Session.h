//===- runtime/Session.h - One model's runs on one thread pool -------------===//
//
// A session owns what a run needs besides the model: the thread pool, the
// arena, library-owned outputs and a small cache of execution plans keyed
// by the symbol values. After the first run with given shapes, a run only
// checks its inputs, resolves pointers and calls the steps: no planning and
// no allocation.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "AlignedBuffer.h"
#include "ExecutionPlan.h"
#include "ThreadPool.h"
#include "onnxc/onnxc.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc::runtime {

class Session {
public:
  /// Checks the descriptor and starts the pool. On failure returns null and
  /// sets `error`. May throw std::bad_alloc / std::system_error.
  static std::unique_ptr<Session> create(const onnxc_model_descriptor *model, int numThreads,
                                         std::string &error);

  /// See onnxc_session_run. Returns false with error() set on bad input.
  bool run(const onnxc_tensor *inputs, int32_t numInputs, onnxc_tensor *outputs,
           int32_t numOutputs);

  /// Plans a run with these inputs and outputs (their data is not read)
  /// and grows the arena and the library-owned outputs to it, without
  /// running: a caller that knows its largest shapes (the generator) makes
  /// later runs allocate nothing. Checks the memory limit like run().
  bool reserve(const onnxc_tensor *inputs, int32_t numInputs, const onnxc_tensor *outputs,
               int32_t numOutputs);

  const std::string &error() const { return error_; }
  /// The arena the last successful run planned.
  size_t arenaBytes() const { return lastArenaBytes_; }
  /// Plans built so far; lets tests see that repeated shapes are not replanned.
  size_t plansBuilt() const { return plansBuilt_; }
  int numThreads() const { return pool_.numThreads(); }
  /// See onnxc_session_set_profiling / onnxc_session_step_nanoseconds.
  void setProfiling(bool enabled);
  int64_t stepNanoseconds(int32_t step) const;
  /// See onnxc_session_set_memory_limit; 0 restores the default.
  void setMemoryLimit(int64_t bytes);
  int64_t memoryLimit() const { return memoryLimit_; }
  /// See onnxc_session_set_cache_capacity: false with error() set for a
  /// negative capacity; 0 restores the default (each present's length).
  bool setCacheCapacity(int64_t capacity);
  int64_t cacheCapacity() const { return cacheCapacity_; }
  const onnxc_model_descriptor &model() const { return model_; }

private:
  Session(const onnxc_model_descriptor &model, int numThreads);

  bool fail(std::string message);
  const ExecutionPlan *findOrBuildPlan();
  /// Fails when the arena and the library-owned outputs of `plan` would
  /// take more than the memory limit; checked before allocating either.
  bool checkMemory(const ExecutionPlan &plan, const onnxc_tensor *outputs);
  bool prepareOutputs(const ExecutionPlan &plan, onnxc_tensor *outputs);
  /// Fails when a cache pair's past and present share a buffer without a
  /// common capacity layout (onnxc_cache_pair).
  bool checkSharedCaches(const onnxc_tensor *inputs, const onnxc_tensor *outputs);
  void resolveBuffers(const ExecutionPlan &plan, const onnxc_tensor *inputs,
                      const onnxc_tensor *outputs);
  /// Runs every step; false with error() set when a kernel reports bad data.
  bool runSteps(const ExecutionPlan &plan);

  const onnxc_model_descriptor &model_;
  ThreadPool pool_;
  std::vector<int64_t> symbols_;
  std::vector<std::unique_ptr<ExecutionPlan>> plans_;
  /// Where the next plan is built; an evicted plan comes back here, so a
  /// run with new shapes reuses its vectors instead of allocating them.
  std::unique_ptr<ExecutionPlan> sparePlan_;
  size_t nextEvicted_ = 0;
  size_t plansBuilt_ = 0;
  AlignedBuffer arena_;
  std::vector<AlignedBuffer> ownedOutputs_;
  std::vector<void *> bufferPointers_;     ///< Per descriptor buffer, this run.
  std::vector<void *> stepBufferPointers_; ///< Every step's buffer list, back to back.
  std::vector<size_t> stepBufferStart_;    ///< Where each step's list starts.
  size_t lastArenaBytes_ = 0;
  int64_t memoryLimit_;
  int64_t cacheCapacity_ = 0;
  bool profiling_ = false;
  std::vector<int64_t> stepNanoseconds_; ///< Per step, while profiling.
  std::string error_;
};

} // namespace onnxc::runtime
