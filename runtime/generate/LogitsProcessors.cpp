//===- runtime/generate/LogitsProcessors.cpp - Penalties, stops and log-probabilities -===//
#include "LogitsProcessors.h"

#include <algorithm>
#include <cmath>

namespace onnxc::runtime {

namespace {

/// The range OpenAI's API accepts for its two penalties.
constexpr float kOpenAiPenaltyLimit = 2.0f;

std::string number(float value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.')
    text.pop_back();
  return text;
}

} // namespace

bool ProcessorParams::isStop(int64_t token) const {
  return std::find(stopIds.begin(), stopIds.end(), token) != stopIds.end();
}

std::string checkProcessorParams(const ProcessorParams &params) {
  if (!(params.repetitionPenalty > 0.0f) || std::isinf(params.repetitionPenalty))
    return "repetition_penalty is " + number(params.repetitionPenalty) +
           "; it must be a positive number (1: none, above 1 discourages repeats)";
  for (auto [name, value] : {std::pair{"presence_penalty", params.presencePenalty},
                             std::pair{"frequency_penalty", params.frequencyPenalty}})
    if (!(std::fabs(value) <= kOpenAiPenaltyLimit))
      return std::string(name) + " is " + number(value) +
             "; it must be within [-2, 2] (0: none), as OpenAI's API takes it";
  if (params.minNewTokens < 0)
    return "min_new_tokens is " + std::to_string(params.minNewTokens) + "; it must be >= 0";
  for (int64_t id : params.stopIds)
    if (id < 0)
      return "stop token id " + std::to_string(id) + " is negative; token ids are 0 or more";
  return "";
}

void applyPenalties(float *logits, int64_t vocab, const ProcessorParams &params,
                    const int64_t *prompt, int64_t promptLength, const int64_t *generated,
                    int64_t generatedLength, std::vector<int32_t> &seen) {
  if (!params.penalizes())
    return;
  if (seen.size() < size_t(vocab))
    seen.assign(size_t(vocab), 0);
  auto valid = [vocab](int64_t id) { return id >= 0 && id < vocab; };
  // HF gathers the logits of the ids and scatters the penalized values back:
  // an id that occurs twice is penalized once.
  if (params.repetitionPenalty != 1.0f) {
    float penalty = params.repetitionPenalty;
    for (const int64_t *ids : {prompt, generated}) {
      int64_t count = ids == prompt ? promptLength : generatedLength;
      for (int64_t i = 0; i < count; ++i) {
        int64_t id = ids[i];
        if (!valid(id) || seen[size_t(id)] & 1)
          continue;
        seen[size_t(id)] |= 1;
        float &logit = logits[id];
        logit = logit < 0 ? logit * penalty : logit / penalty;
      }
    }
  }
  // OpenAI: counts over the generated ids only (bit 1 up carries the count).
  if (params.presencePenalty != 0.0f || params.frequencyPenalty != 0.0f) {
    for (int64_t i = 0; i < generatedLength; ++i)
      if (valid(generated[i]))
        seen[size_t(generated[i])] += 2;
    for (int64_t i = 0; i < generatedLength; ++i) {
      int64_t id = generated[i];
      if (!valid(id) || seen[size_t(id)] < 2)
        continue;
      float count = float(seen[size_t(id)] >> 1);
      logits[id] -= params.frequencyPenalty * count + params.presencePenalty;
      seen[size_t(id)] &= 1; // once per distinct id
    }
  }
  for (const int64_t *ids : {prompt, generated}) {
    int64_t count = ids == prompt ? promptLength : generatedLength;
    for (int64_t i = 0; i < count; ++i)
      if (valid(ids[i]))
        seen[size_t(ids[i])] = 0;
  }
}

void maskStopsBeforeMinimum(float *logits, int64_t vocab, const ProcessorParams &params,
                            int64_t generatedLength) {
  if (generatedLength >= params.minNewTokens)
    return;
  for (int64_t id : params.stopIds)
    if (id >= 0 && id < vocab)
      logits[id] = -INFINITY;
}

double logSumExp(const float *logits, int64_t vocab) {
  float largest = -INFINITY;
  for (int64_t i = 0; i < vocab; ++i)
    if (logits[i] > largest)
      largest = logits[i];
  if (largest == -INFINITY)
    return -INFINITY;
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i)
    if (logits[i] > -INFINITY) // NaN fails this too
      total += std::exp(double(logits[i]) - double(largest));
  return double(largest) + std::log(total);
}

void logSoftmaxAt(const float *logits, int64_t vocab, const int64_t *ids, int64_t count,
                  float *logprobs) {
  double normalizer = logSumExp(logits, vocab);
  for (int64_t i = 0; i < count; ++i) {
    float logit = ids[i] >= 0 && ids[i] < vocab ? logits[ids[i]] : -INFINITY;
    logprobs[i] = std::isnan(logit) || logit == -INFINITY || normalizer == -INFINITY
                      ? -INFINITY
                      : float(double(logit) - normalizer);
  }
}

void topLogprobs(const float *logits, int64_t vocab, int32_t n, std::vector<int64_t> &ids,
                 std::vector<float> &logprobs) {
  int64_t keep = std::min<int64_t>(std::max<int32_t>(n, 0), vocab);
  ids.resize(size_t(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    ids[size_t(i)] = i;
  auto rank = [logits](int64_t id) { return std::isnan(logits[id]) ? -INFINITY : logits[id]; };
  std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), [&](int64_t a, int64_t b) {
    return rank(a) > rank(b) || (rank(a) == rank(b) && a < b);
  });
  ids.resize(size_t(keep));
  logprobs.resize(size_t(keep));
  logSoftmaxAt(logits, vocab, ids.data(), keep, logprobs.data());
}

} // namespace onnxc::runtime
