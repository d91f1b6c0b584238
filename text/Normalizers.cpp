//===- text/Normalizers.cpp - tokenizer.json normalizers ---------------------===//
//
// Each normalizer does what its HF namesake does to the string; the
// character classes are those of text/Unicode.h.
//
//===----------------------------------------------------------------------===//
#include "text/Normalizers.h"

#include "text/Pattern.h"
#include "text/Unicode.h"

#include <algorithm>

namespace onnxc::text {
namespace {

class UnicodeNormalizer : public Normalizer {
public:
  explicit UnicodeNormalizer(NormalForm form) : form_(form) {}
  void normalize(std::string &text) const override {
    bool ascii = std::all_of(text.begin(), text.end(),
                             [](char c) { return static_cast<unsigned char>(c) < 0x80; });
    if (!ascii)
      text = normalizeUnicode(text, form_);
  }

private:
  NormalForm form_;
};

void lowercase(std::string &text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size())
    appendLowercase(out, nextCodePoint(text, pos));
  text = std::move(out);
}

/// Drops the nonspacing marks (HF's StripAccents; after NFD it removes accents).
void dropNonspacingMarks(std::string &text) {
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t begin = pos;
    char32_t c = nextCodePoint(text, pos);
    if (!isNonspacingMark(c))
      out.append(text, begin, pos - begin);
  }
  text = std::move(out);
}

class LowercaseNormalizer : public Normalizer {
public:
  void normalize(std::string &text) const override { lowercase(text); }
};

class StripAccentsNormalizer : public Normalizer {
public:
  void normalize(std::string &text) const override { dropNonspacingMarks(text); }
};

class BertNormalizer : public Normalizer {
public:
  BertNormalizer(bool cleanText, bool chineseChars, bool stripAccents, bool lowercase)
      : cleanText_(cleanText), chineseChars_(chineseChars), stripAccents_(stripAccents),
        lowercase_(lowercase) {}

  void normalize(std::string &text) const override {
    std::string out;
    out.reserve(text.size() + text.size() / 4);
    size_t pos = 0;
    while (pos < text.size()) {
      size_t begin = pos;
      char32_t c = nextCodePoint(text, pos);
      if (cleanText_) {
        // Controls go first (U+0085 is both a control and a space), then spaces become ' '.
        bool isControl = c != '\t' && c != '\n' && c != '\r' && isOther(c);
        if (c == 0 || c == 0xFFFD || isControl)
          continue;
        if (isWhitespace(c)) {
          out.push_back(' ');
          continue;
        }
      }
      if (chineseChars_ && isChineseChar(c)) {
        out.push_back(' ');
        out.append(text, begin, pos - begin);
        out.push_back(' ');
        continue;
      }
      out.append(text, begin, pos - begin);
    }
    text = std::move(out);
    if (stripAccents_) {
      text = normalizeUnicode(text, NormalForm::NFD);
      dropNonspacingMarks(text);
    }
    if (lowercase_)
      lowercase(text);
  }

private:
  bool cleanText_, chineseChars_, stripAccents_, lowercase_;
};

class StripNormalizer : public Normalizer {
public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  void normalize(std::string &text) const override {
    size_t begin = 0, end = text.size();
    if (left_) {
      size_t pos = 0;
      while (pos < end) {
        size_t at = pos;
        if (!isWhitespace(nextCodePoint(text, pos))) {
          pos = at;
          break;
        }
      }
      begin = pos;
    }
    if (right_) {
      while (end > begin) {
        size_t at = end - 1;
        while (at > begin && (static_cast<unsigned char>(text[at]) & 0xC0) == 0x80)
          --at;
        size_t pos = at;
        if (!isWhitespace(nextCodePoint(text, pos)))
          break;
        end = at;
      }
    }
    text = text.substr(begin, end - begin);
  }

private:
  bool left_, right_;
};

class PrependNormalizer : public Normalizer {
public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  void normalize(std::string &text) const override {
    if (!text.empty())
      text.insert(0, prefix_);
  }

private:
  std::string prefix_;
};

class ReplaceNormalizer : public Normalizer {
public:
  ReplaceNormalizer(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void normalize(std::string &text) const override { text = pattern_.replaceAll(text, content_); }

private:
  Pattern pattern_;
  std::string content_;
};

class SequenceNormalizer : public Normalizer {
public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> steps)
      : steps_(std::move(steps)) {}
  void normalize(std::string &text) const override {
    for (const auto &step : steps_)
      step->normalize(text);
  }

private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

std::unique_ptr<Normalizer> makeBertNormalizer(const JsonObject &object, const std::string &where) {
  bool lower = optionalBool(object, "lowercase", true, where);
  const JsonValue *strip = object.get("strip_accents");
  // strip_accents: null follows lowercase, as in BERT's original tokenizer.
  bool stripAccents = strip && strip->getAsBoolean() ? *strip->getAsBoolean() : lower;
  return std::make_unique<BertNormalizer>(optionalBool(object, "clean_text", true, where),
                                          optionalBool(object, "handle_chinese_chars", true, where),
                                          stripAccents, lower);
}

} // namespace

std::unique_ptr<Normalizer> makeNormalizer(const JsonValue &value, const std::string &where) {
  if (value.kind() == JsonValue::Null)
    return nullptr;
  const JsonObject &object = expectObject(value, where);
  std::string type = componentType(object, where);
  if (type == "NFC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFC);
  if (type == "NFD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFD);
  if (type == "NFKC")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFKC);
  if (type == "NFKD")
    return std::make_unique<UnicodeNormalizer>(NormalForm::NFKD);
  if (type == "Lowercase")
    return std::make_unique<LowercaseNormalizer>();
  if (type == "StripAccents")
    return std::make_unique<StripAccentsNormalizer>();
  if (type == "BertNormalizer")
    return makeBertNormalizer(object, where);
  if (type == "Strip")
    return std::make_unique<StripNormalizer>(optionalBool(object, "strip_left", true, where),
                                             optionalBool(object, "strip_right", true, where));
  if (type == "Prepend")
    return std::make_unique<PrependNormalizer>(requireString(object, "prepend", where));
  if (type == "Replace")
    return std::make_unique<ReplaceNormalizer>(
        Pattern::fromJson(requireField(object, "pattern", where), where + ".pattern"),
        requireString(object, "content", where));
  if (type == "Precompiled")
    return makePrecompiledNormalizer(object, where);
  if (type == "Sequence") {
    const JsonArray &items = expectArray(requireField(object, "normalizers", where), where);
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (size_t i = 0; i < items.size(); ++i)
      if (auto step = makeNormalizer(items[i], where + ".normalizers[" + std::to_string(i) + "]"))
        steps.push_back(std::move(step));
    return std::make_unique<SequenceNormalizer>(std::move(steps));
  }
  unsupportedComponent(where, type);
}

} // namespace onnxc::text
