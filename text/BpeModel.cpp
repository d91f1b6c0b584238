//===- text/BpeModel.cpp - Byte-pair encoding with a merge queue and a word cache -===//
//
// A word starts as one symbol per character (or per byte token under
// byte_fallback) and the lowest-ranked adjacent pair is merged until none is
// in the merge table. The symbols form a linked list and the candidate pairs
// sit in a min-heap keyed by (rank, position), so a word of n symbols costs
// O(n log n), not the quadratic rescan. Words repeat, so the ids of each word
// are cached. The result is HF's BPE exactly, including its ties: equal ranks
// merge leftmost first, and stale heap entries are skipped.
//
//===----------------------------------------------------------------------===//
#include "text/Models.h"

#include "text/Unicode.h"
#include "text/Vocab.h"

#include <cstdio>
#include <mutex>
#include <queue>
#include <unordered_map>

namespace onnxc::text {
namespace {

struct MergeTarget {
  uint32_t rank;
  uint32_t newId;
};

struct Symbol {
  uint32_t id;
  int32_t prev;
  int32_t next;
  bool removed;
};

struct Candidate {
  uint32_t rank;
  uint32_t pos;
  uint32_t newId;
  bool operator>(const Candidate &other) const {
    return rank != other.rank ? rank > other.rank : pos > other.pos;
  }
};

struct BpeOptions {
  std::optional<std::string> unkToken;
  std::optional<std::string> continuingSubwordPrefix;
  std::optional<std::string> endOfWordSuffix;
  bool fuseUnk = false;
  bool byteFallback = false;
  bool ignoreMerges = false;
};

class BpeModel : public Model {
public:
  BpeModel(Vocab vocab, std::unordered_map<uint64_t, MergeTarget> merges, BpeOptions options)
      : vocab_(std::move(vocab)), merges_(std::move(merges)), options_(std::move(options)) {
    if (options_.unkToken)
      unkId_ = vocab_.find(*options_.unkToken);
    if (options_.byteFallback)
      for (int byte = 0; byte < 256; ++byte) {
        char name[8];
        std::snprintf(name, sizeof(name), "<0x%02X>", byte);
        byteIds_[byte] = vocab_.find(name);
      }
  }

  void tokenize(std::string_view word, std::vector<uint32_t> &ids) const override {
    if (word.empty())
      return;
    if (options_.ignoreMerges)
      if (auto id = vocab_.find(word)) {
        ids.push_back(*id);
        return;
      }
    {
      std::lock_guard<std::mutex> lock(cacheMutex_);
      auto it = cache_.find(word);
      if (it != cache_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
        return;
      }
    }
    std::vector<uint32_t> wordIds = mergeWord(word);
    ids.insert(ids.end(), wordIds.begin(), wordIds.end());
    // Long words (a whole document, without a pre-tokenizer) rarely repeat: as HF, only short
    // ones are kept.
    if (word.size() >= kCacheableLength)
      return;
    std::lock_guard<std::mutex> lock(cacheMutex_);
    // A bounded cache: clearing it now and then keeps a long document from
    // growing it without end, and costs one re-merge per word after.
    if (cache_.size() >= kCacheCapacity)
      cache_.clear();
    cache_.emplace(std::string(word), std::move(wordIds));
  }

  std::optional<uint32_t> tokenToId(std::string_view token) const override {
    return vocab_.find(token);
  }
  const std::string *idToToken(uint32_t id) const override { return vocab_.token(id); }
  size_t vocabSize() const override { return vocab_.size(); }

private:
  static constexpr size_t kCacheCapacity = 1 << 18;
  static constexpr size_t kCacheableLength = 256;

  std::vector<Symbol> initialSymbols(std::string_view word) const;
  void mergeSymbols(std::vector<Symbol> &symbols) const;

