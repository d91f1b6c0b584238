//===- text/chat/Json.cpp - JSON to template values and back ---------------===//
#include "text/chat/Json.h"

#include "ir/Error.h"

#include "text/Unicode.h"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

namespace onnxc::text::chat {
namespace {

constexpr int kMaxJsonDepth = 256;

class JsonReader {
public:
  JsonReader(std::string_view text, const std::string &what) : text_(text), what_(what) {}

  Value readDocument() {
    Value value = readValue(0);
    skipSpace();
    if (pos_ != text_.size())
      error("unexpected text after the value");
    return value;
  }

private:
  [[noreturn]] void error(const std::string &problem) const {
    fail(what_, ": ", problem, " at byte ", pos_);
  }

  void skipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t' ||
                                   text_[pos_] == '\n' || text_[pos_] == '\r'))
      ++pos_;
  }

  bool consume(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word)
      return false;
    pos_ += word.size();
    return true;
  }

  Value readValue(int depth) {
    if (depth > kMaxJsonDepth)
      error("nesting deeper than 256");
    skipSpace();
    if (pos_ >= text_.size())
      error("unexpected end of the text");
    char c = text_[pos_];
    if (c == '{')
      return readObject(depth);
    if (c == '[')
      return readArray(depth);
    if (c == '"')
      return Value::string(readString());
    if (consume("true"))
      return Value::boolean(true);
    if (consume("false"))
      return Value::boolean(false);
    if (consume("null"))
      return Value::none();
    if (c == '-' || (c >= '0' && c <= '9'))
      return readNumber();
    error(std::string("unexpected character '") + c + "'");
  }

  Value readObject(int depth) {
    ++pos_;
    ValueDict dict;
    skipSpace();
    if (consume("}"))
      return Value::dict(std::move(dict));
    while (true) {
      skipSpace();
      if (pos_ >= text_.size() || text_[pos_] != '"')
        error("expected a string key");
      std::string key = readString();
      skipSpace();
      if (!consume(":"))
        error("expected ':'");
      dict.set(key, readValue(depth + 1));
      skipSpace();
      if (consume("}"))
        return Value::dict(std::move(dict));
      if (!consume(","))
        error("expected ',' or '}'");
    }
  }

  Value readArray(int depth) {
    ++pos_;
    ValueList items;
    skipSpace();
    if (consume("]"))
      return Value::list(std::move(items));
    while (true) {
      items.push_back(readValue(depth + 1));
      skipSpace();
      if (consume("]"))
        return Value::list(std::move(items));
      if (!consume(","))
        error("expected ',' or ']'");
    }
  }

  unsigned readHex4() {
    if (pos_ + 4 > text_.size())
      error("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[pos_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= unsigned(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= unsigned(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= unsigned(h - 'A' + 10);
      else
        error("bad \\u escape");
    }
    return code;
  }

  std::string readString() {
    ++pos_;
    std::string out;
    while (true) {
      if (pos_ >= text_.size())
        error("unterminated string");
      char c = text_[pos_++];
      if (c == '"')
        return out;
      if (static_cast<unsigned char>(c) < 0x20)
        error("control character in a string");
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        error("unterminated string");
      char e = text_[pos_++];
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'u': {
        unsigned code = readHex4();
        if (code >= 0xD800 && code < 0xDC00 && consume("\\u")) {
          unsigned low = readHex4();
          if (low < 0xDC00 || low >= 0xE000)
            error("unpaired surrogate");
          code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
        } else if (code >= 0xD800 && code < 0xE000) {
          error("unpaired surrogate");
        }
        appendUtf8(out, char32_t(code));
        break;
      }
      default:
        error(std::string("bad escape '\\") + e + "'");
      }
    }
  }

  Value readNumber() {
    size_t start = pos_;
    bool isFloat = false;
    if (text_[pos_] == '-')
      ++pos_;
    while (pos_ < text_.size()) {
      char c = text_[pos_];
      if (c == '.' || c == 'e' || c == 'E' || c == '+' || (c == '-' && pos_ > start))
        isFloat = true;
      else if (c < '0' || c > '9')
        break;
      ++pos_;
    }
    std::string number(text_.substr(start, pos_ - start));
    char *end = nullptr;
    errno = 0;
    if (!isFloat) {
      long long value = std::strtoll(number.c_str(), &end, 10);
      if (errno == 0 && *end == '\0')
        return Value::integer(value);
    }
    double value = std::strtod(number.c_str(), &end);
    if (end == number.c_str() || *end != '\0')
      error("bad number '" + number + "'");
    return Value::floating(value);
  }

  std::string_view text_;
  const std::string &what_;
  size_t pos_ = 0;
};

