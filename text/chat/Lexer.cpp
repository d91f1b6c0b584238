//===- text/chat/Lexer.cpp - Chat template text to tokens ------------------===//
//
// Follows jinja2 3.1's lexer (jinja2/lexer.py) rule by rule where the output
// depends on it: which whitespace a tag's markers remove, when lstrip_blocks
// applies (only after a newline or at the start of the template, and never
// to {{ }}), and that end markers inside open brackets do not end a tag.
//
//===----------------------------------------------------------------------===//
#include "text/chat/Lexer.h"

#include "ir/Error.h"

#include "text/Unicode.h"

#include <algorithm>
#include <cstring>

namespace onnxc::text::chat {
namespace {

bool isSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool isDigit(char c) { return c >= '0' && c <= '9'; }
bool isNameStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool isNameChar(char c) { return isNameStart(c) || isDigit(c); }

/// \r\n and \r as \n, and one trailing newline removed (keep_trailing_newline=False).
std::string normalizeNewlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n')
        ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n')
    out.pop_back();
  return out;
}

class Lexer {
public:
  explicit Lexer(std::string source) : src_(std::move(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size())
      lexTextThenTag();
    tokens_.push_back({TokenKind::End, "", line_});
    return std::move(tokens_);
  }

private:
  [[noreturn]] void error(const std::string &problem) const {
    fail("chat template line ", line_, ": ", problem);
  }

  void advanceTo(size_t end) {
    line_ += int(std::count(src_.begin() + long(pos_), src_.begin() + long(end), '\n'));
    pos_ = end;
  }

  void emitText(std::string text, int line) {
    if (!text.empty())
      tokens_.push_back({TokenKind::Text, std::move(text), line});
  }

  /// The text up to the next tag with the tag's whitespace rules applied, then the tag.
  void lexTextThenTag() {
    size_t open = pos_;
    while ((open = src_.find('{', open)) != std::string::npos) {
      char next = open + 1 < src_.size() ? src_[open + 1] : '\0';
      if (next == '{' || next == '%' || next == '#')
        break;
      ++open;
    }
    int textLine = line_;
    if (open == std::string::npos) {
      emitText(src_.substr(pos_), textLine);
      advanceTo(src_.size());
      return;
    }
    char kind = src_[open + 1];
    char sign = open + 2 < src_.size() ? src_[open + 2] : '\0';
    std::string text = src_.substr(pos_, open - pos_);
    if (sign == '-') {
      size_t keep = text.size();
      while (keep > 0 && isSpace(text[keep - 1]))
        --keep;
      text.resize(keep);
    } else if (sign != '+' && kind != '{') {
      // lstrip_blocks: only spaces from the line start, after a newline or the template start.
      size_t lineStart = text.rfind('\n');
      lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
      bool blank =
          lineStart < text.size() && std::all_of(text.begin() + long(lineStart), text.end(),
                                                 [](char c) { return isSpace(c) && c != '\n'; });
      if ((lineStart > 0 || lineStarting_) && blank)
        text.resize(lineStart);
    }
    emitText(std::move(text), textLine);
    advanceTo(open);
    size_t afterOpen = open + 2 + (sign == '-' || sign == '+' ? 1 : 0);
    if (kind == '#')
      lexComment(afterOpen);
    else if (kind == '%' && isRawTag(afterOpen))
      lexRaw();
    else
      lexTag(kind == '{' ? TokenKind::PrintBegin : TokenKind::BlockBegin, afterOpen);
  }

  /// After an end marker: `-` eats all following whitespace, a plain block end one newline.
  void finishTag(size_t markerEnd, char sign, bool trimNewline) {
    size_t end = markerEnd;
    if (sign == '-')
      while (end < src_.size() && isSpace(src_[end]))
        ++end;
    else if (sign != '+' && trimNewline && end < src_.size() && src_[end] == '\n')
      ++end;
    lineStarting_ = end > 0 && src_[end - 1] == '\n';
    advanceTo(end);
  }

  void lexComment(size_t from) {
    size_t close = src_.find("#}", from);
    if (close == std::string::npos)
      error("unclosed comment");
    char sign = close > from ? src_[close - 1] : '\0';
    finishTag(close + 2, sign, true);
  }

