//===- serve/Generation.h - One request's tokens, from the scheduler to its connection -===//
//
// The channel between a model's scheduler thread, which produces a
// request's tokens, and the connection thread that answers it: tokens and
// the end (finish reason or error) go one way, a cancellation (client gone,
// stop string, timeout) the other. The connection waits with a timeout so it
// can watch its socket meanwhile.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

namespace onnxc::serve {

using Clock = std::chrono::steady_clock;

/// The sampling a request asks for (OpenAI's fields).
struct SamplingRequest {
  int64_t maxTokens = 16; ///< 0: what the limits leave after the prompt (chat's default)
  bool sample = false;    ///< temperature > 0
  float temperature = 1;
  float topP = 1;
  int32_t topK = 0;
  uint64_t seed = 0;
};

class Generation {
public:
  std::vector<int64_t> prompt;
  SamplingRequest sampling;
  Clock::time_point arrival = Clock::now(), deadline = Clock::time_point::max();
  /// Set by the connection; the scheduler drops the row at its next step.
  std::atomic<bool> cancelled{false};

  /// Scheduler side.
  void push(int64_t token);
  void finish(std::string reason, std::string error = "");

  /// Connection side: moves the tokens produced since the last call into
  /// `tokens`; true when something arrived or the generation ended (`done`).
  bool wait(std::vector<int64_t> &tokens, std::chrono::milliseconds timeout);
  bool done() const;
  std::string finishReason() const;
  std::string error() const;

private:
  mutable std::mutex mutex_;
  std::condition_variable ready_;
  std::deque<int64_t> tokens_;
  bool done_ = false;
  std::string reason_, error_;
};

} // namespace onnxc::serve
