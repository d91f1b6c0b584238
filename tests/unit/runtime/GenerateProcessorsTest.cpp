//===- tests/unit/runtime/GenerateProcessorsTest.cpp - Penalties, stops, min-p, log-probs --===//
//
// The logits processors against values worked out by hand from their
// definitions (HF's repetition_penalty, OpenAI's presence and frequency
// penalties, min_new_tokens, min_p), and their edge cases.
//
//===----------------------------------------------------------------------===//
#include "runtime/generate/LogitsProcessors.h"
#include "runtime/generate/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace onnxc::runtime;

namespace {

std::vector<float> penalized(const ProcessorParams &params, std::vector<float> logits,
                             const std::vector<int64_t> &prompt,
                             const std::vector<int64_t> &generated) {
  std::vector<int32_t> seen;
  applyPenalties(logits.data(), int64_t(logits.size()), params, prompt.data(),
                 int64_t(prompt.size()), generated.data(), int64_t(generated.size()), seen);
  for (int32_t flag : seen)
    EXPECT_EQ(flag, 0); // the scratch is left clean for the next row
  return logits;
}

} // namespace

TEST(GenerateProcessors, RepetitionPenaltyDividesPositiveAndMultipliesNegativeOnce) {
  ProcessorParams params;
  params.repetitionPenalty = 2.0f;
  // Id 1 occurs three times (prompt and output) and is penalized once; id 5
  // is outside the vocabulary and ignored.
  std::vector<float> out = penalized(params, {1.0f, 4.0f, -3.0f, 0.0f, 2.0f}, {1, 2, 1, 5}, {3, 1});
  EXPECT_EQ(out, (std::vector<float>{1.0f, 2.0f, -6.0f, 0.0f, 2.0f}));
}

TEST(GenerateProcessors, PenaltiesOfOneAndZeroAreNoOps) {
  ProcessorParams params; // repetition 1, presence 0, frequency 0
  EXPECT_FALSE(params.penalizes());
  std::vector<float> logits = {0.5f, -2.0f, 3.0f};
  EXPECT_EQ(penalized(params, logits, {0, 1, 2}, {2, 2}), logits);
}

TEST(GenerateProcessors, PresenceAndFrequencyFollowOpenAiOverTheOutputOnly) {
  ProcessorParams params;
  params.presencePenalty = 0.5f;
  params.frequencyPenalty = 0.25f;
  // Output: id 2 three times, id 0 once; the prompt's id 1 is not counted.
  std::vector<float> out = penalized(params, {1.0f, 1.0f, 1.0f, 1.0f}, {1, 1}, {2, 0, 2, 2});
  EXPECT_FLOAT_EQ(out[0], 1.0f - 0.25f * 1 - 0.5f);
  EXPECT_FLOAT_EQ(out[1], 1.0f);
  EXPECT_FLOAT_EQ(out[2], 1.0f - 0.25f * 3 - 0.5f);
  EXPECT_FLOAT_EQ(out[3], 1.0f);
}

TEST(GenerateProcessors, RepetitionThenOpenAiPenalties) {
  ProcessorParams params;
  params.repetitionPenalty = 4.0f;
  params.frequencyPenalty = 1.0f;
  std::vector<float> out = penalized(params, {8.0f, -1.0f}, {}, {0, 0, 1});
  EXPECT_FLOAT_EQ(out[0], 8.0f / 4.0f - 2.0f);
  EXPECT_FLOAT_EQ(out[1], -1.0f * 4.0f - 1.0f);
}

TEST(GenerateProcessors, MinNewTokensMasksEveryStopIdUntilReached) {
  ProcessorParams params;
  params.minNewTokens = 2;
  params.stopIds = {1, 3, 99};
  std::vector<float> logits = {0.0f, 5.0f, 1.0f, 6.0f};
  maskStopsBeforeMinimum(logits.data(), 4, params, 1);
  EXPECT_EQ(logits[1], -INFINITY);
  EXPECT_EQ(logits[3], -INFINITY);
  EXPECT_EQ(logits[2], 1.0f);
  std::vector<float> reached = {0.0f, 5.0f, 1.0f, 6.0f};
  maskStopsBeforeMinimum(reached.data(), 4, params, 2);
  EXPECT_EQ(reached[1], 5.0f);
}

