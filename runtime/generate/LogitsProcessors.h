//===- runtime/generate/LogitsProcessors.h - Penalties, stops and log-probabilities -===//
//
// What a generation does to a row of logits before it chooses, in the order
// HF transformers' generate applies its processors (4.40, _get_logits_processor),
// so a generation with the same options picks what transformers picks:
// repetition_penalty first (HF's: a positive logit is divided by the penalty,
// a negative one multiplied, for every id in the prompt and the output), then
// OpenAI's presence and frequency penalties (logit -= frequency * count +
// presence * [count > 0], over the generated ids; transformers has none, they
// sit beside the repetition penalty as vLLM puts them), then min_new_tokens
// (every stop id at -inf until that many are generated). The sampler's warpers
// (temperature, top-k, top-p, min-p) come after, in Sampler.
//
// Log-probabilities are the log-softmax of the row that chooses: the
// processed logits for greedy and beam search, the warped distribution for
// sampling (transformers' output_scores are the same scores).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::runtime {

struct ProcessorParams {
  float repetitionPenalty = 1.0f; ///< HF repetition_penalty; 1: none.
  float presencePenalty = 0.0f;   ///< OpenAI presence_penalty; 0: none.
  float frequencyPenalty = 0.0f;  ///< OpenAI frequency_penalty; 0: none.
  int64_t minNewTokens = 0;       ///< Stop ids masked until this many are generated.
  std::vector<int64_t> stopIds;   ///< Any of these ends a row (eos_token_id and the list).

  bool penalizes() const {
    return repetitionPenalty != 1.0f || presencePenalty != 0.0f || frequencyPenalty != 0.0f;
  }
  bool isStop(int64_t token) const;
};

/// Why the penalties cannot be used (repetition_penalty must be > 0, the
/// OpenAI penalties within [-2, 2] as OpenAI accepts them, min_new_tokens
/// >= 0, stop ids >= 0), or empty.
std::string checkProcessorParams(const ProcessorParams &params);

/// Applies the penalties to `logits` (`vocab` floats) for a row whose prompt
/// is `prompt` and whose generated ids are `generated`. Ids outside
/// [0, vocab) are ignored. `seen` is scratch that grows to the vocabulary
/// once; it is left all zero.
void applyPenalties(float *logits, int64_t vocab, const ProcessorParams &params,
                    const int64_t *prompt, int64_t promptLength, const int64_t *generated,
                    int64_t generatedLength, std::vector<int32_t> &seen);

/// Sets every stop id's logit to -inf while fewer than min_new_tokens ids
/// are generated.
void maskStopsBeforeMinimum(float *logits, int64_t vocab, const ProcessorParams &params,
                            int64_t generatedLength);

/// log(sum(exp(logits))), the -inf logits (and NaNs) counting for nothing;
/// -inf when every logit is.
double logSumExp(const float *logits, int64_t vocab);

/// The log-softmax of `logits` at each of `ids`, into `logprobs`.
void logSoftmaxAt(const float *logits, int64_t vocab, const int64_t *ids, int64_t count,
                  float *logprobs);

/// The `n` most likely ids of `logits` (ties: the lower id first) with their
/// log-softmax, most likely first; fewer when the vocabulary is smaller.
void topLogprobs(const float *logits, int64_t vocab, int32_t n, std::vector<int64_t> &ids,
                 std::vector<float> &logprobs);

} // namespace onnxc::runtime
