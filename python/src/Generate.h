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
  std::vector<int64_t> tokens;
  int32_t mode = 0;        ///< onnxc_generate_mode
  std::string description; ///< onnxc_generator_describe
};

/// Runs one generation on the runner's model (a generator of its own, so
/// it does not hold one of the runner's sessions). With an `encoder`, the
/// generation is encoder-decoder: the encoder runs once on `source` first.
/// `onToken`, when set, is called with each token as it comes and may throw
/// to stop. Throws onnxc::Error with the generator's one-line message.
GenerateResult generateTokens(const ModelRunner &runner, const std::vector<int64_t> &prompt,
                              const onnxc_generate_options &options,
                              const std::function<void(int64_t)> &onToken,
                              const ModelRunner *encoder = nullptr,
                              const std::vector<int64_t> &source = {});

} // namespace onnxc::python
