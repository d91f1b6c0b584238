//===- runtime/generate/Sampler.cpp - Choosing the next token from logits -===//
#include "Sampler.h"

#include <algorithm>
#include <cmath>

namespace onnxc::runtime {

namespace {

uint64_t rotateLeft(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t splitmix64(uint64_t &state) {
  uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/// NaN logits rank below every number, so a broken row cannot pick them.
float rankable(float value) { return std::isnan(value) ? -INFINITY : value; }

/// Drops the candidates less likely than minP times the most likely one
/// and renormalizes the rest; the most likely always stays.
void keepAboveMinP(std::vector<int64_t> &ids, std::vector<double> &probabilities, float minP) {
  double largest = *std::max_element(probabilities.begin(), probabilities.end());
  double threshold = double(minP) * largest, mass = 0;
  size_t kept = 0;
  for (size_t i = 0; i < ids.size(); ++i) {
    if (probabilities[i] < threshold)
      continue;
    ids[kept] = ids[i];
    probabilities[kept++] = probabilities[i];
    mass += probabilities[i];
  }
  ids.resize(kept);
  probabilities.resize(kept);
  for (double &p : probabilities)
    p /= mass;
}

} // namespace

void Xoshiro256::reseed(uint64_t seed) {
  for (uint64_t &word : state_)
    word = splitmix64(seed);
}

uint64_t Xoshiro256::next() {
  uint64_t result = rotateLeft(state_[1] * 5, 7) * 9;
  uint64_t t = state_[1] << 17;
  state_[2] ^= state_[0];
  state_[3] ^= state_[1];
  state_[1] ^= state_[2];
  state_[0] ^= state_[3];
  state_[2] ^= t;
  state_[3] = rotateLeft(state_[3], 45);
  return result;
}

int64_t argmax(const float *values, int64_t count) {
  // Two passes the compiler vectorizes, where the one-pass loop carried its index through every
  // comparison (a vocabulary of 50,257 took 4% of an 8-row GPT-2 step): the largest value over
  // independent lanes (`v > m ? v : m` skips NaN, which ranks lowest), then the first index that
  // holds it, so ties go to the lowest id.
  constexpr int64_t kLanes = 16;
  float lanes[kLanes];
  std::fill(lanes, lanes + kLanes, -INFINITY);
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes)
    for (int64_t j = 0; j < kLanes; ++j)
      lanes[j] = values[i + j] > lanes[j] ? values[i + j] : lanes[j];
  float largest = -INFINITY;
  for (float lane : lanes)
    largest = lane > largest ? lane : largest;
  for (; i < count; ++i)
    largest = values[i] > largest ? values[i] : largest;
  for (int64_t k = 0; k < count; ++k)
    if (rankable(values[k]) == largest)
      return k;
  return 0;
}

void Sampler::candidates(const float *logits, int64_t vocab, std::vector<int64_t> &ids,
                         std::vector<double> &probabilities) {
  ids.clear();
  probabilities.clear();
  if (vocab <= 0)
    return;
  if (!params_.sample || !(params_.temperature > 0)) {
    ids.push_back(argmax(logits, vocab));
    probabilities.push_back(1.0);
    return;
  }
  ids.resize(size_t(vocab));
  for (int64_t i = 0; i < vocab; ++i)
    ids[size_t(i)] = i;
  auto moreLikely = [logits](int64_t a, int64_t b) {
    float x = rankable(logits[a]), y = rankable(logits[b]);
    return x > y || (x == y && a < b);
  };
  int64_t keep = vocab;
  if (params_.topK > 0 && params_.topK < vocab)
    keep = params_.topK;
  bool filterByMass = params_.topP < 1.0f;
  if (keep < vocab || filterByMass) {
    // Only the kept prefix needs an order; a full sort only for top-p alone.
    std::partial_sort(ids.begin(), ids.begin() + keep, ids.end(), moreLikely);
    ids.resize(size_t(keep));
  }
  // Softmax of logit / T over the kept ids, from the largest for stability.
  float largest = rankable(logits[argmax(logits, vocab)]);
  double total = 0;
  probabilities.resize(ids.size());
  for (size_t i = 0; i < ids.size(); ++i) {
    float logit = rankable(logits[ids[i]]);
    double p = logit == -INFINITY ? 0.0 : std::exp(double(logit - largest) / params_.temperature);
    probabilities[i] = p;
    total += p;
  }
  if (!(total > 0)) {
    // Every kept logit is -inf or NaN: nothing to weigh; fall back to argmax.
    ids.assign(1, argmax(logits, vocab));
    probabilities.assign(1, 1.0);
    return;
  }
  for (double &p : probabilities)
    p /= total;
  if (filterByMass) {
    // The smallest most-likely prefix whose mass reaches top_p (at least one id).
    double mass = 0;
    size_t count = 0;
    while (count < ids.size()) {
      mass += probabilities[count++];
      if (mass >= double(params_.topP))
        break;
    }
    ids.resize(count);
    probabilities.resize(count);
    for (double &p : probabilities)
      p /= mass;
  }
  if (params_.minP > 0.0f)
    keepAboveMinP(ids, probabilities, params_.minP);
}

int64_t Sampler::choose(const float *logits, int64_t vocab) {
  candidates(logits, vocab, ids_, probabilities_);
  if (ids_.size() == 1)
    return ids_[0];
  double u = rng_.uniform(), cumulative = 0;
  for (size_t i = 0; i < ids_.size(); ++i) {
    cumulative += probabilities_[i];
    if (u < cumulative)
      return ids_[i];
  }
  // Rounding left the sum a hair below u: the last candidate takes it.
  return ids_.back();
}

} // namespace onnxc::runtime
