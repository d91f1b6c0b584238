//===- text/PipelineTokenizer.cpp - The HF tokenizer.json pipeline -----------===//
//
// encode: added tokens out of the raw text, normalize each remaining piece,
// normalized added tokens out of it, pre-tokenize, model, post-process.
// decode: ids to tokens (special ones skipped), decoder, concatenation.
//
//===----------------------------------------------------------------------===//
#include "text/AddedTokens.h"
#include "text/Decoders.h"
#include "text/Limits.h"
#include "text/Models.h"
#include "text/Normalizers.h"
#include "text/PostProcessors.h"
#include "text/PreTokenizers.h"
#include "text/Tokenizer.h"
#include "text/Unicode.h"

#include <unordered_map>

namespace onnxc::text {
namespace {

class PipelineTokenizer : public Tokenizer {
public:
  PipelineTokenizer(const JsonObject &root, const std::string &name);

  std::vector<uint32_t> encode(std::string_view text, bool addSpecialTokens,
                               bool applyLimits) const override;
  std::string decode(std::span<const uint32_t> ids, bool skipSpecialTokens) const override;

  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    auto it = addedIds_.find(std::string(token));
    if (it != addedIds_.end())
      return it->second;
    return model_->tokenToId(token);
  }
  std::optional<std::string> idToToken(uint32_t id) const override {
    if (const AddedToken *token = addedToken(id))
      return token->content;
    if (const std::string *token = model_->idToToken(id))
      return *token;
    return std::nullopt;
  }
  size_t vocabSize() const override {
    size_t size = model_->vocabSize();
    for (const AddedToken &token : added_)
      size = std::max<size_t>(size, token.id + 1);
    return size;
  }

private:
  const AddedToken *addedToken(uint32_t id) const {
    auto it = addedById_.find(id);
    return it == addedById_.end() ? nullptr : &added_[it->second];
  }
  void encodeFreeText(Piece &piece, std::vector<uint32_t> &ids) const;

  std::unique_ptr<Normalizer> normalizer_;
  std::unique_ptr<PreTokenizer> preTokenizer_;
  std::unique_ptr<Model> model_;
  std::unique_ptr<PostProcessor> postProcessor_;
  std::unique_ptr<Decoder> decoder_;
  std::vector<AddedToken> added_;
  std::unordered_map<uint32_t, size_t> addedById_;
  std::unordered_map<std::string, uint32_t> addedIds_;
  AddedTokenMatcher rawMatcher_;
  AddedTokenMatcher normalizedMatcher_;
  std::vector<std::string> normalizedPatterns_;
  std::optional<Truncation> truncation_;
  std::optional<Padding> padding_;
};

PipelineTokenizer::PipelineTokenizer(const JsonObject &root, const std::string &name) {
  auto field = [&](std::string_view key) -> const JsonValue & {
    static const JsonValue null(nullptr);
    const JsonValue *value = root.get(llvm::StringRef(key.data(), key.size()));
    return value ? *value : null;
  };
  truncation_ = readTruncation(field("truncation"), name + ": truncation");
  padding_ = readPadding(field("padding"), name + ": padding");
  normalizer_ = makeNormalizer(field("normalizer"), name + ": normalizer");
  preTokenizer_ = makePreTokenizer(field("pre_tokenizer"), name + ": pre_tokenizer");
  model_ = makeModel(requireField(root, "model", name), name + ": model");
  postProcessor_ = makePostProcessor(field("post_processor"), name + ": post_processor");
  decoder_ = makeDecoder(field("decoder"), name + ": decoder");
  added_ = readAddedTokens(field("added_tokens"), name + ": added_tokens");
  // Patterns point into added_, which no longer changes.
  normalizedPatterns_.resize(added_.size());
  for (size_t i = 0; i < added_.size(); ++i) {
    const AddedToken &token = added_[i];
    addedById_.emplace(token.id, i);
    addedIds_.emplace(token.content, token.id);
    if (!token.normalized) {
      rawMatcher_.add(token.content, &token);
      continue;
    }
    normalizedPatterns_[i] = token.content;
    if (normalizer_)
      normalizer_->normalize(normalizedPatterns_[i]);
    normalizedMatcher_.add(normalizedPatterns_[i], &token);
  }
}

void PipelineTokenizer::encodeFreeText(Piece &piece, std::vector<uint32_t> &ids) const {
  std::vector<Split> splits;
  splits.push_back({std::move(piece.text), piece.atStart});
  if (preTokenizer_)
    preTokenizer_->preTokenize(splits);
  for (const Split &split : splits)
    model_->tokenize(split.text, ids);
}

std::vector<uint32_t> PipelineTokenizer::encode(std::string_view text, bool addSpecialTokens,
                                                bool applyLimits) const {
  requireUtf8(text, "the text to encode");
  std::vector<Piece> raw;
  rawMatcher_.split({std::string(text), -1, true}, raw);
  std::vector<uint32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  std::vector<Piece> pieces;
  for (Piece &piece : raw) {
    if (piece.id >= 0) {
      ids.push_back(static_cast<uint32_t>(piece.id));
      continue;
    }
    if (normalizer_)
      normalizer_->normalize(piece.text);
    pieces.clear();
    normalizedMatcher_.split(std::move(piece), pieces);
    for (Piece &inner : pieces) {
      if (inner.id >= 0)
        ids.push_back(static_cast<uint32_t>(inner.id));
      else
        encodeFreeText(inner, ids);
    }
  }
  bool addSpecial = addSpecialTokens && postProcessor_;
  if (applyLimits && truncation_)
    truncate(ids, *truncation_, addSpecial ? postProcessor_->addedCount() : 0);
  if (addSpecial)
    postProcessor_->process(ids);
  if (applyLimits && padding_)
    pad(ids, *padding_);
  return ids;
}

std::string PipelineTokenizer::decode(std::span<const uint32_t> ids, bool skipSpecialTokens) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (uint32_t id : ids) {
    if (const AddedToken *token = addedToken(id)) {
      if (!(skipSpecialTokens && token->special))
        tokens.push_back(token->content);
    } else if (const std::string *token = model_->idToToken(id)) {
      tokens.push_back(*token);
    }
  }
  if (!decoder_) {
    std::string joined;
    for (size_t i = 0; i < tokens.size(); ++i)
      joined += (i ? " " : "") + tokens[i];
    return joined;
  }
  decoder_->decodeChain(tokens);
  std::string joined;
  for (const std::string &token : tokens)
    joined += token;
  return joined;
}

} // namespace

/// LLVM's parser recurses once per level: a hostile file nested a million deep would overflow
/// the stack. A tokenizer.json is under ten levels deep.
static void requireShallowJson(std::string_view json, const std::string &name) {
  constexpr int kMaxDepth = 512;
  int depth = 0;
  bool inString = false;
  for (size_t i = 0; i < json.size(); ++i) {
    char c = json[i];
    if (inString) {
      if (c == '\\')
        ++i;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxDepth)
        fail(name, ": malformed JSON: nested more than ", kMaxDepth, " levels deep");
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
}

std::unique_ptr<Tokenizer> tokenizerFromJson(std::string_view json, const std::string &name) {
  requireShallowJson(json, name);
  llvm::Expected<JsonValue> root = llvm::json::parse(llvm::StringRef(json.data(), json.size()));
  if (!root)
    fail(name, ": malformed JSON: ", llvm::toString(root.takeError()));
  return std::make_unique<PipelineTokenizer>(expectObject(*root, name), name);
}

} // namespace onnxc::text
