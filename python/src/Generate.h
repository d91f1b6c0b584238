//===- python/src/Generate.h - Model.generate over the runtime's generator -===//
#pragma once

#include "onnxc/onnxc_generate.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace onnxc::python {

class ModelRunner;

struct GenerateResult {
  /// Per prompt (or, for beam search, per returned sequence) the new ids.
  std::vector<std::vector<int64_t>> rows;
  /// With options.logprobs: per row, each token's log-probability and, with
  /// top_logprobs, its alternatives (id, log-probability).
  std::vector<std::vector<float>> logprobs;
  std::vector<std::vector<std::vector<std::pair<int64_t, float>>>> topLogprobs;
  std::vector<float> scores; ///< Beam search: each sequence's score.
  int32_t mode = 0;          ///< onnxc_generate_mode
  std::string description;   ///< onnxc_generator_describe
};

/// Runs one generation on the runner's model (a generator of its own, so
/// it does not hold one of the runner's sessions): one prompt, a batch of
/// them, or (options.num_beams > 1) a beam search on one. With an `encoder`,
/// the generation is encoder-decoder: the encoder runs once on `source`
/// first. `onToken`, when set, is called with each token of row 0 as it
/// comes (one prompt only) and may throw to stop. Throws onnxc::Error with
/// the generator's one-line message.
GenerateResult
generateTokens(const ModelRunner &runner, const std::vector<std::vector<int64_t>> &prompts,
               const onnxc_generate_options &options, const std::function<void(int64_t)> &onToken,
               const ModelRunner *encoder = nullptr, const std::vector<int64_t> &source = {});

} // namespace onnxc::python
