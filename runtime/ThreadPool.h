//===- runtime/ThreadPool.h - Persistent workers for short parallel-fors ---===//
//
// A transformer layer is dozens of steps of 10-100 us each, so the pool is
// built for many short parallel-for calls rather than for throughput of
// independent jobs: workers persist, spin briefly between calls before
// sleeping, the work of a call is split into static contiguous chunks (one per
// participant, which keeps each thread on the same rows step after step), and
// the calling thread takes the first chunk itself. Nothing is allocated per
// call, and a pool of one thread runs everything inline without any atomic.
//
// Chunks are claimed, not assigned: once the caller is done with its own, it
// runs any chunk whose worker has not started yet. On a busy machine a
// descheduled worker then delays nothing, and the caller only ever waits for
// chunks that are actually running.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace onnxc::runtime {

class ThreadPool {
public:
  /// A pool of `numThreads` threads in total, the caller of parallelFor
  /// included, so `numThreads - 1` workers are started. 0 means one thread
  /// per hardware thread.
  explicit ThreadPool(int numThreads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int numThreads() const { return numThreads_; }

  /// Calls body(begin, end) on disjoint contiguous ranges covering
  /// [0, count) and returns when all of them are done. Not reentrant: one
  /// parallelFor at a time per pool (a session is used by one thread at a
  /// time, and a kernel never calls back into the pool).
  template <typename Body> void parallelFor(int64_t count, const Body &body) {
    if (count <= 0)
      return;
    if (numThreads_ == 1 || count == 1) {
      body(int64_t(0), count);
      return;
    }
    run(count, &callBody<Body>, const_cast<void *>(static_cast<const void *>(&body)));
  }

private:
  using Trampoline = void (*)(void *context, int64_t begin, int64_t end);

  template <typename Body> static void callBody(void *context, int64_t begin, int64_t end) {
    (*static_cast<const Body *>(context))(begin, end);
  }

  void run(int64_t count, Trampoline trampoline, void *context);
  void workerLoop(int workerIndex);
  /// Waits until the dispatch word differs from `seen` and returns it, or
  /// returns `seen` unchanged once the pool is stopping.
  uint64_t waitForDispatch(uint64_t seen);
  /// Whether this thread gets to run `chunk` of call `generation`; a chunk is
  /// claimed once, and never by a thread still looking at an older call.
  bool claimChunk(int chunk, uint64_t generation);
  void runChunk(int chunk, int participants);
  void stopWorkers();

  int numThreads_;
  std::vector<std::thread> workers_;

  // The job of the current call. Written by the caller before it publishes
  // a new dispatch word, read by participants after they observe it; the
  // caller does not touch them again until every participant has reported.
  Trampoline trampoline_ = nullptr;
  void *context_ = nullptr;
  int64_t count_ = 0;
  uint64_t generation_ = 0; ///< Of the current call; written by the caller only.

  /// Per chunk, the last generation it was claimed in.
  struct alignas(64) ChunkClaim {
    std::atomic<uint64_t> generation{0};
  };
  std::unique_ptr<ChunkClaim[]> claims_;

  // Generation in the high bits, participant count in the low 16: packing
  // them into one word lets a worker learn whether it takes part in a call
  // without reading job fields that the next call may already be rewriting.
  alignas(64) std::atomic<uint64_t> dispatch_{0};
  alignas(64) std::atomic<int> pending_{0};
  alignas(64) std::atomic<int> sleepers_{0};
  std::atomic<bool> stopping_{false};
  std::mutex sleepMutex_;
  std::condition_variable wakeUp_;
};

} // namespace onnxc::runtime
