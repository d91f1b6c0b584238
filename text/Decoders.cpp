//===- text/Decoders.cpp - tokenizer.json decoders ---------------------------===//
//
// Each decoder is HF's decode_chain: a list of token strings in, a list out.
// Bytes that do not form valid UTF-8 come out as U+FFFD, as HF's lossy
// conversions do.
//
//===----------------------------------------------------------------------===//
#include "text/Decoders.h"

#include "text/ByteLevel.h"
#include "text/Pattern.h"
#include "text/Unicode.h"

namespace onnxc::text {
namespace {

/// Rust's String::from_utf8_lossy: each maximal invalid sequence becomes one U+FFFD.
std::string lossyUtf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  while (!bytes.empty()) {
    size_t bad = findInvalidUtf8(bytes);
    if (bad == std::string_view::npos) {
      out.append(bytes);
      break;
    }
    out.append(bytes.substr(0, bad));
    out += "\xEF\xBF\xBD";
    // Skip the longest prefix of a valid sequence that starts at `bad` (at least one byte).
    size_t skip = 1;
    auto lead = static_cast<unsigned char>(bytes[bad]);
    size_t expected = lead >= 0xC2 && lead <= 0xF4 ? utf8Length(lead) : 1;
    while (skip < expected && bad + skip < bytes.size() &&
           (static_cast<unsigned char>(bytes[bad + skip]) & 0xC0) == 0x80) {
      // The second byte of E0, ED, F0 and F4 sequences has a narrower range.
      auto next = static_cast<unsigned char>(bytes[bad + skip]);
      if (skip == 1 && ((lead == 0xE0 && next < 0xA0) || (lead == 0xED && next > 0x9F) ||
                        (lead == 0xF0 && next < 0x90) || (lead == 0xF4 && next > 0x8F)))
        break;
      ++skip;
    }
    bytes.remove_prefix(bad + skip);
  }
  return out;
}

class ByteLevelDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string bytes;
    for (const std::string &token : tokens) {
      size_t start = bytes.size();
      size_t pos = 0;
      bool mapped = true;
      while (pos < token.size()) {
        int byte = byteLevelByte(nextCodePoint(token, pos));
        if (byte < 0) {
          mapped = false;
          break;
        }
        bytes.push_back(static_cast<char>(byte));
      }
      // A token with a character outside the table (an added token) goes out as it is.
      if (!mapped) {
        bytes.resize(start);
        bytes += token;
      }
    }
    tokens.assign(1, lossyUtf8(bytes));
  }
};

class WordPieceDecoder : public Decoder {
public:
  WordPieceDecoder(std::string prefix, bool cleanup)
      : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string &token = tokens[i];
      if (i != 0) {
        if (token.compare(0, prefix_.size(), prefix_) == 0)
          token.erase(0, prefix_.size());
        else
          token.insert(0, 1, ' ');
      }
      if (cleanup_)
        token = cleanup(token);
    }
  }

private:
  /// BERT's clean_up_tokenization.
  static std::string cleanup(const std::string &text) {
    static const std::pair<const char *, const char *> kRules[] = {
        {" .", "."},   {" ?", "?"},     {" !", "!"},    {" ,", ","},
        {" ' ", "'"},  {" n't", "n't"}, {" 'm", "'m"},  {" do not", " don't"},
        {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    std::string out = text;
    for (const auto &[from, to] : kRules)
      out = Pattern::literal(from).replaceAll(out, to);
    return out;
  }
  std::string prefix_;
  bool cleanup_;
};

class MetaspaceDecoder : public Decoder {
public:
  MetaspaceDecoder(std::string replacement, bool stripFirst)
      : replacement_(std::move(replacement)), stripFirst_(stripFirst) {}
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] =
          Pattern::literal(replacement_).replaceAll(tokens[i], i == 0 && stripFirst_ ? "" : " ");
  }

private:
  std::string replacement_;
  bool stripFirst_;
};

class ByteFallbackDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::vector<std::string> out;
    std::string pending;
    auto flush = [&] {
      if (pending.empty())
        return;
      if (findInvalidUtf8(pending) == std::string::npos)
        out.push_back(pending);
      else
        for (size_t i = 0; i < pending.size(); ++i)
          out.push_back("\xEF\xBF\xBD");
      pending.clear();
    };
    for (std::string &token : tokens) {
      int byte = byteToken(token);
      if (byte >= 0) {
        pending.push_back(static_cast<char>(byte));
        continue;
      }
      flush();
      out.push_back(std::move(token));
    }
    flush();
    tokens = std::move(out);
  }

private:
  /// The byte of a "<0xNN>" token, or -1.
  static int byteToken(const std::string &token) {
    if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>')
      return -1;
    auto hex = [](char c) {
      return c >= '0' && c <= '9'   ? c - '0'
             : c >= 'A' && c <= 'F' ? c - 'A' + 10
             : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                    : -1;
    };
    int high = hex(token[3]), low = hex(token[4]);
    return high < 0 || low < 0 ? -1 : high * 16 + low;
  }
};

