//===- serve/Metrics.h - Prometheus counters and histograms of the server -===//
//
// What /metrics shows, in Prometheus' text format (version 0.0.4): requests
// by endpoint and status, prompt and generated tokens, the queue's depth and
// the running rows, and histograms of the time to first token and of the
// time per later token. Updated from the connection and scheduler threads.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace onnxc::serve {

/// A histogram with fixed upper bounds in seconds.
class Histogram {
public:
  static constexpr std::array<double, 14> kBounds = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                                     0.25,  0.5,    1,     2.5,  5,     10,   30};
  void observe(double seconds);
  /// Appends the _bucket, _sum and _count lines of `name`.
  void render(const std::string &name, std::string &out) const;

private:
  mutable std::mutex mutex_;
  std::array<uint64_t, kBounds.size()> counts_{};
  uint64_t count_ = 0;
  double sum_ = 0;
};

class Metrics {
public:
  void countRequest(const std::string &endpoint, int status);
  std::atomic<uint64_t> promptTokens{0}, generatedTokens{0}, rejectedFull{0}, cancelled{0};
  std::atomic<int64_t> queueDepth{0}, runningRows{0};
  Histogram timeToFirstToken, timePerToken;
  std::string render() const;

private:
  mutable std::mutex mutex_;
  std::map<std::pair<std::string, int>, uint64_t> requests_;
};

} // namespace onnxc::serve
