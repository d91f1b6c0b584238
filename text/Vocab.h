//===- text/Vocab.h - A token <-> id table -----------------------------------===//
#pragma once

#include "text/JsonFields.h"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace onnxc::text {

/// Hashes std::string and std::string_view alike, so lookups need no copy.
struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};

class Vocab {
public:
  /// Adds `token` as `id`; a token listed twice keeps its last id, as HF's map does.
  void add(std::string token, uint32_t id);
  std::optional<uint32_t> find(std::string_view token) const {
    auto it = ids_.find(token);
    if (it == ids_.end())
      return std::nullopt;
    return it->second;
  }
  const std::string *token(uint32_t id) const {
    return id < tokens_.size() && hasToken_[id] ? &tokens_[id] : nullptr;
  }
  size_t size() const { return tokens_.size(); }

  /// Reads {"token": id, ...}.
  static Vocab fromJsonObject(const JsonValue &value, const std::string &where);

private:
  std::unordered_map<std::string, uint32_t, StringHash, std::equal_to<>> ids_;
  std::vector<std::string> tokens_;
  std::vector<bool> hasToken_;
};

} // namespace onnxc::text