  const MergeTarget *findMerge(uint32_t left, uint32_t right) const {
    auto it = merges_.find((uint64_t{left} << 32) | right);
    return it == merges_.end() ? nullptr : &it->second;
  }

  std::vector<uint32_t> mergeWord(std::string_view word) const {
    std::vector<Symbol> symbols = initialSymbols(word);
    mergeSymbols(symbols);
    std::vector<uint32_t> ids;
    ids.reserve(symbols.size());
    for (const Symbol &symbol : symbols)
      if (!symbol.removed)
        ids.push_back(symbol.id);
    return ids;
  }

  Vocab vocab_;
  std::unordered_map<uint64_t, MergeTarget> merges_;
  BpeOptions options_;
  std::optional<uint32_t> unkId_;
  std::optional<uint32_t> byteIds_[256];
  mutable std::mutex cacheMutex_;
  mutable std::unordered_map<std::string, std::vector<uint32_t>, StringHash, std::equal_to<>>
      cache_;
};

/// One symbol per character, as HF's merge_word: the prefix on all but the
/// first, the suffix on the last, unknown characters as byte tokens
/// (byte_fallback) or the unknown token (fused when fuse_unk).
std::vector<Symbol> BpeModel::initialSymbols(std::string_view word) const {
  std::vector<Symbol> symbols;
  symbols.reserve(word.size());
  auto push = [&](uint32_t id) {
    int32_t index = static_cast<int32_t>(symbols.size());
    symbols.push_back({id, index - 1, index + 1, false});
  };
  bool pendingUnk = false;
  std::string piece;
  size_t pos = 0;
  while (pos < word.size()) {
    size_t begin = pos;
    nextCodePoint(word, pos);
    std::string_view character = word.substr(begin, pos - begin);
    std::optional<uint32_t> id;
    bool decorated = (begin > 0 && options_.continuingSubwordPrefix) ||
                     (pos == word.size() && options_.endOfWordSuffix);
    if (!decorated) {
      id = vocab_.find(character);
    } else {
      piece.clear();
      if (begin > 0 && options_.continuingSubwordPrefix)
        piece += *options_.continuingSubwordPrefix;
      piece += character;
      if (pos == word.size() && options_.endOfWordSuffix)
        piece += *options_.endOfWordSuffix;
      id = vocab_.find(piece);
    }
    std::string_view lookedUp = decorated ? std::string_view(piece) : character;
    if (id) {
      if (pendingUnk)
        push(*unkId_), pendingUnk = false;
      push(*id);
      continue;
    }
    if (options_.byteFallback) {
      bool allBytes = true;
      for (char byte : lookedUp)
        allBytes = allBytes && byteIds_[static_cast<unsigned char>(byte)].has_value();
      if (allBytes) {
        for (char byte : lookedUp)
          push(*byteIds_[static_cast<unsigned char>(byte)]);
        continue;
      }
    }
    if (!unkId_)
      continue; // HF drops a character it can neither find nor call unknown.
    if (pendingUnk && !options_.fuseUnk)
      push(*unkId_);
    pendingUnk = true;
  }
  if (pendingUnk)
    push(*unkId_);
  if (!symbols.empty())
    symbols.back().next = -1;
  return symbols;
}

void BpeModel::mergeSymbols(std::vector<Symbol> &symbols) const {
  if (symbols.size() < 2)
    return;
  std::vector<Candidate> storage;
  storage.reserve(symbols.size() * 2);
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<Candidate>> queue(
      std::greater<Candidate>(), std::move(storage));
  for (size_t i = 0; i + 1 < symbols.size(); ++i)
    if (const MergeTarget *merge = findMerge(symbols[i].id, symbols[i + 1].id))
      queue.push({merge->rank, static_cast<uint32_t>(i), merge->newId});
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol &left = symbols[top.pos];
    if (left.removed || left.next < 0)
      continue;
    Symbol &right = symbols[left.next];
    // A stale entry: one side was merged into something else since it was queued.
    const MergeTarget *current = findMerge(left.id, right.id);
    if (!current || current->newId != top.newId)
      continue;
    left.id = top.newId;
    right.removed = true;
    left.next = right.next;
    if (right.next >= 0)
      symbols[right.next].prev = static_cast<int32_t>(top.pos);
    if (left.prev >= 0)
      if (const MergeTarget *merge = findMerge(symbols[left.prev].id, left.id))
        queue.push({merge->rank, static_cast<uint32_t>(left.prev), merge->newId});
    if (left.next >= 0)
      if (const MergeTarget *merge = findMerge(left.id, symbols[left.next].id))
        queue.push({merge->rank, top.pos, merge->newId});
  }
}

/// A merge as "a b" (tokenizers up to 0.19) or ["a", "b"] (later versions).
std::pair<std::string, std::string> mergePair(const JsonValue &value, const std::string &where) {
  if (const JsonArray *pair = value.getAsArray()) {
    if (pair->size() != 2)
      fail(where, ": expected a pair of tokens");
    return {expectString((*pair)[0], where), expectString((*pair)[1], where)};
  }
  std::string text = expectString(value, where);
  size_t space = text.find(' ');
  if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos)
    fail(where, ": expected two tokens separated by one space, got '", text, "'");
  return {text.substr(0, space), text.substr(space + 1)};
}

} // namespace

