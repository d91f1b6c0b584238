//===- text/PreTokenizers.cpp - tokenizer.json pre-tokenizers ----------------===//
//
// Every pre-tokenizer cuts each split with a pattern and one of HF's split
// behaviors (text/Pattern.h); ByteLevel and Metaspace also rewrite the
// pieces (bytes to GPT-2's characters, spaces to the replacement).
//
//===----------------------------------------------------------------------===//
#include "text/PreTokenizers.h"

#include "text/ByteLevel.h"
#include "text/Pattern.h"
#include "text/Unicode.h"

namespace onnxc::text {
namespace {

/// Replaces each split by the pieces `cut` finds in it.
template <typename Cut> void cutSplits(std::vector<Split> &splits, Cut cut) {
  std::vector<Split> out;
  out.reserve(splits.size() * 2);
  std::vector<SplitEvent> events;
  std::vector<ByteRange> pieces;
  for (Split &split : splits) {
    cut(split.text, events, pieces);
    if (pieces.size() == 1 && pieces[0].first == 0 && pieces[0].second == split.text.size()) {
      out.push_back(std::move(split));
      continue;
    }
    for (const ByteRange &piece : pieces)
      out.push_back({split.text.substr(piece.first, piece.second - piece.first),
                     split.atStart && piece.first == 0});
  }
  splits = std::move(out);
}

class PatternSplit : public PreTokenizer {
public:
  PatternSplit(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void preTokenize(std::vector<Split> &splits) const override {
    std::vector<ByteRange> matches;
    cutSplits(splits, [&](const std::string &text, std::vector<SplitEvent> &events,
                          std::vector<ByteRange> &pieces) {
      pattern_.findMatches(text, matches);
      eventsFromMatches(text.size(), matches, events);
      piecesFromEvents(events, behavior_, invert_, pieces);
    });
  }

private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

class CharacterSplit : public PreTokenizer {
public:
  CharacterSplit(std::function<bool(char32_t)> isDelimiter, SplitBehavior behavior)
      : isDelimiter_(std::move(isDelimiter)), behavior_(behavior) {}
  void preTokenize(std::vector<Split> &splits) const override {
    cutSplits(splits, [&](const std::string &text, std::vector<SplitEvent> &events,
                          std::vector<ByteRange> &pieces) {
      eventsFromCharacters(text, isDelimiter_, events);
      piecesFromEvents(events, behavior_, false, pieces);
    });
  }

private:
  std::function<bool(char32_t)> isDelimiter_;
  SplitBehavior behavior_;
};

class SequencePreTokenizer : public PreTokenizer {
public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> steps)
      : steps_(std::move(steps)) {}
  void preTokenize(std::vector<Split> &splits) const override {
    for (const auto &step : steps_)
      step->preTokenize(splits);
  }

private:
  std::vector<std::unique_ptr<PreTokenizer>> steps_;
};

class ByteLevelPreTokenizer : public PreTokenizer {
public:
  ByteLevelPreTokenizer(bool addPrefixSpace, bool useRegex) : addPrefixSpace_(addPrefixSpace) {
    if (useRegex)
      regex_ = std::make_unique<PatternSplit>(
          Pattern::fromJson(JsonValue(JsonObject{{"Regex", kGpt2Pattern}}), "ByteLevel"),
          SplitBehavior::Isolated, false);
  }
  void preTokenize(std::vector<Split> &splits) const override {
    if (addPrefixSpace_)
      for (Split &split : splits)
        if (split.text.empty() || split.text[0] != ' ')
          split.text.insert(0, 1, ' ');
    if (regex_)
      regex_->preTokenize(splits);
    const std::array<std::string, 256> &chars = byteLevelChars();
    std::string mapped;
    for (Split &split : splits) {
      mapped.clear();
      for (char byte : split.text)
        mapped += chars[static_cast<unsigned char>(byte)];
      split.text.swap(mapped);
    }
  }

private:
  bool addPrefixSpace_;
  std::unique_ptr<PatternSplit> regex_;
};

enum class PrependScheme { Always, First, Never };

class MetaspacePreTokenizer : public PreTokenizer {
public:
  MetaspacePreTokenizer(char32_t replacement, PrependScheme scheme, bool split)
      : scheme_(scheme), split_(split) {
    appendUtf8(replacement_, replacement);
  }
  void preTokenize(std::vector<Split> &splits) const override {
    for (Split &split : splits) {
      split.text = Pattern::literal(" ").replaceAll(split.text, replacement_);
      bool startsWithReplacement = split.text.compare(0, replacement_.size(), replacement_) == 0;
      bool prepend =
          scheme_ == PrependScheme::Always || (scheme_ == PrependScheme::First && split.atStart);
      if (prepend && !startsWithReplacement)
        split.text.insert(0, replacement_);
    }
    if (!split_)
      return;
    Pattern delimiter = Pattern::literal(replacement_);
    std::vector<ByteRange> matches;
    cutSplits(splits, [&](const std::string &text, std::vector<SplitEvent> &events,
                          std::vector<ByteRange> &pieces) {
      delimiter.findMatches(text, matches);
      eventsFromMatches(text.size(), matches, events);
      piecesFromEvents(events, SplitBehavior::MergedWithNext, false, pieces);
    });
  }

private:
  std::string replacement_;
  PrependScheme scheme_;
  bool split_;
};

bool isBertPunctuation(char32_t c) {
  bool asciiPunctuation = (c >= '!' && c <= '/') || (c >= ':' && c <= '@') ||
                          (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
  return asciiPunctuation || isPunctuation(c);
}

char32_t singleCharacter(const std::string &text, const std::string &where) {
  size_t pos = 0;
  if (text.empty() || findInvalidUtf8(text) != std::string::npos ||
      (nextCodePoint(text, pos), pos != text.size()))
    fail(where, ": expected a single character, got '", text, "'");
  pos = 0;
  return nextCodePoint(text, pos);
}

std::unique_ptr<PreTokenizer> makeMetaspace(const JsonObject &object, const std::string &where) {
  char32_t replacement = singleCharacter(requireString(object, "replacement", where), where);
  PrependScheme scheme = PrependScheme::Always;
  if (auto name = optionalString(object, "prepend_scheme", where)) {
    if (*name == "always")
      scheme = PrependScheme::Always;
    else if (*name == "first")
      scheme = PrependScheme::First;
    else if (*name == "never")
      scheme = PrependScheme::Never;
    else
      fail(where, ": unknown prepend_scheme '", *name, "'");
  } else if (!optionalBool(object, "add_prefix_space", true, where)) {
    scheme = PrependScheme::Never;
  }
  return std::make_unique<MetaspacePreTokenizer>(replacement, scheme,
                                                 optionalBool(object, "split", true, where));
}

/// Rust's regex \w (Alphabetic, marks, decimal digits, connector punctuation,
/// joiners), spelled out: PCRE2's \w is narrower.
constexpr const char *kWordOrSymbolRun =
    R"([\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}]+|[^\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\x{200C}\x{200D}\s]+)";

std::unique_ptr<PreTokenizer> makeSequence(const JsonObject &object, const std::string &where) {
  const JsonArray &items = expectArray(requireField(object, "pretokenizers", where), where);
  std::vector<std::unique_ptr<PreTokenizer>> steps;
  for (size_t i = 0; i < items.size(); ++i)
    if (auto step = makePreTokenizer(items[i], where + ".pretokenizers[" + std::to_string(i) + "]"))
      steps.push_back(std::move(step));
  return std::make_unique<SequencePreTokenizer>(std::move(steps));
}

} // namespace

std::unique_ptr<PreTokenizer> makePreTokenizer(const JsonValue &value, const std::string &where) {
  if (value.kind() == JsonValue::Null)
    return nullptr;
  const JsonObject &object = expectObject(value, where);
  std::string type = componentType(object, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelPreTokenizer>(
        optionalBool(object, "add_prefix_space", true, where),
        optionalBool(object, "use_regex", true, where));
  if (type == "Split")
    return std::make_unique<PatternSplit>(
        Pattern::fromJson(requireField(object, "pattern", where), where + ".pattern"),
        parseSplitBehavior(requireString(object, "behavior", where), where),
        optionalBool(object, "invert", false, where));
  if (type == "Metaspace")
    return makeMetaspace(object, where);
  if (type == "Whitespace")
    return std::make_unique<PatternSplit>(
        Pattern::fromJson(JsonValue(JsonObject{{"Regex", kWordOrSymbolRun}}), where),
        SplitBehavior::Removed, true);
  if (type == "WhitespaceSplit")
    return std::make_unique<CharacterSplit>(isWhitespace, SplitBehavior::Removed);
  if (type == "BertPreTokenizer") {
    std::vector<std::unique_ptr<PreTokenizer>> steps;
    steps.push_back(std::make_unique<CharacterSplit>(isWhitespace, SplitBehavior::Removed));
    steps.push_back(std::make_unique<CharacterSplit>(isBertPunctuation, SplitBehavior::Isolated));
    return std::make_unique<SequencePreTokenizer>(std::move(steps));
  }
  if (type == "Punctuation") {
    std::string behavior = optionalString(object, "behavior", where).value_or("Isolated");
    return std::make_unique<CharacterSplit>(isBertPunctuation, parseSplitBehavior(behavior, where));
  }
  if (type == "Digits") {
    // Rust's char::is_numeric (Nd, Nl, No): "①" and "٣" are digits too.
    auto isDigit = [](char32_t c) { return (c >= '0' && c <= '9') || (c >= 0x80 && isNumeric(c)); };
    bool individual = optionalBool(object, "individual_digits", false, where);
    return std::make_unique<CharacterSplit>(isDigit, individual ? SplitBehavior::Isolated
                                                                : SplitBehavior::Contiguous);
  }
  if (type == "CharDelimiterSplit") {
    char32_t delimiter = singleCharacter(requireString(object, "delimiter", where), where);
    return std::make_unique<CharacterSplit>([delimiter](char32_t c) { return c == delimiter; },
                                            SplitBehavior::Removed);
  }
  if (type == "Sequence")
    return makeSequence(object, where);
  unsupportedComponent(where, type);
}

} // namespace onnxc::text
