//===- text/Vocab.cpp - A token <-> id table ---------------------------------===//
#include "text/Vocab.h"

namespace onnxc::text {

void Vocab::add(std::string token, uint32_t id) {
  if (id >= tokens_.size()) {
    tokens_.resize(id + 1);
    hasToken_.resize(id + 1, false);
  }
  tokens_[id] = token;
  hasToken_[id] = true;
  ids_[std::move(token)] = id;
}

Vocab Vocab::fromJsonObject(const JsonValue &value, const std::string &where) {
  const JsonObject &object = expectObject(value, where);
  Vocab vocab;
  vocab.ids_.reserve(object.size());
  for (const auto &[key, idValue] : object) {
    int64_t id = expectInteger(idValue, where + "['" + key.str() + "']");
    // Ids index a dense table: a stray huge id must not allocate gigabytes.
    if (id < 0 || id >= (int64_t{1} << 26))
      fail(where, "['", key.str(), "']: id ", id, " is out of range");
    vocab.add(key.str(), static_cast<uint32_t>(id));
  }
  return vocab;
}

} // namespace onnxc::text