class FuseDecoder : public Decoder {
public:
  void decodeChain(std::vector<std::string> &tokens) const override {
    std::string joined;
    for (const std::string &token : tokens)
      joined += token;
    tokens.clear();
    tokens.push_back(std::move(joined));
  }
};

class StripDecoder : public Decoder {
public:
  StripDecoder(char32_t content, size_t start, size_t stop)
      : content_(content), start_(start), stop_(stop) {}
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens) {
      std::vector<size_t> starts; // byte offset of each character, then the end
      for (size_t pos = 0; pos < token.size();) {
        starts.push_back(pos);
        nextCodePoint(token, pos);
      }
      size_t count = starts.size();
      starts.push_back(token.size());
      auto at = [&](size_t i) {
        size_t pos = starts[i];
        return nextCodePoint(token, pos);
      };
      size_t first = 0;
      while (first < start_ && first < count && at(first) == content_)
        ++first;
      size_t last = count;
      while (count - last < stop_ && last > first && at(last - 1) == content_)
        --last;
      token = token.substr(starts[first], starts[last] - starts[first]);
    }
  }

private:
  char32_t content_;
  size_t start_, stop_;
};

class ReplaceDecoder : public Decoder {
public:
  ReplaceDecoder(Pattern pattern, std::string content)
      : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (std::string &token : tokens)
      token = pattern_.replaceAll(token, content_);
  }

private:
  Pattern pattern_;
  std::string content_;
};

class BpeSuffixDecoder : public Decoder {
public:
  explicit BpeSuffixDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i)
      tokens[i] =
          Pattern::literal(suffix_).replaceAll(tokens[i], i + 1 == tokens.size() ? "" : " ");
  }

private:
  std::string suffix_;
};

class SequenceDecoder : public Decoder {
public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> steps)
      : steps_(std::move(steps)) {}
  void decodeChain(std::vector<std::string> &tokens) const override {
    for (const auto &step : steps_)
      step->decodeChain(tokens);
  }

private:
  std::vector<std::unique_ptr<Decoder>> steps_;
};

std::unique_ptr<Decoder> makeMetaspaceDecoder(const JsonObject &object, const std::string &where) {
  std::string replacement = requireString(object, "replacement", where);
  bool stripFirst = optionalBool(object, "add_prefix_space", true, where);
  if (auto scheme = optionalString(object, "prepend_scheme", where))
    stripFirst = *scheme != "never";
  return std::make_unique<MetaspaceDecoder>(replacement, stripFirst);
}

std::unique_ptr<Decoder> makeStripDecoder(const JsonObject &object, const std::string &where) {
  std::string content = requireString(object, "content", where);
  size_t pos = 0;
  if (content.empty() || (nextCodePoint(content, pos), pos != content.size()))
    fail(where, ".content: expected a single character");
  pos = 0;
  auto count = [&](std::string_view key) {
    return static_cast<size_t>(std::max<int64_t>(0, optionalInteger(object, key, 0, where)));
  };
  return std::make_unique<StripDecoder>(nextCodePoint(content, pos), count("start"), count("stop"));
}

} // namespace

std::unique_ptr<Decoder> makeDecoder(const JsonValue &value, const std::string &where) {
  if (value.kind() == JsonValue::Null)
    return nullptr;
  const JsonObject &object = expectObject(value, where);
  std::string type = componentType(object, where);
  if (type == "ByteLevel")
    return std::make_unique<ByteLevelDecoder>();
  if (type == "WordPiece")
    return std::make_unique<WordPieceDecoder>(
        optionalString(object, "prefix", where).value_or("##"),
        optionalBool(object, "cleanup", true, where));
  if (type == "Metaspace")
    return makeMetaspaceDecoder(object, where);
  if (type == "ByteFallback")
    return std::make_unique<ByteFallbackDecoder>();
  if (type == "Fuse")
    return std::make_unique<FuseDecoder>();
  if (type == "Strip")
    return makeStripDecoder(object, where);
  if (type == "Replace")
    return std::make_unique<ReplaceDecoder>(
        Pattern::fromJson(requireField(object, "pattern", where), where + ".pattern"),
        requireString(object, "content", where));
  if (type == "BPEDecoder")
    return std::make_unique<BpeSuffixDecoder>(
        optionalString(object, "suffix", where).value_or("</w>"));
  if (type == "Sequence") {
    const JsonArray &items = expectArray(requireField(object, "decoders", where), where);
    std::vector<std::unique_ptr<Decoder>> steps;
    for (size_t i = 0; i < items.size(); ++i)
      if (auto step = makeDecoder(items[i], where + ".decoders[" + std::to_string(i) + "]"))
        steps.push_back(std::move(step));
    return std::make_unique<SequenceDecoder>(std::move(steps));
  }
  unsupportedComponent(where, type);
}

} // namespace onnxc::text
