//===- tests/unit/runtime/GeneratorBatchTest.cpp - Batches, stops, log-probs, beams on the toys
//===//
//
// The toy decoders of GeneratorTestModel.h through the C API: a batch of
// prompts gives each row the tokens it gets alone and stops each at its own
// stop id; stop lists, min_new_tokens and the penalties reach the loop;
// log-probabilities come back per row; a beam search runs on the rows; and
// bad arguments are refused in one line.
//
//===----------------------------------------------------------------------===//
#include "GeneratorTestModel.h"
#include "GeneratorTestSupport.h"
#include "onnxc/onnxc_generate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

using namespace onnxc::runtime::testing::toy;

namespace {

using onnxc::runtime::testing::GeneratorPtr;
using onnxc::runtime::testing::greedyOptions;

std::vector<int64_t> alone(ToyDecoder &toy, const onnxc_generate_options &opts,
                           const std::vector<int64_t> &prompt) {
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_TRUE(generator) << onnxc_last_error();
  std::vector<int64_t> out(1000);
  int64_t count = onnxc_generate(generator.get(), prompt.data(), int64_t(prompt.size()), out.data(),
                                 int64_t(out.size()));
  EXPECT_GE(count, 0) << onnxc_generator_error(generator.get());
  out.resize(size_t(std::max<int64_t>(count, 0)));
  return out;
}

/// The two most likely first ids of `prompt` alone (top_logprobs).
std::vector<int64_t> topIdsAlone(ToyDecoder &toy, const std::vector<int64_t> &prompt) {
  onnxc_generate_options opts = greedyOptions(1);
  opts.top_logprobs = 2;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_EQ(onnxc_generator_prefill(generator.get(), prompt.data(), int64_t(prompt.size())), 0);
  int64_t token = 0;
  EXPECT_EQ(onnxc_generator_next(generator.get(), &token), 1);
  std::vector<int64_t> ids(2);
  float values[2];
  EXPECT_EQ(onnxc_generator_top_logprobs(generator.get(), 0, ids.data(), values, 2), 2);
  return ids;
}

std::vector<std::vector<int64_t>> batch(onnxc_generator *generator,
                                        const std::vector<std::vector<int64_t>> &prompts) {
  std::vector<const int64_t *> starts;
  std::vector<int64_t> counts;
  for (const auto &prompt : prompts) {
    starts.push_back(prompt.data());
    counts.push_back(int64_t(prompt.size()));
  }
  EXPECT_EQ(onnxc_generator_prefill_batch(generator, starts.data(), counts.data(),
                                          int64_t(prompts.size())),
            0)
      << onnxc_generator_error(generator);
  std::vector<std::vector<int64_t>> out(prompts.size());
  std::vector<int64_t> tokens(prompts.size());
  std::vector<int32_t> produced(prompts.size());
  int status;
  while ((status = onnxc_generator_next_batch(generator, tokens.data(), produced.data())) == 1)
    for (size_t r = 0; r < prompts.size(); ++r)
      if (produced[r])
        out[r].push_back(tokens[r]);
  EXPECT_EQ(status, 0) << onnxc_generator_error(generator);
  return out;
}

} // namespace

TEST(GeneratorBatch, RowsGetTheirTokensAloneAndStopAtTheirOwnStop) {
  for (bool cache : {true, false}) {
    ToyDecoder toy(cache);
    onnxc_generate_options opts = greedyOptions(12);
    // The toy's rule makes these rows differ; a stop list ends them apart.
    std::vector<std::vector<int64_t>> prompts = {{3, 9, 4}, {5, 1, 1}, {2, 2, 8}};
    std::vector<int64_t> stops = {alone(toy, opts, prompts[1])[3]};
    opts.eos_token_ids = stops.data();
    opts.num_eos_token_ids = 1;
    GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
    ASSERT_TRUE(generator) << onnxc_last_error();
    std::vector<std::vector<int64_t>> got = batch(generator.get(), prompts);
    EXPECT_EQ(onnxc_generator_rows(generator.get()), 3);
    for (size_t r = 0; r < prompts.size(); ++r)
      EXPECT_EQ(got[r], alone(toy, opts, prompts[r])) << "row " << r << " cache " << cache;
    EXPECT_LE(got[1].size(), 4u);
  }
}

