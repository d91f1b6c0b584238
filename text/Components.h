//===- text/Components.h - The stages of a tokenizer pipeline ---------------===//
//
// HF tokenizers runs text through normalizer -> pre-tokenizer -> model ->
// post-processor, and ids back through the decoder. onnxc produces ids, not
// offsets, so each stage works on plain strings: a normalizer rewrites a
// string in place, a pre-tokenizer cuts splits into smaller splits, a model
// turns one split into ids.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace onnxc::text {

/// A piece of the input on its way to the model. `atStart` says the piece
/// begins at offset 0 of the original text (Metaspace's prepend_scheme "first").
struct Split {
  std::string text;
  bool atStart = false;
};

class Normalizer {
public:
  virtual ~Normalizer() = default;
  virtual void normalize(std::string &text) const = 0;
};

class PreTokenizer {
public:
  virtual ~PreTokenizer() = default;
  /// Replaces `splits` with its pieces; empty pieces are dropped as HF does.
  virtual void preTokenize(std::vector<Split> &splits) const = 0;
};

class Model {
public:
  virtual ~Model() = default;
  /// Appends the ids of one pre-tokenized word.
  virtual void tokenize(std::string_view word, std::vector<uint32_t> &ids) const = 0;
  virtual std::optional<uint32_t> tokenToId(std::string_view token) const = 0;
  /// The token of `id`, or nullptr when the model has no such id.
  virtual const std::string *idToToken(uint32_t id) const = 0;
  /// One past the largest id of the model's vocabulary.
  virtual size_t vocabSize() const = 0;
};

class PostProcessor {
public:
  virtual ~PostProcessor() = default;
  /// Adds the special tokens around one encoded sequence (add_special_tokens).
  virtual void process(std::vector<uint32_t> &ids) const = 0;
  /// How many ids process() adds (truncation leaves room for them).
  virtual size_t addedCount() const = 0;
};

class Decoder {
public:
  virtual ~Decoder() = default;
  /// HF's decode_chain: tokens in, tokens out; the caller concatenates them.
  virtual void decodeChain(std::vector<std::string> &tokens) const = 0;
};

} // namespace onnxc::text
