//===- text/AddedTokens.cpp - Added and special tokens split out before the model -===//
#include "text/AddedTokens.h"

#include "text/Unicode.h"

namespace onnxc::text {
namespace {

/// The character ending at `end` (exclusive) of valid UTF-8.
char32_t characterBefore(std::string_view text, size_t end) {
  size_t begin = end - 1;
  while (begin > 0 && (static_cast<unsigned char>(text[begin]) & 0xC0) == 0x80)
    --begin;
  return nextCodePoint(text, begin);
}

bool isWordCharacter(char32_t c) { return c == '_' || isAlphanumeric(c); }

} // namespace

void AddedTokenMatcher::add(const std::string &pattern, const AddedToken *token) {
  if (pattern.empty())
    return;
  uint32_t node = 0;
  for (char c : pattern) {
    auto byte = static_cast<unsigned char>(c);
    auto it = nodes_[node].next.find(byte);
    if (it == nodes_[node].next.end()) {
      nodes_.push_back(Node{});
      uint32_t child = static_cast<uint32_t>(nodes_.size() - 1);
      nodes_[node].next.emplace(byte, child);
      node = child;
    } else {
      node = it->second;
    }
  }
  // Two tokens with one pattern: the first added wins, as HF's trie keeps it.
  if (!nodes_[node].token)
    nodes_[node].token = token;
  firstBytes_[static_cast<unsigned char>(pattern[0])] = true;
  tokens_.push_back(token);
}

const AddedToken *AddedTokenMatcher::longestAt(std::string_view text, size_t pos,
                                               size_t &length) const {
  const AddedToken *found = nullptr;
  uint32_t node = 0;
  for (size_t i = pos; i < text.size(); ++i) {
    auto it = nodes_[node].next.find(static_cast<unsigned char>(text[i]));
    if (it == nodes_[node].next.end())
      break;
    node = it->second;
    if (nodes_[node].token) {
      found = nodes_[node].token;
      length = i + 1 - pos;
    }
  }
  return found;
}

void AddedTokenMatcher::split(Piece piece, std::vector<Piece> &out) const {
  if (piece.id >= 0 || piece.text.empty() || tokens_.empty()) {
    if (piece.id >= 0 || !piece.text.empty())
      out.push_back(std::move(piece));
    return;
  }
  std::string_view text = piece.text;
  size_t emitted = 0; // end of what has gone out
  size_t pos = 0;
  auto emitText = [&](size_t begin, size_t end) {
    if (begin < end)
      out.push_back(
          {std::string(text.substr(begin, end - begin)), -1, piece.atStart && begin == 0});
  };
  while (pos < text.size()) {
    size_t length = 0;
    const AddedToken *token =
        firstBytes_[static_cast<unsigned char>(text[pos])] ? longestAt(text, pos, length) : nullptr;
    if (!token) {
      pos += utf8Length(static_cast<unsigned char>(text[pos]));
      continue;
    }
    size_t start = pos, stop = pos + length;
    pos = stop;
    if (token->singleWord) {
      bool wordBefore = start > 0 && isWordCharacter(characterBefore(text, start));
      size_t after = stop;
      bool wordAfter = stop < text.size() && isWordCharacter(nextCodePoint(text, after));
      if (wordBefore || wordAfter)
        continue;
    }
    if (token->lstrip) {
      size_t newStart = start;
      while (newStart > emitted && isWhitespace(characterBefore(text, newStart))) {
        size_t at = newStart - 1;
        while ((static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
          --at;
        newStart = at;
      }
      start = newStart;
    }
    if (token->rstrip) {
      while (stop < text.size()) {
        size_t next = stop;
        if (!isWhitespace(nextCodePoint(text, next)))
          break;
        stop = next;
      }
      pos = stop;
    }
    emitText(emitted, start);
    out.push_back({token->content, static_cast<int64_t>(token->id), false});
    emitted = stop;
  }
  emitText(emitted, text.size());
}

std::vector<AddedToken> readAddedTokens(const JsonValue &value, const std::string &where) {
  std::vector<AddedToken> tokens;
  if (value.kind() == JsonValue::Null)
    return tokens;
  const JsonArray &list = expectArray(value, where);
  for (size_t i = 0; i < list.size(); ++i) {
    std::string at = where + "[" + std::to_string(i) + "]";
    const JsonObject &object = expectObject(list[i], at);
    AddedToken token;
    token.content = requireString(object, "content", at);
    requireUtf8(token.content, at + ".content");
    int64_t id = expectInteger(requireField(object, "id", at), at + ".id");
    if (id < 0 || id >= (int64_t{1} << 26))
      fail(at, ".id: ", id, " is out of range");
    token.id = static_cast<uint32_t>(id);
    token.singleWord = optionalBool(object, "single_word", false, at);
    token.lstrip = optionalBool(object, "lstrip", false, at);
    token.rstrip = optionalBool(object, "rstrip", false, at);
    token.special = optionalBool(object, "special", false, at);
    token.normalized = optionalBool(object, "normalized", !token.special, at);
    tokens.push_back(std::move(token));
  }
  return tokens;
}

} // namespace onnxc::text
