//===- text/Pattern.h - Patterns and HF's split behaviors --------------------===//
//
// The Split pre-tokenizer and the Replace normalizer and decoder take a
// pattern, {"String": "..."} or {"Regex": "..."}. Cutting a text at the
// matches follows HF's NormalizedString::split: the text becomes a list of
// (range, is-match) events, and a behavior (Removed, Isolated,
// MergedWithPrevious, MergedWithNext, Contiguous) folds them into pieces.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/JsonFields.h"
#include "text/Regex.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxc::text {

using ByteRange = std::pair<size_t, size_t>;

class Pattern {
public:
  /// {"String": literal} or {"Regex": pattern}.
  static Pattern fromJson(const JsonValue &value, const std::string &where);
  static Pattern literal(std::string text);

  /// The matches in `text`, left to right, not overlapping.
  void findMatches(std::string_view text, std::vector<ByteRange> &matches) const;
  /// `text` with every match replaced by `content`.
  std::string replaceAll(std::string_view text, std::string_view content) const;

private:
  std::string literal_;
  std::shared_ptr<Regex> regex_;
};

enum class SplitBehavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

SplitBehavior parseSplitBehavior(const std::string &name, const std::string &where);

/// One (range, is-match) event of a text cut at its matches.
struct SplitEvent {
  ByteRange range;
  bool isMatch;
};

/// The events of `text` cut at `matches` (which may be empty ranges).
void eventsFromMatches(size_t textSize, const std::vector<ByteRange> &matches,
                       std::vector<SplitEvent> &events);
/// The events of `text` where every character satisfying `isDelimiter` is a match.
void eventsFromCharacters(std::string_view text, const std::function<bool(char32_t)> &isDelimiter,
                          std::vector<SplitEvent> &events);
/// Folds events into the non-empty pieces HF's split keeps.
void piecesFromEvents(std::vector<SplitEvent> &events, SplitBehavior behavior, bool invert,
                      std::vector<ByteRange> &pieces);

} // namespace onnxc::text
