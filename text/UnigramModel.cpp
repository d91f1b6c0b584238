//===- text/UnigramModel.cpp - The Unigram model (T5, ALBERT): Viterbi over pieces -===//
//
// The best segmentation maximizes the sum of the pieces' log-probabilities.
// A byte trie finds every vocabulary piece starting at each position; a
// position no one-character piece covers gets the unknown token at the
// lowest score minus 10, and consecutive unknowns fuse into one, as in HF's
// encode_optimized (whose tie-breaking, first best wins, is kept).
//
//===----------------------------------------------------------------------===//
#include "text/Models.h"

#include "text/Unicode.h"
#include "text/Vocab.h"

#include <cstdio>
#include <limits>
#include <unordered_map>

namespace onnxc::text {
namespace {

/// A byte trie over the vocabulary, its edges in one hash table.
class PieceTrie {
public:
  void insert(std::string_view piece, uint32_t id) {
    uint32_t node = 0;
    for (char byte : piece) {
      uint64_t key = (uint64_t{node} << 8) | static_cast<unsigned char>(byte);
      auto [it, inserted] = edges_.try_emplace(key, static_cast<uint32_t>(pieceIds_.size()));
      if (inserted)
        pieceIds_.push_back(kNone);
      node = it->second;
    }
    pieceIds_[node] = id;
  }
  /// Calls `visit(length, id)` for every piece that is a prefix of `text`, shortest first.
  template <typename Visit> void forEachPrefix(std::string_view text, Visit visit) const {
    uint32_t node = 0;
    for (size_t i = 0; i < text.size(); ++i) {
      auto it = edges_.find((uint64_t{node} << 8) | static_cast<unsigned char>(text[i]));
      if (it == edges_.end())
        return;
      node = it->second;
      if (pieceIds_[node] != kNone)
        visit(i + 1, pieceIds_[node]);
    }
  }

private:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  std::unordered_map<uint64_t, uint32_t> edges_;
  std::vector<uint32_t> pieceIds_{kNone};
};

class UnigramModel : public Model {
public:
  UnigramModel(Vocab vocab, std::vector<double> scores, std::optional<uint32_t> unkId,
               bool byteFallback)
      : vocab_(std::move(vocab)), scores_(std::move(scores)), unkId_(unkId) {
    minScore_ = std::numeric_limits<double>::max();
    for (uint32_t id = 0; id < vocab_.size(); ++id) {
      if (const std::string *piece = vocab_.token(id))
        trie_.insert(*piece, id);
      minScore_ = std::min(minScore_, scores_[id]);
    }
    if (byteFallback)
      for (int byte = 0; byte < 256; ++byte) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", byte);
        byteIds_[byte] = vocab_.find(name);
      }
    byteFallback_ = byteFallback;
  }

  void tokenize(std::string_view word, std::vector<uint32_t> &ids) const override;

  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    return vocab_.find(token);
  }
  const std::string *idToToken(uint32_t id) const override { return vocab_.token(id); }
  size_t vocabSize() const override { return vocab_.size(); }

private:
  struct BestPath {
    uint32_t id = 0;
    double score = 0;
    int64_t startsAt = -1;
  };
  void emitPiece(std::string_view piece, std::vector<uint32_t> &ids) const;

  Vocab vocab_;
  std::vector<double> scores_;
  std::optional<uint32_t> unkId_;
  bool byteFallback_ = false;
  std::optional<uint32_t> byteIds_[256];
  double minScore_;
  PieceTrie trie_;
};

void UnigramModel::tokenize(std::string_view word, std::vector<uint32_t> &ids) const {
  if (word.empty())
    return;
  constexpr double kUnkPenalty = 10.0;
  double unkScore = minScore_ - kUnkPenalty;
  std::vector<BestPath> best(word.size() + 1);
  best[0].startsAt = 0;
  size_t start = 0;
  while (start < word.size()) {
    double scoreHere = best[start].score;
    size_t charLength = utf8Length(static_cast<unsigned char>(word[start]));
    bool hasSingleCharacter = false;
    auto offer = [&](size_t end, uint32_t id, double score) {
      BestPath &target = best[end];
      if (target.startsAt < 0 || score + scoreHere > target.score) {
        target = {id, score + scoreHere, static_cast<int64_t>(start)};
      }
    };
    trie_.forEachPrefix(word.substr(start), [&](size_t length, uint32_t id) {
      offer(start + length, id, scores_[id]);
      hasSingleCharacter = hasSingleCharacter || length == charLength;
    });
    if (!hasSingleCharacter) {
      if (!unkId_)
        fail("unigram model: '", word.substr(start, charLength),
             "' is not in the vocabulary and there is no unk_id");
      offer(start + charLength, *unkId_, unkScore);
    }
    start += charLength;
  }
  // Walk back from the end; consecutive unknowns become one piece.
  std::vector<std::string_view> pieces;
  size_t end = word.size();
  size_t unkEnd = 0;
  bool inUnk = false;
  while (end > 0) {
    const BestPath &node = best[end];
    size_t begin = static_cast<size_t>(node.startsAt);
    bool isUnk = unkId_ && node.id == *unkId_;
    if (isUnk) {
      if (!inUnk)
        unkEnd = end, inUnk = true;
    } else {
      if (inUnk)
        pieces.push_back(word.substr(end, unkEnd - end)), inUnk = false;
      pieces.push_back(word.substr(begin, end - begin));
    }
    end = begin;
  }
  if (inUnk)
    pieces.push_back(word.substr(0, unkEnd));
  for (auto it = pieces.rbegin(); it != pieces.rend(); ++it)
    emitPiece(*it, ids);
}

void UnigramModel::emitPiece(std::string_view piece, std::vector<uint32_t> &ids) const {
  if (auto id = vocab_.find(piece)) {
    ids.push_back(*id);
    return;
  }
  if (byteFallback_) {
    bool allBytes = true;
    for (char byte : piece)
      allBytes = allBytes && byteIds_[static_cast<unsigned char>(byte)].has_value();
    if (allBytes) {
      for (char byte : piece)
        ids.push_back(*byteIds_[static_cast<unsigned char>(byte)]);
      return;
    }
  }
  ids.push_back(*unkId_);
}

} // namespace

std::unique_ptr<Model> makeUnigramModel(const JsonObject &object, const std::string &where) {
  const JsonArray &list = expectArray(requireField(object, "vocab", where), where + ".vocab");
  Vocab vocab;
  std::vector<double> scores;
  scores.reserve(list.size());
  for (size_t id = 0; id < list.size(); ++id) {
    std::string at = where + ".vocab[" + std::to_string(id) + "]";
    const JsonArray &entry = expectArray(list[id], at);
    if (entry.size() != 2 || !entry[1].getAsNumber())
      fail(at, ": expected [piece, score]");
    vocab.add(expectString(entry[0], at), static_cast<uint32_t>(id));
    scores.push_back(*entry[1].getAsNumber());
  }
  std::optional<uint32_t> unkId;
  const JsonValue *unk = object.get("unk_id");
  if (unk && unk->kind() != JsonValue::Null) {
    int64_t id = expectInteger(*unk, where + ".unk_id");
    if (id < 0 || static_cast<size_t>(id) >= list.size())
      fail(where, ".unk_id: ", id, " is not an id of the vocabulary");
    unkId = static_cast<uint32_t>(id);
  }
  return std::make_unique<UnigramModel>(std::move(vocab), std::move(scores), unkId,
                                        optionalBool(object, "byte_fallback", false, where));
}

} // namespace onnxc::text
