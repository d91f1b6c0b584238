//===- text/SentencePieceTokenizer.cpp - SentencePiece .model files ----------===//
//
// A .model file is SentencePiece's own serialized model (normalizer rules,
// pieces, scores); Debian's libsentencepiece reads and runs it exactly as the
// Python package does, so onnxc does not reimplement its normalizer.
// add_special_tokens puts the model's BOS in front (the LLaMA and Mistral
// convention); control tokens decode to nothing, as in SentencePiece.
//
//===----------------------------------------------------------------------===//
#include "text/Tokenizer.h"

#include "ir/Error.h"
#include "text/Unicode.h"

#include <sentencepiece_processor.h>

namespace onnxc::text {
namespace {

class SentencePieceTokenizer : public Tokenizer {
public:
  SentencePieceTokenizer(std::string_view model, const std::string &name) : name_(name) {
    sentencepiece::util::Status status =
        processor_.LoadFromSerializedProto(absl::string_view(model.data(), model.size()));
    if (!status.ok())
      fail(name, ": not a SentencePiece model: ", status.ToString());
  }

  std::vector<uint32_t> encode(std::string_view text, bool addSpecialTokens,
                               bool /*applyLimits*/) const override {
    requireUtf8(text, "the text to encode");
    std::vector<int> ids;
    sentencepiece::util::Status status =
        processor_.Encode(absl::string_view(text.data(), text.size()), &ids);
    if (!status.ok())
      fail(name_, ": encoding failed: ", status.ToString());
    std::vector<uint32_t> out;
    out.reserve(ids.size() + 1);
    if (addSpecialTokens && processor_.bos_id() >= 0)
      out.push_back(static_cast<uint32_t>(processor_.bos_id()));
    for (int id : ids)
      out.push_back(static_cast<uint32_t>(id));
    return out;
  }

  std::string decode(std::span<const uint32_t> ids, bool skipSpecialTokens) const override {
    std::vector<int> known;
    int size = processor_.GetPieceSize();
    for (uint32_t id : ids)
      if (id < static_cast<uint32_t>(size) &&
          !(skipSpecialTokens && processor_.IsControl(static_cast<int>(id))))
        known.push_back(static_cast<int>(id));
    std::string text;
    sentencepiece::util::Status status = processor_.Decode(known, &text);
    if (!status.ok())
      fail(name_, ": decoding failed: ", status.ToString());
    return text;
  }

  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    int id = processor_.PieceToId(absl::string_view(token.data(), token.size()));
    // PieceToId answers unk_id for any unknown piece: only a real match counts.
    if (id < 0 || processor_.IdToPiece(id) != token)
      return std::nullopt;
    return static_cast<uint32_t>(id);
  }
  std::optional<std::string> idToToken(uint32_t id) const override {
    if (id >= static_cast<uint32_t>(processor_.GetPieceSize()))
      return std::nullopt;
    return processor_.IdToPiece(static_cast<int>(id));
  }
  size_t vocabSize() const override { return static_cast<size_t>(processor_.GetPieceSize()); }

private:
  std::string name_;
  sentencepiece::SentencePieceProcessor processor_;
};

} // namespace

std::unique_ptr<Tokenizer> tokenizerFromSentencePiece(std::string_view model,
                                                      const std::string &name) {
  return std::make_unique<SentencePieceTokenizer>(model, name);
}

} // namespace onnxc::text
