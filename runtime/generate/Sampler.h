//===- runtime/generate/Sampler.h - Choosing the next token from logits ---===//
//
// Greedy, temperature, top-k, top-p and min-p sampling with an RNG of our own
// (xoshiro256** seeded by splitmix64), so a seed gives the same tokens with
// every standard library: std::mt19937 is portable but the std::*_distribution
// algorithms are not. The scratch vectors grow once to the vocabulary size;
// a call after that allocates nothing.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <vector>

namespace onnxc::runtime {

/// xoshiro256** (Blackman and Vigna), its state filled by splitmix64 from
/// one 64-bit seed as its authors recommend.
class Xoshiro256 {
public:
  explicit Xoshiro256(uint64_t seed) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next();
  /// A double in [0, 1) from the top 53 bits.
  double uniform() { return double(next() >> 11) * 0x1.0p-53; }

private:
  uint64_t state_[4];
};

struct SamplingParams {
  bool sample = false;      ///< false: greedy.
  float temperature = 1.0f; ///< <= 0 means greedy.
  int32_t topK = 0;         ///< 0: no limit.
  float topP = 1.0f;        ///< >= 1: no limit.
  /// HF's min_p (transformers 4.41's MinPLogitsWarper, after top-p): drop the
  /// ids less likely than min_p times the most likely one; 0: none.
  float minP = 0.0f;
};

class Sampler {
public:
  Sampler(const SamplingParams &params, uint64_t seed) : params_(params), rng_(seed) {}

  void reseed(uint64_t seed) { rng_.reseed(seed); }
  /// The chosen id in [0, vocab). `logits` holds `vocab` floats.
  int64_t choose(const float *logits, int64_t vocab);

  /// The ids sampling may pick from with their probabilities after
  /// temperature, top-k, top-p and min-p, renormalized: most likely first (ties:
  /// lower id first) when top-k or top-p applies, else every id in order;
  /// greedy gives the argmax alone. For tests and for choose().
  void candidates(const float *logits, int64_t vocab, std::vector<int64_t> &ids,
                  std::vector<double> &probabilities);

  /// The candidates of the last choose(), for its log-probabilities.
  const std::vector<int64_t> &lastIds() const { return ids_; }
  const std::vector<double> &lastProbabilities() const { return probabilities_; }
  const SamplingParams &params() const { return params_; }

private:
  SamplingParams params_;
  Xoshiro256 rng_;
  std::vector<int64_t> ids_;
  std::vector<double> probabilities_;
};

/// The index of the largest value; the lowest index among equal ones, and
/// NaNs never win.
int64_t argmax(const float *values, int64_t count);

} // namespace onnxc::runtime