/// Decodes one UTF-8 sequence at `i` (advancing it); invalid bytes read as themselves.
unsigned nextCodePoint(const std::string &text, size_t &i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned c = byte(i);
  int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
  bool whole = extra > 0 && i + size_t(extra) < text.size();
  for (int k = 1; whole && k <= extra; ++k)
    whole = (byte(i + size_t(k)) & 0xC0) == 0x80;
  if (!whole) {
    ++i;
    return c;
  }
  unsigned code = c & (0x3F >> extra);
  for (int k = 1; k <= extra; ++k)
    code = (code << 6) | (byte(i + size_t(k)) & 0x3F);
  i += size_t(extra) + 1;
  return code;
}

void appendEscape(std::string &out, unsigned code) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "\\u%04x", code);
  out += buffer;
}

/// A JSON string as Python's json.dumps(ensure_ascii=True) writes it, HTML-safe.
void writeString(std::string &out, const std::string &text) {
  out += '"';
  for (size_t i = 0; i < text.size();) {
    unsigned code = nextCodePoint(text, i);
    switch (code) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    case '\b':
      out += "\\b";
      break;
    case '\f':
      out += "\\f";
      break;
    case '<':
    case '>':
    case '&':
    case '\'':
      appendEscape(out, code); // jinja2's htmlsafe_json_dumps
      break;
    default:
      if (code < 0x20 || code >= 0x7F) {
        if (code >= 0x10000) {
          appendEscape(out, 0xD800 + ((code - 0x10000) >> 10));
          appendEscape(out, 0xDC00 + ((code - 0x10000) & 0x3FF));
        } else {
          appendEscape(out, code);
        }
      } else {
        out += char(code);
      }
    }
  }
  out += '"';
}

void writeValue(std::string &out, const Value &value, std::optional<int> indent, int level) {
  auto newline = [&](int depth) {
    if (indent) {
      out += '\n';
      out.append(size_t(*indent) * size_t(depth), ' ');
    }
  };
  const char *itemSeparator = indent ? "," : ", ";
  switch (value.kind()) {
  case Value::Kind::None:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += value.asBool() ? "true" : "false";
    return;
  case Value::Kind::Int:
    out += std::to_string(value.asInt());
    return;
  case Value::Kind::Float: {
    double f = value.asFloat();
    out += f != f            ? "NaN"
           : f == 1.0 / 0.0  ? "Infinity"
           : f == -1.0 / 0.0 ? "-Infinity"
                             : formatFloat(f);
    return;
  }
  case Value::Kind::String:
    writeString(out, value.asString());
    return;
  case Value::Kind::List: {
    const ValueList &items = value.asList();
    if (items.empty()) {
      out += "[]";
      return;
    }
    out += '[';
    for (size_t i = 0; i < items.size(); ++i) {
      if (i)
        out += itemSeparator;
      newline(level + 1);
      writeValue(out, items[i], indent, level + 1);
    }
    newline(level);
    out += ']';
    return;
  }
  case Value::Kind::Dict:
  case Value::Kind::Namespace: {
    std::vector<const std::pair<std::string, Value> *> entries;
    for (const auto &entry : value.asDict().entries)
      entries.push_back(&entry);
    if (entries.empty()) {
      out += "{}";
      return;
    }
    std::sort(entries.begin(), entries.end(),
              [](const auto *a, const auto *b) { return a->first < b->first; });
    out += '{';
    for (size_t i = 0; i < entries.size(); ++i) {
      if (i)
        out += itemSeparator;
      newline(level + 1);
      writeString(out, entries[i]->first);
      out += ": ";
      writeValue(out, entries[i]->second, indent, level + 1);
    }
    newline(level);
    out += '}';
    return;
  }
  case Value::Kind::Undefined:
  case Value::Kind::Callable:
    fail("tojson: object of type ", value.typeName(), " is not JSON serializable");
  }
}

} // namespace

Value parseJson(std::string_view text, const std::string &what) {
  return JsonReader(text, what).readDocument();
}

std::string toJson(const Value &value, std::optional<int> indent) {
  std::string out;
  writeValue(out, value, indent, 0);
  return out;
}

} // namespace onnxc::text::chat
