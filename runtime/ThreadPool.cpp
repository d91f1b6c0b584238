//===- runtime/ThreadPool.cpp - Persistent workers for short parallel-fors -===//
#include "ThreadPool.h"

#include <algorithm>
#include <cassert>
#include <chrono>

namespace onnxc::runtime {

namespace {

/// How long an idle worker keeps polling before it sleeps. Longer than the
/// gap between two steps of a run (so a run never pays a wake-up after its
/// first step), short enough that an idle session gives its core back.
constexpr auto kSpinTime = std::chrono::microseconds(200);
/// Polls of the completion counter before the caller starts yielding, in
/// case a participant was descheduled on an oversubscribed machine.
constexpr int kCallerSpins = 4000;
constexpr uint64_t kParticipantBits = 16;
constexpr uint64_t kParticipantMask = (uint64_t(1) << kParticipantBits) - 1;

inline void cpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

int resolveThreadCount(int requested) {
  assert(requested >= 0 && "thread count must not be negative");
  int threads = requested;
  if (threads == 0)
    threads = static_cast<int>(std::thread::hardware_concurrency());
  return std::clamp(threads, 1, static_cast<int>(kParticipantMask));
}

} // namespace

ThreadPool::ThreadPool(int numThreads) : numThreads_(resolveThreadCount(numThreads)) {
  if (numThreads_ == 1)
    return;
  claims_ = std::make_unique<ChunkClaim[]>(numThreads_);
  workers_.reserve(numThreads_ - 1);
  try {
    for (int worker = 1; worker < numThreads_; ++worker)
      workers_.emplace_back([this, worker] { workerLoop(worker); });
  } catch (...) {
    // Joinable threads must not outlive the pool, even a half-built one.
    stopWorkers();
    throw;
  }
}

ThreadPool::~ThreadPool() { stopWorkers(); }

void ThreadPool::stopWorkers() {
  stopping_.store(true);
  {
    // Taking the mutex orders the store before any sleeper's predicate check.
    std::lock_guard<std::mutex> lock(sleepMutex_);
  }
  wakeUp_.notify_all();
  for (std::thread &worker : workers_)
    if (worker.joinable())
      worker.join();
  workers_.clear();
}

void ThreadPool::run(int64_t count, Trampoline trampoline, void *context) {
  int participants = static_cast<int>(std::min<int64_t>(numThreads_, count));
  trampoline_ = trampoline;
  context_ = context;
  count_ = count;
  // Chunks other than the caller's own (chunk 0, which no worker claims).
  pending_.store(participants - 1, std::memory_order_relaxed);

  generation_ = (dispatch_.load(std::memory_order_relaxed) >> kParticipantBits) + 1;
  // Sequentially consistent with the sleepers_ increment in waitForDispatch:
  // either the sleeper sees the new word, or we see the sleeper and wake it.
  dispatch_.store((generation_ << kParticipantBits) | uint64_t(participants));
  if (sleepers_.load() > 0) {
    { std::lock_guard<std::mutex> lock(sleepMutex_); }
    wakeUp_.notify_all();
  }

  runChunk(0, participants);
  for (int chunk = 1; chunk < participants; ++chunk) {
    if (!claimChunk(chunk, generation_))
      continue;
    runChunk(chunk, participants);
    pending_.fetch_sub(1, std::memory_order_relaxed);
  }

  for (int spin = 0; pending_.load(std::memory_order_acquire) != 0; ++spin) {
    if (spin < kCallerSpins)
      cpuRelax();
    else
      std::this_thread::yield();
  }
}

bool ThreadPool::claimChunk(int chunk, uint64_t generation) {
  std::atomic<uint64_t> &claim = claims_[chunk].generation;
  uint64_t last = claim.load(std::memory_order_relaxed);
  // Generations only grow, so a claim made for a newer call also turns away
  // a worker that wakes up late for an older one.
  while (last < generation)
    if (claim.compare_exchange_weak(last, generation, std::memory_order_acq_rel,
                                    std::memory_order_relaxed))
      return true;
  return false;
}

void ThreadPool::runChunk(int chunk, int participants) {
  // Static contiguous chunks; the first `remainder` chunks get one extra.
  int64_t base = count_ / participants;
  int64_t remainder = count_ % participants;
  int64_t begin = chunk * base + std::min<int64_t>(chunk, remainder);
  int64_t end = begin + base + (chunk < remainder ? 1 : 0);
  if (begin < end)
    trampoline_(context_, begin, end);
}

uint64_t ThreadPool::waitForDispatch(uint64_t seen) {
  auto spinStart = std::chrono::steady_clock::now();
  for (unsigned spin = 1;; ++spin) {
    uint64_t word = dispatch_.load(std::memory_order_acquire);
    if (word != seen)
      return word;
    if (stopping_.load(std::memory_order_relaxed))
      return seen;
    cpuRelax();
    // Now and then (a clock read or a syscall costs more than a poll): give
    // up spinning after kSpinTime, and offer the core meanwhile. The yield
    // returns at once on an idle core, but on a loaded machine it hands the
    // core to the caller or to other processes instead of burning it here.
    if (spin % 256 == 0) {
      if (std::chrono::steady_clock::now() - spinStart > kSpinTime)
        break;
      std::this_thread::yield();
    }
  }

  std::unique_lock<std::mutex> lock(sleepMutex_);
  sleepers_.fetch_add(1);
  uint64_t word = seen;
  wakeUp_.wait(lock, [&] {
    word = dispatch_.load();
    return word != seen || stopping_.load();
  });
  sleepers_.fetch_sub(1, std::memory_order_relaxed);
  return word;
}

void ThreadPool::workerLoop(int workerIndex) {
  // Start from the constructor's word, not a fresh load: a call dispatched
  // before this thread got scheduled must still be seen as new.
  uint64_t seen = 0;
  for (;;) {
    uint64_t word = waitForDispatch(seen);
    if (word == seen)
      return; // stopping
    seen = word;
    int participants = static_cast<int>(word & kParticipantMask);
    if (workerIndex >= participants || !claimChunk(workerIndex, word >> kParticipantBits))
      continue;
    runChunk(workerIndex, participants);
    pending_.fetch_sub(1, std::memory_order_acq_rel);
  }
}

} // namespace onnxc::runtime
