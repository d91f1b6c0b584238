//===- text/WordPieceModel.cpp - WordPiece (BERT) and WordLevel models -------===//
//
// WordPiece takes the longest vocabulary prefix of a word, then the longest
// "##"-prefixed piece of the rest, and so on; a word it cannot cover, or one
// longer than max_input_chars_per_word, becomes the unknown token. WordLevel
// looks the whole word up.
//
//===----------------------------------------------------------------------===//
#include "text/Models.h"

#include "text/Unicode.h"
#include "text/Vocab.h"

namespace onnxc::text {
namespace {

class WordPieceModel : public Model {
public:
  WordPieceModel(Vocab vocab, uint32_t unkId, std::string prefix, size_t maxChars)
      : vocab_(std::move(vocab)), unkId_(unkId), prefix_(std::move(prefix)), maxChars_(maxChars) {}

  void tokenize(std::string_view word, std::vector<uint32_t> &ids) const override {
    size_t characters = 0;
    for (char c : word)
      characters += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (characters > maxChars_) {
      ids.push_back(unkId_);
      return;
    }
    size_t firstNew = ids.size();
    std::string candidate;
    size_t start = 0;
    while (start < word.size()) {
      size_t end = word.size();
      std::optional<uint32_t> found;
      while (start < end) {
        std::string_view piece = word.substr(start, end - start);
        if (start > 0) {
          candidate.assign(prefix_);
          candidate.append(piece);
          found = vocab_.find(candidate);
        } else {
          found = vocab_.find(piece);
        }
        if (found)
          break;
        // Step back one whole character.
        do
          --end;
        while (end > start && (static_cast<unsigned char>(word[end]) & 0xC0) == 0x80);
      }
      if (!found) {
        ids.resize(firstNew);
        ids.push_back(unkId_);
        return;
      }
      ids.push_back(*found);
      start = end;
    }
  }

  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    return vocab_.find(token);
  }
  const std::string *idToToken(uint32_t id) const override { return vocab_.token(id); }
  size_t vocabSize() const override { return vocab_.size(); }

private:
  Vocab vocab_;
  uint32_t unkId_;
  std::string prefix_;
  size_t maxChars_;
};

class WordLevelModel : public Model {
public:
  WordLevelModel(Vocab vocab, std::optional<uint32_t> unkId)
      : vocab_(std::move(vocab)), unkId_(unkId) {}

  void tokenize(std::string_view word, std::vector<uint32_t> &ids) const override {
    if (auto id = vocab_.find(word))
      ids.push_back(*id);
    else if (unkId_)
      ids.push_back(*unkId_);
    else
      fail("word-level model: '", word, "' is not in the vocabulary and there is no unk_token");
  }
  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    return vocab_.find(token);
  }
  const std::string *idToToken(uint32_t id) const override { return vocab_.token(id); }
  size_t vocabSize() const override { return vocab_.size(); }

private:
  Vocab vocab_;
  std::optional<uint32_t> unkId_;
};

} // namespace

std::unique_ptr<Model> makeWordPieceModel(const JsonObject &object, const std::string &where) {
  Vocab vocab = Vocab::fromJsonObject(requireField(object, "vocab", where), where + ".vocab");
  std::string unk = optionalString(object, "unk_token", where).value_or("[UNK]");
  std::optional<uint32_t> unkId = vocab.find(unk);
  if (!unkId)
    fail(where, ": unk_token '", unk, "' is not in the vocabulary");
  std::string prefix = optionalString(object, "continuing_subword_prefix", where).value_or("##");
  int64_t maxChars = optionalInteger(object, "max_input_chars_per_word", 100, where);
  return std::make_unique<WordPieceModel>(std::move(vocab), *unkId, std::move(prefix),
                                          static_cast<size_t>(std::max<int64_t>(maxChars, 0)));
}

std::unique_ptr<Model> makeWordLevelModel(const JsonObject &object, const std::string &where) {
  Vocab vocab = Vocab::fromJsonObject(requireField(object, "vocab", where), where + ".vocab");
  std::optional<uint32_t> unkId;
  if (auto unk = optionalString(object, "unk_token", where)) {
    unkId = vocab.find(*unk);
    if (!unkId)
      fail(where, ": unk_token '", *unk, "' is not in the vocabulary");
  }
  return std::make_unique<WordLevelModel>(std::move(vocab), unkId);
}

std::unique_ptr<Model> makeModel(const JsonValue &value, const std::string &where) {
  const JsonObject &object = expectObject(value, where);
  // Files written before "type" was serialized name the model by its fields.
  std::string type = optionalString(object, "type", where).value_or("");
  if (type.empty())
    type = object.get("merges")                      ? "BPE"
           : object.get("continuing_subword_prefix") ? "WordPiece"
                                                     : "";
  if (type == "BPE")
    return makeBpeModel(object, where);
  if (type == "WordPiece")
    return makeWordPieceModel(object, where);
  if (type == "WordLevel")
    return makeWordLevelModel(object, where);
  if (type == "Unigram")
    return makeUnigramModel(object, where);
  unsupportedComponent(where, type.empty() ? "(none)" : type);
}

} // namespace onnxc::text
