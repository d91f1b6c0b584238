//===- serve/Metrics.cpp - Prometheus counters and histograms of the server -===//
#include "serve/Metrics.h"

#include <cstdio>

namespace onnxc::serve {

namespace {

std::string number(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.9g", value);
  return text;
}

void metricHeader(std::string &out, const char *name, const char *type, const char *help) {
  out += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
}

} // namespace

void Histogram::observe(double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (size_t b = 0; b < kBounds.size(); ++b)
    if (seconds <= kBounds[b])
      ++counts_[b];
  ++count_;
  sum_ += seconds;
}

void Histogram::render(const std::string &name, std::string &out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  // Prometheus buckets are cumulative: each counts the observations <= its bound.
  for (size_t b = 0; b < kBounds.size(); ++b)
    out += name + "_bucket{le=\"" + number(kBounds[b]) + "\"} " + std::to_string(counts_[b]) + "\n";
  out += name + "_bucket{le=\"+Inf\"} " + std::to_string(count_) + "\n";
  out += name + "_sum " + number(sum_) + "\n";
  out += name + "_count " + std::to_string(count_) + "\n";
}

void Metrics::countRequest(const std::string &endpoint, int status) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++requests_[{endpoint, status}];
}

std::string Metrics::render() const {
  std::string out;
  metricHeader(out, "onnxc_requests_total", "counter", "HTTP requests by endpoint and status.");
  {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto &[key, count] : requests_)
      out += "onnxc_requests_total{endpoint=\"" + key.first + "\",status=\"" +
             std::to_string(key.second) + "\"} " + std::to_string(count) + "\n";
  }
  metricHeader(out, "onnxc_prompt_tokens_total", "counter", "Prompt tokens of admitted requests.");
  out += "onnxc_prompt_tokens_total " + std::to_string(promptTokens.load()) + "\n";
  metricHeader(out, "onnxc_generated_tokens_total", "counter", "Tokens generated.");
  out += "onnxc_generated_tokens_total " + std::to_string(generatedTokens.load()) + "\n";
  metricHeader(out, "onnxc_rejected_queue_full_total", "counter",
               "Requests answered 429 because the queue was full.");
  out += "onnxc_rejected_queue_full_total " + std::to_string(rejectedFull.load()) + "\n";
  metricHeader(out, "onnxc_cancelled_total", "counter",
               "Requests ended early: client gone, timeout or stop string.");
  out += "onnxc_cancelled_total " + std::to_string(cancelled.load()) + "\n";
  metricHeader(out, "onnxc_queue_depth", "gauge", "Requests waiting for a batch row.");
  out += "onnxc_queue_depth " + std::to_string(queueDepth.load()) + "\n";
  metricHeader(out, "onnxc_running_rows", "gauge", "Requests in the running batches.");
  out += "onnxc_running_rows " + std::to_string(runningRows.load()) + "\n";
  metricHeader(out, "onnxc_time_to_first_token_seconds", "histogram",
               "From the request's arrival to its first token.");
  timeToFirstToken.render("onnxc_time_to_first_token_seconds", out);
  metricHeader(out, "onnxc_time_per_output_token_seconds", "histogram",
               "Between two tokens of one request.");
  timePerToken.render("onnxc_time_per_output_token_seconds", out);
  return out;
}

} // namespace onnxc::serve
