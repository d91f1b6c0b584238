//===- text/AddedTokens.h - Added and special tokens split out before the model -===//
//
// HF tokenizers finds the added tokens in the text before normalization and
// pre-tokenization, so "<|endoftext|>" or "[SEP]" inside a text is one id and
// never reaches the model. Tokens marked normalized=false are found in the
// raw text; normalized ones in each normalized piece, matched against their
// own normalized form. Matches are leftmost-longest, as HF's Aho-Corasick;
// single_word, lstrip and rstrip work as in its find_matches.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/Components.h"
#include "text/JsonFields.h"

#include <string>
#include <unordered_map>
#include <vector>

namespace onnxc::text {

struct AddedToken {
  std::string content;
  uint32_t id = 0;
  bool singleWord = false;
  bool lstrip = false;
  bool rstrip = false;
  bool normalized = true;
  bool special = false;
};

/// A piece of the input: free text (id < 0) or one added token.
struct Piece {
  std::string text;
  int64_t id = -1;
  bool atStart = false;
};

/// A set of token strings found leftmost-longest, with HF's word and strip rules.
class AddedTokenMatcher {
public:
  void add(const std::string &pattern, const AddedToken *token);
  /// Cuts `piece` at the tokens found in it and appends the pieces to `out`.
  void split(Piece piece, std::vector<Piece> &out) const;
  bool empty() const { return tokens_.empty(); }

private:
  /// The longest pattern starting at `pos`, or nullptr.
  const AddedToken *longestAt(std::string_view text, size_t pos, size_t &length) const;

  struct Node {
    std::unordered_map<unsigned char, uint32_t> next;
    const AddedToken *token = nullptr;
  };
  std::vector<Node> nodes_{Node{}};
  bool firstBytes_[256] = {};
  std::vector<const AddedToken *> tokens_;
};

/// The added_tokens array of tokenizer.json.
std::vector<AddedToken> readAddedTokens(const JsonValue &value, const std::string &where);

} // namespace onnxc::text