TEST(GeneratorBatch, PromptsRunApartGetTheirTokensAlone) {
  // Lengths far apart make prefill_batch run the prompts in groups of
  // similar lengths (the rows of 20 and 19 ids, those of 1 to 3) and copy each
  // row's cache behind its padding; the padded toy sums the ids under mask
  // 1 from its cache, so a row placed wrong, or the first logits of another
  // row, changes its tokens. Greedy with a stop and log-probabilities, and
  // sampling, where every row draws as alone.
  ToyDecoder toy(true, true, true);
  std::vector<std::vector<int64_t>> prompts = {
      {5, 1}, std::vector<int64_t>(20, 3), {9}, std::vector<int64_t>(19, 7), {2, 2, 8}};
  for (bool sample : {false, true}) {
    onnxc_generate_options opts = greedyOptions(6);
    opts.logprobs = 1;
    opts.do_sample = sample;
    opts.seed = 11;
    std::vector<int64_t> stops = {alone(toy, opts, prompts[3])[2]};
    opts.eos_token_ids = stops.data();
    opts.num_eos_token_ids = 1;
    GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
    ASSERT_TRUE(generator) << onnxc_last_error();
    std::vector<std::vector<int64_t>> got = batch(generator.get(), prompts);
    for (size_t r = 0; r < prompts.size(); ++r)
      EXPECT_EQ(got[r], alone(toy, opts, prompts[r])) << "row " << r << " sample " << sample;
    EXPECT_EQ(got[3].size(), 3u);
  }
  // The first tokens' top log-probabilities come from each row's own logits.
  onnxc_generate_options opts = greedyOptions(2);
  opts.top_logprobs = 2;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  std::vector<const int64_t *> starts;
  std::vector<int64_t> counts;
  for (const auto &prompt : prompts) {
    starts.push_back(prompt.data());
    counts.push_back(int64_t(prompt.size()));
  }
  ASSERT_EQ(onnxc_generator_prefill_batch(generator.get(), starts.data(), counts.data(), 5), 0);
  std::vector<int64_t> tokens(5);
  std::vector<int32_t> produced(5);
  ASSERT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 1);
  for (int64_t r = 0; r < 5; ++r) {
    std::vector<int64_t> ids(2);
    float values[2];
    ASSERT_EQ(onnxc_generator_top_logprobs(generator.get(), r, ids.data(), values, 2), 2);
    EXPECT_EQ(ids, topIdsAlone(toy, prompts[size_t(r)])) << "row " << r;
  }
}

TEST(GeneratorBatch, DifferentLengthsNeedMaskAndPositions) {
  ToyDecoder toy(true); // a mask but no position ids
  onnxc_generate_options opts = greedyOptions(4);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  std::vector<int64_t> a = {1, 2, 3}, b = {4};
  const int64_t *starts[] = {a.data(), b.data()};
  int64_t counts[] = {3, 1};
  EXPECT_EQ(onnxc_generator_prefill_batch(generator.get(), starts, counts, 2), -1);
  EXPECT_NE(std::string(onnxc_generator_error(generator.get())).find("need a model with"),
            std::string::npos);
  int64_t token = 0;
  EXPECT_EQ(onnxc_generator_next(generator.get(), &token), -1);
}

TEST(GeneratorBatch, MinNewTokensAndOpenAiPenaltiesReachTheLoop) {
  ToyDecoder toy(true);
  std::vector<int64_t> prompt = {3, 9, 4};
  onnxc_generate_options opts = greedyOptions(10);
  std::vector<int64_t> greedy = alone(toy, opts, prompt);
  // The first token as a stop masked for two tokens: the loop goes on.
  opts.eos_token_id = greedy[0];
  EXPECT_EQ(alone(toy, opts, prompt).size(), 1u);
  opts.min_new_tokens = 2;
  std::vector<int64_t> held = alone(toy, opts, prompt);
  EXPECT_GE(held.size(), 2u);
  EXPECT_NE(held[0], greedy[0]);
  // OpenAI penalties, predicted by replaying the toy's rule with them: the
  // logits are -((v - target) mod 16) minus 0.75 per earlier use plus 1.5
  // once used; the argmax takes the lowest id on ties.
  opts = greedyOptions(10);
  opts.presence_penalty = 1.5f;
  opts.frequency_penalty = 0.75f;
  std::vector<int64_t> sequence(prompt), want, counts(kVocab, 0);
  for (int step = 0; step < 10; ++step) {
    int64_t sum = std::accumulate(sequence.begin(), sequence.end(), int64_t(0));
    int64_t target = nextId(sum, int64_t(sequence.size()));
    int64_t best = 0;
    float bestLogit = -INFINITY;
    for (int64_t v = 0; v < kVocab; ++v) {
      float logit = -float((v - target + kVocab) % kVocab) - 0.75f * float(counts[size_t(v)]) -
                    (counts[size_t(v)] > 0 ? 1.5f : 0.0f);
      if (logit > bestLogit) {
        bestLogit = logit;
        best = v;
      }
    }
    ++counts[size_t(best)];
    want.push_back(best);
    sequence.push_back(best);
  }
  EXPECT_EQ(alone(toy, opts, prompt), want);
  EXPECT_NE(want, alone(toy, greedyOptions(10), prompt));
}

