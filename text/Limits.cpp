//===- text/Limits.cpp - tokenizer.json truncation and padding ---------------===//
#include "text/Limits.h"

namespace onnxc::text {

std::optional<Truncation> readTruncation(const JsonValue &value, const std::string &where) {
  if (value.kind() == JsonValue::Null)
    return std::nullopt;
  const JsonObject &object = expectObject(value, where);
  Truncation truncation;
  int64_t maxLength = expectInteger(requireField(object, "max_length", where), where);
  if (maxLength < 0)
    fail(where, ".max_length: negative");
  truncation.maxLength = static_cast<size_t>(maxLength);
  truncation.fromLeft = optionalString(object, "direction", where).value_or("Right") == "Left";
  return truncation;
}

std::optional<Padding> readPadding(const JsonValue &value, const std::string &where) {
  if (value.kind() == JsonValue::Null)
    return std::nullopt;
  const JsonObject &object = expectObject(value, where);
  Padding padding;
  const JsonValue &strategy = requireField(object, "strategy", where);
  if (const JsonObject *fixed = strategy.getAsObject()) {
    int64_t length = expectInteger(requireField(*fixed, "Fixed", where + ".strategy"), where);
    if (length < 0)
      fail(where, ".strategy.Fixed: negative");
    padding.fixedLength = static_cast<size_t>(length);
  } else if (expectString(strategy, where + ".strategy") != "BatchLongest") {
    fail(where, ".strategy: expected \"BatchLongest\" or {\"Fixed\": N}");
  }
  padding.multipleOf = static_cast<size_t>(
      std::max<int64_t>(0, optionalInteger(object, "pad_to_multiple_of", 0, where)));
  padding.padId = static_cast<uint32_t>(optionalInteger(object, "pad_id", 0, where));
  padding.onLeft = optionalString(object, "direction", where).value_or("Right") == "Left";
  return padding;
}

void truncate(std::vector<uint32_t> &ids, const Truncation &truncation, size_t reserved) {
  if (truncation.maxLength < reserved)
    fail("truncation: max_length ", truncation.maxLength, " leaves no room for the ", reserved,
         " special tokens");
  size_t keep = truncation.maxLength - reserved;
  if (ids.size() <= keep)
    return;
  if (truncation.fromLeft)
    ids.erase(ids.begin(), ids.end() - static_cast<std::ptrdiff_t>(keep));
  else
    ids.resize(keep);
}

void pad(std::vector<uint32_t> &ids, const Padding &padding) {
  size_t target = padding.fixedLength.value_or(ids.size());
  if (padding.multipleOf > 0 && target % padding.multipleOf != 0)
    target += padding.multipleOf - target % padding.multipleOf;
  if (ids.size() >= target)
    return;
  if (padding.onLeft)
    ids.insert(ids.begin(), target - ids.size(), padding.padId);
  else
    ids.resize(target, padding.padId);
}

} // namespace onnxc::text