std::unique_ptr<Model> makeBpeModel(const JsonObject &object, const std::string &where) {
  const JsonValue *dropout = object.get("dropout");
  if (dropout && dropout->kind() != JsonValue::Null && dropout->getAsNumber().value_or(0) != 0)
    fail(where, ": BPE dropout is random at encoding time; onnxc does not support it");
  Vocab vocab = Vocab::fromJsonObject(requireField(object, "vocab", where), where + ".vocab");
  BpeOptions options;
  options.unkToken = optionalString(object, "unk_token", where);
  options.continuingSubwordPrefix = optionalString(object, "continuing_subword_prefix", where);
  options.endOfWordSuffix = optionalString(object, "end_of_word_suffix", where);
  // GPT-2's file spells "none" as "": the same ids, without building a string per character.
  if (options.continuingSubwordPrefix && options.continuingSubwordPrefix->empty())
    options.continuingSubwordPrefix.reset();
  if (options.endOfWordSuffix && options.endOfWordSuffix->empty())
    options.endOfWordSuffix.reset();
  options.fuseUnk = optionalBool(object, "fuse_unk", false, where);
  options.byteFallback = optionalBool(object, "byte_fallback", false, where);
  options.ignoreMerges = optionalBool(object, "ignore_merges", false, where);
  if (options.unkToken && !vocab.find(*options.unkToken))
    fail(where, ": unk_token '", *options.unkToken, "' is not in the vocabulary");

  const JsonArray &list = expectArray(requireField(object, "merges", where), where + ".merges");
  size_t prefixLength =
      options.continuingSubwordPrefix ? options.continuingSubwordPrefix->size() : 0;
  std::unordered_map<uint64_t, MergeTarget> merges;
  merges.reserve(list.size());
  for (size_t rank = 0; rank < list.size(); ++rank) {
    std::string at = where + ".merges[" + std::to_string(rank) + "]";
    auto [a, b] = mergePair(list[rank], at);
    auto aId = vocab.find(a), bId = vocab.find(b);
    std::string merged = a + (b.size() >= prefixLength ? b.substr(prefixLength) : "");
    auto newId = vocab.find(merged);
    if (!aId || !bId || !newId)
      fail(at, ": '", !aId ? a : !bId ? b : merged, "' is not in the vocabulary");
    merges[(uint64_t{*aId} << 32) | *bId] = {static_cast<uint32_t>(rank), *newId};
  }
  return std::make_unique<BpeModel>(std::move(vocab), std::move(merges), std::move(options));
}

} // namespace onnxc::text
