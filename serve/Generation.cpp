//===- serve/Generation.cpp - One request's tokens, from the scheduler to its connection -===//
#include "serve/Generation.h"

namespace onnxc::serve {

void Generation::push(int64_t token) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    tokens_.push_back(token);
  }
  ready_.notify_all();
}

void Generation::finish(std::string reason, std::string error) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (done_)
      return;
    done_ = true;
    reason_ = std::move(reason);
    error_ = std::move(error);
  }
  ready_.notify_all();
}

bool Generation::wait(std::vector<int64_t> &tokens, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  ready_.wait_for(lock, timeout, [this] { return done_ || !tokens_.empty(); });
  bool any = done_ || !tokens_.empty();
  tokens.insert(tokens.end(), tokens_.begin(), tokens_.end());
  tokens_.clear();
  return any;
}

bool Generation::done() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return done_;
}

std::string Generation::finishReason() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return reason_;
}

std::string Generation::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

} // namespace onnxc::serve
