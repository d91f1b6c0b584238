//===- serve/Scheduler.h - Continuous batching over one model's generator -===//
//
// One thread per model runs the decode steps of its running batch. Between
// two steps, waiting requests join the batch (the generator's add_row: the
// prompt runs alone and its cache rows are copied in) while rows are free,
// and finished, cancelled or timed-out rows leave it (remove_row). The
// queue in front is bounded: submit() refuses at once when it is full, so
// the server answers 429 instead of hanging. A model whose rows cannot
// join a running batch (no KV cache, no position ids) runs one request at
// a time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc_generate.h"
#include "serve/Generation.h"
#include "serve/Metrics.h"
#include "serve/ServeOptions.h"

#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace onnxc::serve {

class Scheduler {
public:
  /// Creates the model's generator and starts the thread; null with `error` set.
  static std::unique_ptr<Scheduler> create(const ModelSpec &spec, const ServeOptions &options,
                                           Metrics &metrics, std::string &error);
  ~Scheduler();

  /// Queues a request; false when the queue is full (nothing is kept).
  bool submit(std::shared_ptr<Generation> generation);
  /// Rows the batch can hold at once.
  int maxRows() const { return maxRows_; }
  /// Prompt and generated tokens a request may have: --max-total-tokens, or
  /// less when the model's graph holds fewer positions.
  int64_t maxTotalTokens() const { return maxTotalTokens_; }
  /// Why rows run one at a time, or empty when they batch.
  const std::string &serialReason() const { return serialReason_; }

private:
  Scheduler(const ServeOptions &options, Metrics &metrics, onnxc_generator *generator);
  void loop();
  /// Moves waiting requests into free rows.
  void admit(std::unique_lock<std::mutex> &lock);
  /// One step of every running row; rows that end leave the batch.
  void step();
  /// Takes row `row` out of the batch (and the generator's rows).
  void release(size_t row);
  /// Hands a token to its request; false when the request has ended.
  bool deliver(size_t row, int64_t token);

  struct Row {
    std::shared_ptr<Generation> generation;
    int64_t produced = 0;
    Clock::time_point last;
  };

  const ServeOptions &options_;
  Metrics &metrics_;
  onnxc_generator *generator_;
  std::vector<int64_t> stops_;
  int maxRows_ = 1;
  int64_t maxTotalTokens_ = 0;
  std::string serialReason_;
  std::vector<Row> rows_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<Generation>> queue_;
  bool stopping_ = false;
  std::thread thread_;
};

} // namespace onnxc::serve
