//===- tools/onnxc/GenerateText.h - onnxc generate --prompt "text" ----------===//
//
// Text in, text out on the command line: the prompts are encoded with the
// model folder's tokenizer (or --tokenizer), and the generated ids come back
// as text through libonnxc_text's onnxc_text_generate, the loop C programs
// and Python run too: streaming (--stream prints each piece as it is whole)
// and stop strings (--stop, cut before the stop as OpenAI does).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "driver/ModelFolder.h"
#include "onnxc/onnxc_generate.h"
#include "onnxc/onnxc_text_generate.h"
#include "tools/onnxc/CommandLine.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// The text side of a generation: the tokenizer, the prompts and the
/// options of onnxc_text_generate.
class TextPrompts {
public:
  /// Opens the tokenizer (--tokenizer, the folder's, or the one beside a
  /// model file) and reads --prompt (or renders --chat's messages with the
  /// chat template), --stop; fails in one line without one.
  TextPrompts(const ParsedArgs &args, const ModelFolder *folder, const std::string &modelPath);
  ~TextPrompts();

  /// The ids of the longest prompt (to size max_new_tokens from a max_length).
  std::vector<int64_t> longestPromptIds() const;
  size_t rows() const { return prompts_.size(); }

  /// Runs the generation and prints the text: one prompt as it is (as it
  /// comes with --stream), several as one JSON string per line.
  void generate(onnxc_generator *generator, const std::string &path, bool stream, bool bench);
  /// A beam search on the one prompt: one line per returned sequence.
  void generateBeams(onnxc_generator *generator, const std::string &path);

private:
  onnxc_tokenizer *tokenizer_ = nullptr;
  std::vector<std::string> prompts_;
  std::vector<std::string> stops_;
  std::vector<const char *> stopPointers_;
  onnxc_text_generate_options options_;
};

/// The options of text generation (--prompt, --stop, --tokenizer, ...).
std::vector<OptionSpec> textOptionSpecs();

} // namespace onnxc
