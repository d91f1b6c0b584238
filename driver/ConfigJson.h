//===- driver/ConfigJson.h - The JSON config files of model folders --------===//
//
// genai_config.json, config.json, generation_config.json and
// tokenizer_config.json are small JSON files read for a few fields each. A
// reader of our own keeps the driver's messages in one form: the file, the
// line and what is malformed, or the field that has the wrong kind.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxc {

/// A JSON value: what the folders' config files need (no \u escapes beyond
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

/// Parses `text`, the contents of `file` (named in errors).
Json parseJson(const std::string &text, const std::string &file);
/// Reads and parses `file`; fails in one line when it cannot be read.
Json readJsonFile(const std::string &file);

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

} // namespace onnxc
