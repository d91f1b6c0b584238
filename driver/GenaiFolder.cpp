//===- driver/GenaiFolder.cpp - An onnxruntime-genai model folder (genai_config.json) -===//
#include "driver/GenaiFolder.h"

#include "ir/Error.h"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>

namespace onnxc {
namespace {

/// A JSON value: just what genai_config.json needs (no \u escapes beyond
/// ASCII, numbers as double).
struct Json {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool boolean = false;
  double number = 0;
  std::string text;
  std::vector<Json> items;
  std::map<std::string, Json> fields;

  const Json *field(const std::string &name) const {
    auto it = fields.find(name);
    return kind == Kind::Object && it != fields.end() ? &it->second : nullptr;
  }
};

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

/// Typed reads of optional fields, failing on the wrong kind.
class ConfigReader {
public:
  explicit ConfigReader(std::string file) : file_(std::move(file)) {}

  std::string string(const Json *object, const char *name, const std::string &path) const {
    const Json *v = object ? object->field(name) : nullptr;
    if (!v || v->kind == Json::Kind::Null)
      return "";
    if (v->kind != Json::Kind::String)
      fail(file_, ": '", path, name, "' must be a string");
    return v->text;
  }
  std::optional<double> number(const Json *object, const char *name,
                               const std::string &path) const {
    const Json *v = object ? object->field(name) : nullptr;
    if (!v || v->kind == Json::Kind::Null)
      return std::nullopt;
    if (v->kind != Json::Kind::Number)
      fail(file_, ": '", path, name, "' must be a number");
    return v->number;
  }
  std::optional<int64_t> integer(const Json *object, const char *name,
                                 const std::string &path) const {
    std::optional<double> v = number(object, name, path);
    if (!v)
      return std::nullopt;
    if (*v != double(int64_t(*v)))
      fail(file_, ": '", path, name, "' must be an integer, got ", *v);
    return int64_t(*v);
  }
  std::optional<bool> boolean(const Json *object, const char *name, const std::string &path) const {
    const Json *v = object ? object->field(name) : nullptr;
    if (!v || v->kind == Json::Kind::Null)
      return std::nullopt;
    if (v->kind != Json::Kind::Bool)
      fail(file_, ": '", path, name, "' must be true or false");
    return v->boolean;
  }
  /// One id or a list of ids.
  std::vector<int64_t> ids(const Json *object, const char *name, const std::string &path) const {
    const Json *v = object ? object->field(name) : nullptr;
    std::vector<int64_t> out;
    if (!v || v->kind == Json::Kind::Null)
      return out;
    std::vector<Json> items = v->kind == Json::Kind::Array ? v->items : std::vector<Json>{*v};
    for (const Json &item : items) {
      if (item.kind != Json::Kind::Number || item.number != double(int64_t(item.number)))
        fail(file_, ": '", path, name, "' must be a token id or a list of them");
      out.push_back(int64_t(item.number));
    }
    return out;
  }
  /// A printf pattern with one %d, formatted for `layer`.
  std::string layerName(const std::string &pattern, int64_t layer, const char *what) const {
    size_t at = pattern.find("%d");
    if (at == std::string::npos || pattern.find('%', at + 2) != std::string::npos)
      fail(file_, ": '", what, "' must hold one %d (the layer), got '", pattern, "'");
    return pattern.substr(0, at) + std::to_string(layer) + pattern.substr(at + 2);
  }

private:
  std::string file_;
};

} // namespace

std::string GenaiFolder::mapping() const {
  std::string out;
  auto add = [&](const std::string &role, const std::string &name) {
    if (!name.empty())
      out += (out.empty() ? "" : ",") + role + "=" + name;
  };
  add("input_ids", inputIds);
  add("attention_mask", attentionMask);
  add("position_ids", positionIds);
  add("logits", logits);
  for (const auto &[past, present] : cachePairs)
    add(past, present);
  return out;
}

bool isGenaiFolder(const std::string &path) {
  std::error_code error;
  return std::filesystem::is_directory(path, error) &&
         std::filesystem::is_regular_file(std::filesystem::path(path) / "genai_config.json", error);
}

GenaiFolder readGenaiFolder(const std::string &folder) {
  std::string file = (std::filesystem::path(folder) / "genai_config.json").string();
  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(file, ": cannot be read");
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  Json root = JsonParser(text, file).parseDocument();
  ConfigReader read(file);
  const Json *model = root.field("model");
  const Json *decoder = model ? model->field("decoder") : nullptr;
  if (!decoder)
    fail(file, ": no 'model.decoder' section (is it an onnxruntime-genai folder?)");
  if (decoder->field("sliding_window") || decoder->field("pipeline"))
    fail(file, ": a decoder with a sliding window or a pipeline of models is not supported");
  GenaiFolder out;
  std::string filename = read.string(decoder, "filename", "model.decoder.");
  if (filename.empty())
    fail(file, ": 'model.decoder.filename' is missing");
  out.modelPath = (std::filesystem::path(folder) / filename).string();
  const Json *inputs = decoder->field("inputs");
  const Json *outputs = decoder->field("outputs");
  out.inputIds = read.string(inputs, "input_ids", "model.decoder.inputs.");
  out.attentionMask = read.string(inputs, "attention_mask", "model.decoder.inputs.");
  out.positionIds = read.string(inputs, "position_ids", "model.decoder.inputs.");
  out.logits = read.string(outputs, "logits", "model.decoder.outputs.");
  std::optional<int64_t> layers = read.integer(decoder, "num_hidden_layers", "model.decoder.");
  std::string pastKey = read.string(inputs, "past_key_names", "model.decoder.inputs.");
  std::string pastValue = read.string(inputs, "past_value_names", "model.decoder.inputs.");
  std::string presentKey = read.string(outputs, "present_key_names", "model.decoder.outputs.");
  std::string presentValue = read.string(outputs, "present_value_names", "model.decoder.outputs.");
  if (!pastKey.empty() || !presentKey.empty()) {
    if (!layers || *layers <= 0 || *layers > 4096)
      fail(file, ": 'model.decoder.num_hidden_layers' must be a positive layer count");
    if (pastKey.empty() || pastValue.empty() || presentKey.empty() || presentValue.empty())
      fail(file, ": the past and present key and value names must be given together");
    for (int64_t layer = 0; layer < *layers; ++layer) {
      out.cachePairs.emplace_back(read.layerName(pastKey, layer, "past_key_names"),
                                  read.layerName(presentKey, layer, "present_key_names"));
      out.cachePairs.emplace_back(read.layerName(pastValue, layer, "past_value_names"),
                                  read.layerName(presentValue, layer, "present_value_names"));
    }
  }
  out.eosTokenIds = read.ids(model, "eos_token_id", "model.");
  std::vector<int64_t> bos = read.ids(model, "bos_token_id", "model.");
  std::vector<int64_t> pad = read.ids(model, "pad_token_id", "model.");
  if (!bos.empty())
    out.bosTokenId = bos[0];
  if (!pad.empty())
    out.padTokenId = pad[0];
  out.contextLength = read.integer(model, "context_length", "model.");
  const Json *search = root.field("search");
  out.maxLength = read.integer(search, "max_length", "search.");
  out.topK = read.integer(search, "top_k", "search.");
  out.topP = read.number(search, "top_p", "search.");
  out.temperature = read.number(search, "temperature", "search.");
  out.doSample = read.boolean(search, "do_sample", "search.");
  if (std::optional<int64_t> beams = read.integer(search, "num_beams", "search.");
      beams && *beams != 1)
    fail(file, ": 'search.num_beams' = ", *beams, " is not supported (onnxc generates one beam)");
  return out;
}

} // namespace onnxc
