//===- tests/unit/GeneratorTestSupport.h - What the generator tests share -===//
#pragma once

#include "onnxc/onnxc_generate.h"

#include <cstdint>
#include <memory>

namespace onnxc::runtime::testing {

struct GeneratorDeleter {
  void operator()(onnxc_generator *generator) const { onnxc_generator_destroy(generator); }
};
/// Destroys the generator (onnxc_generator_destroy) when it goes.
using GeneratorPtr = std::unique_ptr<onnxc_generator, GeneratorDeleter>;

/// The defaults (greedy) with `maxNewTokens`, `capacity` (0: prompt +
/// max_new_tokens) and one thread.
inline onnxc_generate_options greedyOptions(int64_t maxNewTokens, int64_t capacity = 0) {
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = maxNewTokens;
  options.capacity = capacity;
  options.num_threads = 1;
  return options;
}

} // namespace onnxc::runtime::testing