TEST(GeneratorBatch, LogprobsPerRow) {
  ToyDecoder toy(true);
  onnxc_generate_options opts = greedyOptions(3);
  opts.top_logprobs = 2;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  std::vector<int64_t> prompt = {3, 9, 4};
  ASSERT_EQ(onnxc_generator_prefill(generator.get(), prompt.data(), 3), 0);
  int64_t token = 0;
  ASSERT_EQ(onnxc_generator_next(generator.get(), &token), 1);
  // The toy's logits are -((v - target) mod 16): the target's log-softmax
  // is -log(sum_k e^-k).
  double normalizer = 0;
  for (int k = 0; k < kVocab; ++k)
    normalizer += std::exp(-double(k));
  float logprob = 0;
  ASSERT_EQ(onnxc_generator_logprob(generator.get(), 0, &logprob), 0);
  EXPECT_NEAR(logprob, -std::log(normalizer), 1e-5);
  int64_t ids[4];
  float values[4];
  ASSERT_EQ(onnxc_generator_top_logprobs(generator.get(), 0, ids, values, 4), 2);
  EXPECT_EQ(ids[0], token);
  EXPECT_EQ(ids[1], (token + 1) % kVocab);
  EXPECT_NEAR(values[1], -1 - std::log(normalizer), 1e-5);
  EXPECT_EQ(onnxc_generator_logprob(generator.get(), 1, &logprob), -1);
  opts.top_logprobs = 0;
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_EQ(onnxc_generator_prefill(generator.get(), prompt.data(), 3), 0);
  ASSERT_EQ(onnxc_generator_next(generator.get(), &token), 1);
  EXPECT_EQ(onnxc_generator_logprob(generator.get(), 0, &logprob), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "log-probabilities are off: set the logprobs option");
}

TEST(GeneratorBatch, BeamSearchReordersRowsAndReturnsTheBest) {
  // The toy's rule is deterministic with log-probabilities -k - log Z: the
  // best sequence is the greedy one (every step's best id, score
  // n * -log Z / n), and the second differs from it.
  ToyDecoder toy(true);
  onnxc_generate_options opts = greedyOptions(6);
  std::vector<int64_t> prompt = {3, 9, 4}, greedy = alone(toy, opts, prompt);
  opts.num_beams = 3;
  opts.num_return_sequences = 2;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  ASSERT_EQ(onnxc_generator_beam_search(generator.get(), prompt.data(), 3), 2)
      << onnxc_generator_error(generator.get());
  const int64_t *tokens = nullptr;
  float best = 0, second = 0;
  ASSERT_EQ(onnxc_generator_sequence(generator.get(), 0, &tokens, &best), 6);
  EXPECT_EQ(std::vector<int64_t>(tokens, tokens + 6), greedy);
  ASSERT_EQ(onnxc_generator_sequence(generator.get(), 1, &tokens, &second), 6);
  EXPECT_NE(std::vector<int64_t>(tokens, tokens + 6), greedy);
  EXPECT_LT(second, best);
  EXPECT_EQ(onnxc_generator_sequence(generator.get(), 2, &tokens, &best), -1);
}

TEST(GeneratorBatch, BadArgumentsAreOneLine) {
  ToyDecoder toy(true);
  auto refused = [&](onnxc_generate_options opts, const std::string &part) {
    GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
    EXPECT_FALSE(generator);
    std::string error = onnxc_last_error();
    EXPECT_NE(error.find(part), std::string::npos) << error;
    EXPECT_EQ(error.find('\n'), std::string::npos);
  };
  onnxc_generate_options opts = greedyOptions(4);
  opts.num_beams = 0;
  refused(opts, "num_beams is 0");
  opts = greedyOptions(4);
  opts.num_beams = 2;
  opts.num_return_sequences = 3;
  refused(opts, "num_return_sequences is 3");
  opts = greedyOptions(4);
  opts.repetition_penalty = -1.5f;
  refused(opts, "repetition_penalty is -1.5");
  opts = greedyOptions(4);
  opts.num_eos_token_ids = 2;
  refused(opts, "eos_token_ids is NULL");
  opts = greedyOptions(4);
  opts.min_p = 1.5f;
  refused(opts, "min_p is 1.5");
  // Rows longer than a preset capacity.
  opts = greedyOptions(4);
  opts.capacity = 4;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  std::vector<int64_t> a = {1, 2, 3, 4, 5}, b = {1, 2, 3, 4, 5};
  const int64_t *starts[] = {a.data(), b.data()};
  int64_t counts[] = {5, 5};
  EXPECT_EQ(onnxc_generator_prefill_batch(generator.get(), starts, counts, 2), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "the prompts' longest row has 5 tokens but the capacity is 4 positions (the capacity "
            "option)");
  EXPECT_EQ(onnxc_generator_prefill_batch(generator.get(), starts, counts, 0), -1);
  EXPECT_EQ(onnxc_generator_beam_search(generator.get(), a.data(), 5), -1);
  EXPECT_NE(std::string(onnxc_generator_error(generator.get())).find("num_beams >= 2"),
            std::string::npos);
}
