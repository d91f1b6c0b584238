//===- text/TextGeneration.h - Text in, text out over a generator ------------===//
//
// The loop behind onnxc_text_generate: encode the prompts, run a generator
// through the functions the caller gives (libonnxc_text links no runtime:
// onnxc_text_generate.h says why), stream each row's ids back into text and
// apply the stop strings. The command line, the Python package and C
// programs all run this one loop.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc_text_generate.h"
#include "text/Tokenizer.h"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxc::text {

struct TextRequest {
  std::vector<std::string> stops;
  bool addSpecialTokens = true;
  bool applyLimits = true;
  bool skipSpecialTokens = true;
  int addBos = -1; ///< -1: as the tokenizer says; 0: drop a leading bos; 1: ensure one
  int64_t bosTokenId = -1;
  /// Called with (row, piece) as text is decided; returns true to end the
  /// whole generation.
  std::function<bool(int64_t, std::string_view)> onText;
};

struct TextRow {
  std::vector<int64_t> promptIds;
  std::vector<int64_t> ids; ///< generated, the one completing a stop included
  std::string text;         ///< cut before a stop string
  int32_t stopIndex = -1;
};

/// The prompt's ids as generation starts from them (add_bos applied).
std::vector<int64_t> encodePrompt(const Tokenizer &tokenizer, std::string_view prompt,
                                  const TextRequest &request);

/// Runs the generation; throws onnxc::Error with one line (the generator's
/// error, a prompt that does not encode, a stop string that is empty).
std::vector<TextRow> generateText(const Tokenizer &tokenizer, onnxc_generator *generator,
                                  const onnxc_text_generation_api &api,
                                  const std::vector<std::string_view> &prompts,
                                  const TextRequest &request);

} // namespace onnxc::text
