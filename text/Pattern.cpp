//===- text/Pattern.cpp - Patterns and HF's split behaviors ------------------===//
#include "text/Pattern.h"

#include "text/Unicode.h"

#include <algorithm>

namespace onnxc::text {

Pattern Pattern::fromJson(const JsonValue &value, const std::string &where) {
  const JsonObject &object = expectObject(value, where);
  Pattern pattern;
  if (auto text = optionalString(object, "String", where)) {
    pattern.literal_ = *text;
  } else if (auto regex = optionalString(object, "Regex", where)) {
    pattern.regex_ = std::make_shared<Regex>(*regex, where);
  } else {
    fail(where, ": expected {\"String\": ...} or {\"Regex\": ...}");
  }
  return pattern;
}

Pattern Pattern::literal(std::string text) {
  Pattern pattern;
  pattern.literal_ = std::move(text);
  return pattern;
}

void Pattern::findMatches(std::string_view text, std::vector<ByteRange> &matches) const {
  if (regex_) {
    regex_->findAll(text, matches);
    return;
  }
  matches.clear();
  if (literal_.empty())
    return;
  for (size_t at = text.find(literal_); at != std::string_view::npos;
       at = text.find(literal_, at + literal_.size()))
    matches.emplace_back(at, at + literal_.size());
}

std::string Pattern::replaceAll(std::string_view text, std::string_view content) const {
  std::vector<ByteRange> matches;
  findMatches(text, matches);
  if (matches.empty())
    return std::string(text);
  std::string out;
  out.reserve(text.size());
  size_t last = 0;
  for (const ByteRange &match : matches) {
    out.append(text.substr(last, match.first - last));
    out.append(content);
    last = match.second;
  }
  out.append(text.substr(last));
  return out;
}

SplitBehavior parseSplitBehavior(const std::string &name, const std::string &where) {
  if (name == "Removed")
    return SplitBehavior::Removed;
  if (name == "Isolated")
    return SplitBehavior::Isolated;
  if (name == "MergedWithPrevious")
    return SplitBehavior::MergedWithPrevious;
  if (name == "MergedWithNext")
    return SplitBehavior::MergedWithNext;
  if (name == "Contiguous")
    return SplitBehavior::Contiguous;
  fail(where, ": unknown split behavior '", name, "'");
}

void eventsFromMatches(size_t textSize, const std::vector<ByteRange> &matches,
                       std::vector<SplitEvent> &events) {
  events.clear();
  size_t previous = 0;
  for (const ByteRange &match : matches) {
    if (previous != match.first)
      events.push_back({{previous, match.first}, false});
    events.push_back({match, true});
    previous = match.second;
  }
  if (previous != textSize)
    events.push_back({{previous, textSize}, false});
}

void eventsFromCharacters(std::string_view text, const std::function<bool(char32_t)> &isDelimiter,
                          std::vector<SplitEvent> &events) {
  events.clear();
  size_t lastOffset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t begin = pos;
    char32_t c = nextCodePoint(text, pos);
    if (!isDelimiter(c))
      continue;
    if (lastOffset < begin)
      events.push_back({{lastOffset, begin}, false});
    events.push_back({{begin, pos}, true});
    lastOffset = pos;
  }
  if (text.size() > lastOffset)
    events.push_back({{lastOffset, text.size()}, false});
}

// The folds below are those of HF's NormalizedString::split, case by case.
void piecesFromEvents(std::vector<SplitEvent> &events, SplitBehavior behavior, bool invert,
                      std::vector<ByteRange> &pieces) {
  pieces.clear();
  if (invert)
    for (SplitEvent &event : events)
      event.isMatch = !event.isMatch;
  switch (behavior) {
  case SplitBehavior::Removed:
    for (const SplitEvent &event : events)
      if (!event.isMatch)
        pieces.push_back(event.range);
    break;
  case SplitBehavior::Isolated:
    for (const SplitEvent &event : events)
      pieces.push_back(event.range);
    break;
  case SplitBehavior::MergedWithPrevious: {
    bool previousMatch = false;
    for (const SplitEvent &event : events) {
      if (event.isMatch && !previousMatch && !pieces.empty())
        pieces.back().second = event.range.second;
      else
        pieces.push_back(event.range);
      previousMatch = event.isMatch;
    }
    break;
  }
  case SplitBehavior::MergedWithNext: {
    bool previousMatch = false;
    for (auto it = events.rbegin(); it != events.rend(); ++it) {
      if (it->isMatch && !previousMatch && !pieces.empty())
        pieces.back().first = it->range.first;
      else
        pieces.push_back(it->range);
      previousMatch = it->isMatch;
    }
    std::reverse(pieces.begin(), pieces.end());
    break;
  }
  case SplitBehavior::Contiguous: {
    bool previousMatch = false;
    for (const SplitEvent &event : events) {
      if (event.isMatch == previousMatch && !pieces.empty())
        pieces.back().second = event.range.second;
      else
        pieces.push_back(event.range);
      previousMatch = event.isMatch;
    }
    break;
  }
  }
  std::erase_if(pieces, [](const ByteRange &r) { return r.first == r.second; });
}

} // namespace onnxc::text
