//===- tests/unit/runtime/GenerateSamplerTest.cpp - Greedy, top-k, top-p, the RNG --===//
#include "runtime/generate/Sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>
#include <set>

using namespace onnxc::runtime;

namespace {

SamplingParams sampling(float temperature, int32_t topK = 0, float topP = 1.0f) {
  SamplingParams params;
  params.sample = true;
  params.temperature = temperature;
  params.topK = topK;
  params.topP = topP;
  return params;
}

const std::vector<float> kLogits = {0.5f, 2.0f, -1.0f, 3.0f, 2.0f, 0.0f, 1.0f, -3.0f};

std::set<int64_t> keptSet(const SamplingParams &params, const std::vector<float> &logits) {
  Sampler sampler(params, 0);
  std::vector<int64_t> ids;
  std::vector<double> probabilities;
  sampler.candidates(logits.data(), int64_t(logits.size()), ids, probabilities);
  double sum = 0;
  for (double p : probabilities)
    sum += p;
  EXPECT_NEAR(sum, 1.0, 1e-12);
  return {ids.begin(), ids.end()};
}

} // namespace

TEST(GenerateSampler, GreedyIsArgmaxWithTheLowestIdOnTies) {
  Sampler greedy(SamplingParams{}, 7);
  EXPECT_EQ(greedy.choose(kLogits.data(), int64_t(kLogits.size())), 3);
  std::vector<float> tie = {1.0f, 4.0f, 4.0f, NAN};
  EXPECT_EQ(greedy.choose(tie.data(), 4), 1);
  std::vector<float> nanFirst = {NAN, -5.0f, -2.0f};
  EXPECT_EQ(argmax(nanFirst.data(), 3), 2);
}

TEST(GenerateSampler, ArgmaxOfLongRowsMatchesTheOnePassDefinition) {
  // Rows longer than the vectorized argmax's lanes: ties across lanes and blocks, NaN and -inf
  // runs, the largest in the tail, against "the first index of the largest, NaN lowest".
  std::mt19937 random(11);
  std::uniform_real_distribution<float> uniform(-4.0f, 4.0f);
  for (int64_t count : {1, 15, 16, 17, 50257}) {
    for (int variant = 0; variant < 5; ++variant) {
      std::vector<float> row(static_cast<size_t>(count));
      for (float &value : row)
        value = variant == 4 ? NAN : uniform(random);
      if (variant == 1 && count > 3) // a tie between two lanes of different blocks
        row[size_t(count / 3)] = row[size_t(count - 2)] = 9.0f;
      if (variant == 2) // the largest in the tail after the full blocks
        row.back() = 9.0f;
      if (variant == 3) // NaN everywhere before the largest, -inf after it
        for (int64_t i = 0; i < count; ++i)
          row[size_t(i)] = i < count / 2 ? NAN : i == count / 2 ? -1.0f : -INFINITY;
      int64_t expected = 0;
      for (int64_t i = 1; i < count; ++i) {
        float best = std::isnan(row[size_t(expected)]) ? -INFINITY : row[size_t(expected)];
        if (!std::isnan(row[size_t(i)]) && row[size_t(i)] > best)
          expected = i;
      }
      EXPECT_EQ(argmax(row.data(), count), expected)
          << "count " << count << ", variant " << variant;
    }
  }
}

TEST(GenerateSampler, TopKKeepsTheKLargest) {
  EXPECT_EQ(keptSet(sampling(1.0f, 1), kLogits), (std::set<int64_t>{3}));
  // Ids 1 and 4 tie at 2.0: with k = 2 the lower id is kept.
  EXPECT_EQ(keptSet(sampling(1.0f, 2), kLogits), (std::set<int64_t>{3, 1}));
  EXPECT_EQ(keptSet(sampling(1.0f, 4), kLogits), (std::set<int64_t>{3, 1, 4, 6}));
  EXPECT_EQ(keptSet(sampling(1.0f, 100), kLogits).size(), kLogits.size());
}