  /// `{% raw %}` (with optional markers) starting at `from`, the text after `{%`.
  bool isRawTag(size_t from) const {
    size_t i = from;
    while (i < src_.size() && isSpace(src_[i]))
      ++i;
    if (src_.compare(i, 3, "raw") != 0 || (i + 3 < src_.size() && isNameChar(src_[i + 3])))
      return false;
    return true;
  }

  void lexRaw() {
    int rawLine = line_;
    size_t close = src_.find("%}", pos_);
    if (close == std::string::npos)
      error("unclosed raw tag");
    bool stripAfter = src_[close - 1] == '-';
    size_t bodyStart = close + 2;
    if (stripAfter)
      while (bodyStart < src_.size() && isSpace(src_[bodyStart]))
        ++bodyStart;
    // The first {% endraw %}, with its own markers.
    size_t search = bodyStart;
    while (true) {
      size_t open = src_.find("{%", search);
      if (open == std::string::npos) {
        line_ = rawLine;
        error("raw tag without endraw");
      }
      size_t i = open + 2;
      char sign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i++] : '\0';
      while (i < src_.size() && isSpace(src_[i]))
        ++i;
      if (src_.compare(i, 6, "endraw") != 0) {
        search = open + 2;
        continue;
      }
      i += 6;
      while (i < src_.size() && isSpace(src_[i]))
        ++i;
      char endSign = i < src_.size() && (src_[i] == '-' || src_[i] == '+') ? src_[i++] : '\0';
      if (src_.compare(i, 2, "%}") != 0) {
        search = open + 2;
        continue;
      }
      std::string body = src_.substr(bodyStart, open - bodyStart);
      if (sign == '-') {
        while (!body.empty() && isSpace(body.back()))
          body.pop_back();
      } else if (sign != '+') {
        size_t lineStart = body.rfind('\n');
        lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
        if (lineStart > 0 && lineStart < body.size() &&
            std::all_of(body.begin() + long(lineStart), body.end(),
                        [](char c) { return isSpace(c) && c != '\n'; }))
          body.resize(lineStart);
      }
      emitText(std::move(body), rawLine);
      finishTag(i + 2, endSign, true);
      return;
    }
  }

  /// The tokens of a {{ }} or {% %} tag from `from`, through its end marker.
  void lexTag(TokenKind begin, size_t from) {
    bool print = begin == TokenKind::PrintBegin;
    const char *close = print ? "}}" : "%}";
    tokens_.push_back({begin, "", line_});
    advanceTo(from);
    std::string brackets; // the closers the open brackets expect
    while (true) {
      if (pos_ >= src_.size())
        error(print ? "unclosed '{{'" : "unclosed '{%'");
      char c = src_[pos_];
      if (isSpace(c)) {
        advanceTo(pos_ + 1);
        continue;
      }
      if (brackets.empty()) {
        bool signed_ = (c == '-' || c == '+') && src_.compare(pos_ + 1, 2, close) == 0;
        if (signed_ && print && c == '+')
          signed_ = false; // `+}}` is the operator then `}}` in jinja2
        if (signed_ || src_.compare(pos_, 2, close) == 0) {
          tokens_.push_back({print ? TokenKind::PrintEnd : TokenKind::BlockEnd, "", line_});
          size_t markerEnd = pos_ + (signed_ ? 3 : 2);
          finishTag(markerEnd, signed_ ? c : '\0', !print);
          return;
        }
      }
      lexExpressionToken(brackets);
    }
  }

  void lexExpressionToken(std::string &brackets) {
    char c = src_[pos_];
    if (isDigit(c))
      return lexNumber();
    if (isNameStart(c)) {
      size_t end = pos_;
      while (end < src_.size() && isNameChar(src_[end]))
        ++end;
      tokens_.push_back({TokenKind::Name, src_.substr(pos_, end - pos_), line_});
      advanceTo(end);
      return;
    }
    if (c == '\'' || c == '"')
      return lexString();
    static const char *const twoChar[] = {"//", "**", "==", "!=", "<=", ">="};
    for (const char *op : twoChar)
      if (src_.compare(pos_, 2, op) == 0) {
        tokens_.push_back({TokenKind::Operator, op, line_});
        advanceTo(pos_ + 2);
        return;
      }
    if (!std::strchr("+-*/%~<>=.,:|()[]{}", c) || c == '\0')
      error(std::string("unexpected character '") + c + "'");
    if (c == '(' || c == '[' || c == '{')
      brackets += c == '(' ? ')' : c == '[' ? ']' : '}';
    if (c == ')' || c == ']' || c == '}') {
      if (brackets.empty() || brackets.back() != c)
        error(std::string("unexpected '") + c + "'");
      brackets.pop_back();
    }
    tokens_.push_back({TokenKind::Operator, std::string(1, c), line_});
    advanceTo(pos_ + 1);
  }

