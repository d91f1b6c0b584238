//===- driver/ConfigJson.cpp - The JSON config files of model folders ------===//
#include "driver/ConfigJson.h"

#include <cctype>
#include <fstream>
#include <sstream>

namespace onnxc {
namespace {

class JsonParser {
public:
  JsonParser(const std::string &text, const std::string &file) : text_(text), file_(file) {}

  Json parseDocument() {
    Json value = parseValue(0);
    skipSpace();
    if (pos_ != text_.size())
      error("text after the JSON value");
    return value;
  }

private:
  [[noreturn]] void error(const std::string &what) const {
    size_t line = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i)
      line += text_[i] == '\n';
    fail(file_, ":", line, ": malformed JSON: ", what);
  }
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void expect(char c) {
    if (!consume(c))
      error(std::string("expected '") + c + "'");
  }
  bool consumeWord(const char *word) {
    size_t n = std::char_traits<char>::length(word);
    if (text_.compare(pos_, n, word) != 0)
      return false;
    pos_ += n;
    return true;
  }

  std::string parseString() {
    expect('"');
    std::string out;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      char c = text_[pos_++];
      if (c != '\\') {
        out += c;
        continue;
      }
      if (pos_ >= text_.size())
        break;
      char e = text_[pos_++];
      static const std::string plain = "\"\\/", codes = "bfnrt", chars = "\b\f\n\r\t";
      if (plain.find(e) != std::string::npos)
        out += e;
      else if (size_t k = codes.find(e); k != std::string::npos)
        out += chars[k];
      else if (e == 'u' && pos_ + 4 <= text_.size()) {
        unsigned code = unsigned(std::stoul(text_.substr(pos_, 4), nullptr, 16));
        pos_ += 4;
        out += code < 0x80 ? char(code) : '?';
      } else
        error("bad escape in a string");
    }
    expect('"');
    return out;
  }

  Json parseValue(int depth) {
    if (depth > 64)
      error("nested too deeply");
    skipSpace();
    Json value;
    if (pos_ >= text_.size())
      error("unexpected end");
    char c = text_[pos_];
    if (c == '{') {
      ++pos_;
      value.kind = Json::Kind::Object;
      if (consume('}'))
        return value;
      do {
        skipSpace();
        std::string key = parseString();
        expect(':');
        value.fields[key] = parseValue(depth + 1);
      } while (consume(','));
      expect('}');
    } else if (c == '[') {
      ++pos_;
      value.kind = Json::Kind::Array;
      if (consume(']'))
        return value;
      do
        value.items.push_back(parseValue(depth + 1));
      while (consume(','));
      expect(']');
    } else if (c == '"') {
      value.kind = Json::Kind::String;
      value.text = parseString();
    } else if (consumeWord("true") || consumeWord("false")) {
      value.kind = Json::Kind::Bool;
      value.boolean = text_[pos_ - 1] == 'e' && text_[pos_ - 2] == 'u';
    } else if (consumeWord("null")) {
      value.kind = Json::Kind::Null;
    } else {
      size_t used = 0;
      try {
        value.number = std::stod(text_.substr(pos_, 40), &used);
      } catch (const std::exception &) {
        used = 0;
      }
      if (used == 0)
        error("unexpected character");
      pos_ += used;
      value.kind = Json::Kind::Number;
    }
    return value;
  }

  const std::string &text_;
  std::string file_;
  size_t pos_ = 0;
};

} // namespace

Json parseJson(const std::string &text, const std::string &file) {
  return JsonParser(text, file).parseDocument();
}

Json readJsonFile(const std::string &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(file, ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return parseJson(buffer.str(), file);
}

} // namespace onnxc