TEST(GenerateProcessors, AllIdsStoppedLeavesSamplingAnId) {
  // Every id is a stop and masked: greedy and sampling still return an id
  // in range (the argmax of an all -inf row is id 0), never a crash.
  ProcessorParams params;
  params.minNewTokens = 1;
  params.stopIds = {0, 1, 2};
  std::vector<float> logits = {1.0f, 2.0f, 3.0f};
  maskStopsBeforeMinimum(logits.data(), 3, params, 0);
  SamplingParams sampling;
  sampling.sample = true;
  Sampler sampler(sampling, 1);
  int64_t id = sampler.choose(logits.data(), 3);
  EXPECT_GE(id, 0);
  EXPECT_LT(id, 3);
  EXPECT_EQ(logSumExp(logits.data(), 3), -INFINITY);
}

TEST(GenerateProcessors, MinPKeepsIdsAtLeastMinPTimesTheLargest) {
  SamplingParams params;
  params.sample = true;
  params.minP = 0.3f;
  // Probabilities 0.5, 0.2, 0.2, 0.1 (logits are their logs): 0.3 * 0.5 = 0.15
  // keeps the first three, renormalized to 5/9, 2/9, 2/9.
  std::vector<float> logits = {std::log(0.5f), std::log(0.2f), std::log(0.2f), std::log(0.1f)};
  Sampler sampler(params, 0);
  std::vector<int64_t> ids;
  std::vector<double> probabilities;
  sampler.candidates(logits.data(), 4, ids, probabilities);
  ASSERT_EQ(ids, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_NEAR(probabilities[0], 5.0 / 9, 1e-6);
  EXPECT_NEAR(probabilities[2], 2.0 / 9, 1e-6);
  // min_p 0 keeps everything.
  params.minP = 0.0f;
  Sampler all(params, 0);
  all.candidates(logits.data(), 4, ids, probabilities);
  EXPECT_EQ(ids.size(), 4u);
}

TEST(GenerateProcessors, LogSoftmaxAndTopLogprobs) {
  std::vector<float> logits = {1.0f, 3.0f, -INFINITY, 3.0f};
  double normalizer = std::log(std::exp(1.0) + 2 * std::exp(3.0));
  int64_t id = 1;
  float value = 0;
  logSoftmaxAt(logits.data(), 4, &id, 1, &value);
  EXPECT_NEAR(value, 3.0 - normalizer, 1e-6);
  std::vector<int64_t> ids;
  std::vector<float> values;
  topLogprobs(logits.data(), 4, 3, ids, values);
  EXPECT_EQ(ids, (std::vector<int64_t>{1, 3, 0})); // ties: the lower id first
  EXPECT_NEAR(values[2], 1.0 - normalizer, 1e-6);
  topLogprobs(logits.data(), 4, 9, ids, values);
  EXPECT_EQ(ids.size(), 4u);
  EXPECT_EQ(values[3], -INFINITY);
}

TEST(GenerateProcessors, BadParametersAreOneLine) {
  ProcessorParams params;
  EXPECT_EQ(checkProcessorParams(params), "");
  params.repetitionPenalty = -1.0f;
  EXPECT_NE(checkProcessorParams(params).find("repetition_penalty is -1"), std::string::npos);
  params.repetitionPenalty = 0.0f;
  EXPECT_NE(checkProcessorParams(params).find("positive"), std::string::npos);
  params = ProcessorParams();
  params.presencePenalty = 2.5f;
  EXPECT_NE(checkProcessorParams(params).find("presence_penalty is 2.5"), std::string::npos);
  params = ProcessorParams();
  params.frequencyPenalty = NAN;
  EXPECT_NE(checkProcessorParams(params).find("frequency_penalty"), std::string::npos);
  params = ProcessorParams();
  params.minNewTokens = -3;
  EXPECT_NE(checkProcessorParams(params).find("min_new_tokens is -3"), std::string::npos);
}
