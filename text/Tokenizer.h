//===- text/Tokenizer.h - Text to token ids and back -------------------------===//
//
// The C++ face of onnxc's tokenizers: an HF tokenizer.json pipeline or a
// SentencePiece .model, loaded from a file or a model folder. Encoding and
// decoding follow HF tokenizers' defaults: add_special_tokens=true for
// encode, skip_special_tokens=true for decode. A tokenizer is immutable once
// loaded and may be used from several threads at once.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace onnxc::text {

class Tokenizer {
public:
  virtual ~Tokenizer() = default;

  /// The ids of `text` (valid UTF-8, else an error naming the byte). With
  /// `applyLimits`, the truncation and padding the tokenizer file asks for are
  /// applied, as HF's encode does.
  virtual std::vector<uint32_t> encode(std::string_view text, bool addSpecialTokens = true,
                                       bool applyLimits = true) const = 0;
  /// The text of `ids`; ids the tokenizer does not know are left out, as HF does.
  virtual std::string decode(std::span<const uint32_t> ids,
                             bool skipSpecialTokens = true) const = 0;

  virtual std::optional<uint32_t> tokenToId(std::string_view token) const = 0;
  /// The token string of `id` (added tokens included), or nullopt.
  virtual std::optional<std::string> idToToken(uint32_t id) const = 0;
  /// One past the largest id, added tokens included.
  virtual size_t vocabSize() const = 0;
};

/// Reads an HF tokenizer.json (`name` is used in error messages).
std::unique_ptr<Tokenizer> tokenizerFromJson(std::string_view json, const std::string &name);
/// Reads a SentencePiece model (the bytes of a .model file).
std::unique_ptr<Tokenizer> tokenizerFromSentencePiece(std::string_view model,
                                                      const std::string &name);

/// Loads `path`: a tokenizer.json, a SentencePiece .model, or a folder with
/// tokenizer.json (preferred) or tokenizer.model in it.
std::unique_ptr<Tokenizer> loadTokenizer(const std::string &path);

} // namespace onnxc::text
