//===- text/Limits.h - tokenizer.json truncation and padding -----------------===//
//
// A tokenizer.json may say to cut every encoding to a length and to pad it
// to one (sentence-transformers' files: truncate at 128, pad to 128). HF's
// encode applies both, so onnxc does too unless the caller opts out.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/JsonFields.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace onnxc::text {

struct Truncation {
  size_t maxLength = 0;
  bool fromLeft = false; // "direction": "Left" drops the first ids
};

struct Padding {
  std::optional<size_t> fixedLength; // "Fixed": N; nullopt for BatchLongest
  size_t multipleOf = 0;
  uint32_t padId = 0;
  bool onLeft = false;
};

std::optional<Truncation> readTruncation(const JsonValue &value, const std::string &where);
std::optional<Padding> readPadding(const JsonValue &value, const std::string &where);

/// Cuts `ids` (before special tokens) to leave room for `reserved` of them.
void truncate(std::vector<uint32_t> &ids, const Truncation &truncation, size_t reserved);
void pad(std::vector<uint32_t> &ids, const Padding &padding);

} // namespace onnxc::text