  void lexNumber() {
    size_t end = pos_;
    auto digits = [&] {
      while (end < src_.size() && (isDigit(src_[end]) || src_[end] == '_'))
        ++end;
    };
    digits();
    bool isFloat = false;
    if (end + 1 < src_.size() && src_[end] == '.' && isDigit(src_[end + 1])) {
      isFloat = true;
      ++end;
      digits();
    }
    if (end < src_.size() && (src_[end] == 'e' || src_[end] == 'E')) {
      size_t e = end + 1;
      if (e < src_.size() && (src_[e] == '+' || src_[e] == '-'))
        ++e;
      if (e < src_.size() && isDigit(src_[e])) {
        isFloat = true;
        end = e;
        digits();
      }
    }
    std::string text;
    for (size_t i = pos_; i < end; ++i)
      if (src_[i] != '_')
        text += src_[i];
    tokens_.push_back({isFloat ? TokenKind::Float : TokenKind::Integer, text, line_});
    advanceTo(end);
  }

  /// A string literal, decoded as Python's unicode-escape codec decodes it.
  void lexString() {
    char quote = src_[pos_];
    int startLine = line_;
    size_t i = pos_ + 1;
    std::string value;
    while (true) {
      if (i >= src_.size()) {
        error("unterminated string");
      }
      char c = src_[i++];
      if (c == quote)
        break;
      if (c != '\\') {
        value += c;
        continue;
      }
      if (i >= src_.size())
        error("unterminated string");
      i = decodeEscape(i, value);
    }
    tokens_.push_back({TokenKind::String, std::move(value), startLine});
    advanceTo(i);
  }

  /// The escape whose letter is at `i` (after the backslash); returns the index after it.
  size_t decodeEscape(size_t i, std::string &value) {
    char e = src_[i++];
    static const char simple[] = "n\nt\tr\r\\\\''\"\"a\ab\bf\fv\v";
    for (size_t k = 0; k + 1 < sizeof simple; k += 2)
      if (simple[k] == e) {
        value += simple[k + 1];
        return i;
      }
    if (e == '\n')
      return i; // a backslash-newline continues the line
    int hexDigits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
    if (hexDigits) {
      unsigned code = 0;
      for (int k = 0; k < hexDigits; ++k, ++i) {
        char h = i < src_.size() ? src_[i] : '\0';
        int digit = isDigit(h)               ? h - '0'
                    : (h >= 'a' && h <= 'f') ? h - 'a' + 10
                    : (h >= 'A' && h <= 'F') ? h - 'A' + 10
                                             : -1;
        if (digit < 0)
          error(std::string("truncated \\") + e + " escape in a string");
        code = code * 16 + unsigned(digit);
      }
      if (code > 0x10FFFF)
        error("escape beyond U+10FFFF in a string");
      appendUtf8(value, char32_t(code));
      return i;
    }
    if (e >= '0' && e <= '7') {
      unsigned code = unsigned(e - '0');
      for (int k = 0; k < 2 && i < src_.size() && src_[i] >= '0' && src_[i] <= '7'; ++k)
        code = code * 8 + unsigned(src_[i++] - '0');
      appendUtf8(value, char32_t(code));
      return i;
    }
    if (e == 'N')
      error("\\N{...} escapes in strings are not supported");
    value += '\\';
    value += e; // Python keeps unknown escapes as written
    return i;
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool lineStarting_ = true;
  std::vector<Token> tokens_;
};

} // namespace

std::vector<Token> lexTemplate(std::string_view source) {
  return Lexer(normalizeNewlines(source)).run();
}

} // namespace onnxc::text::chat