TEST(GenerateSampler, TopPKeepsTheSmallestSetReachingTheMass) {
  // Probabilities of 3.0, 2.0, 2.0, 1.0, ... at temperature 1 are about
  // 0.49, 0.18, 0.18, 0.07, 0.04: p = 0.5 needs the top two, 0.7 three.
  EXPECT_EQ(keptSet(sampling(1.0f, 0, 0.3f), kLogits), (std::set<int64_t>{3}));
  EXPECT_EQ(keptSet(sampling(1.0f, 0, 0.5f), kLogits), (std::set<int64_t>{3, 1}));
  EXPECT_EQ(keptSet(sampling(1.0f, 0, 0.7f), kLogits), (std::set<int64_t>{3, 1, 4}));
  // top-k applies first: within the top 2, p = 0.99 keeps both.
  EXPECT_EQ(keptSet(sampling(1.0f, 2, 0.99f), kLogits), (std::set<int64_t>{3, 1}));
}

TEST(GenerateSampler, ProbabilitiesFollowTheTemperature) {
  Sampler sampler(sampling(2.0f), 0);
  std::vector<int64_t> ids;
  std::vector<double> probabilities;
  sampler.candidates(kLogits.data(), int64_t(kLogits.size()), ids, probabilities);
  std::map<int64_t, double> byId;
  for (size_t i = 0; i < ids.size(); ++i)
    byId[ids[i]] = probabilities[i];
  // p(3) / p(1) = exp((3 - 2) / 2).
  EXPECT_NEAR(byId[3] / byId[1], std::exp(0.5), 1e-9);
}

TEST(GenerateSampler, AFixedSeedGivesAFixedSequence) {
  std::vector<int64_t> first, second, other;
  Sampler a(sampling(1.0f), 42), b(sampling(1.0f), 42), c(sampling(1.0f), 43);
  for (int i = 0; i < 64; ++i) {
    first.push_back(a.choose(kLogits.data(), int64_t(kLogits.size())));
    second.push_back(b.choose(kLogits.data(), int64_t(kLogits.size())));
    other.push_back(c.choose(kLogits.data(), int64_t(kLogits.size())));
  }
  EXPECT_EQ(first, second);
  EXPECT_NE(first, other);
  // Reseeding restarts the sequence.
  a.reseed(42);
  EXPECT_EQ(a.choose(kLogits.data(), int64_t(kLogits.size())), first[0]);
  // Sampling is not greedy: more than one id comes up in 64 draws.
  EXPECT_GT(std::set<int64_t>(first.begin(), first.end()).size(), 1u);
}

TEST(GenerateSampler, XoshiroMatchesItsDefinition) {
  // splitmix64(0) gives the first state word; the generator's first output
  // is rotl(s1 * 5, 7) * 9 of the seeded state, recomputed here.
  uint64_t seed = 0;
  auto splitmix = [&seed] {
    uint64_t z = (seed += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  uint64_t s0 = splitmix(), s1 = splitmix();
  (void)s0;
  EXPECT_EQ(s0, 0xe220a8397b1dcdafULL); // splitmix64's published first output for seed 0
  uint64_t x = s1 * 5;
  Xoshiro256 rng(0);
  EXPECT_EQ(rng.next(), ((x << 7) | (x >> 57)) * 9);
  double u = rng.uniform();
  EXPECT_GE(u, 0.0);
  EXPECT_LT(u, 1.0);
}

TEST(GenerateSampler, TemperatureTowardZeroIsGreedy) {
  std::vector<float> logits = {0.1f, 0.7f, 0.69f, -2.0f, 0.3f};
  Sampler greedy(SamplingParams{}, 0), cold(sampling(1e-4f), 5), zero(sampling(0.0f), 5);
  for (int i = 0; i < 32; ++i) {
    EXPECT_EQ(cold.choose(logits.data(), 5), greedy.choose(logits.data(), 5));
    EXPECT_EQ(zero.choose(logits.data(), 5), 1);
  }
}

TEST(GenerateSampler, DrawsFollowTheDistribution) {
  // Two ids at logits 0 and log 3: about 1/4 and 3/4 of 4000 draws.
  std::vector<float> logits = {0.0f, float(std::log(3.0))};
  Sampler sampler(sampling(1.0f), 9);
  int ones = 0;
  for (int i = 0; i < 4000; ++i)
    ones += sampler.choose(logits.data(), 2) == 1;
  EXPECT_NEAR(ones / 4000.0, 0.75, 0.03);
}
