//===- text/DecodeStream.cpp - Streaming detokenization ----------------------===//
#include "text/DecodeStream.h"

namespace onnxc::text {
namespace {

bool endsWithReplacement(const std::string &text) {
  return text.size() >= 3 && text.compare(text.size() - 3, 3, "\xEF\xBF\xBD") == 0;
}

/// The length of the common prefix of `a` and `b`, backed up to a character start.
size_t commonPrefix(const std::string &a, const std::string &b) {
  size_t n = 0;
  while (n < a.size() && n < b.size() && a[n] == b[n])
    ++n;
  while (n > 0 && n < b.size() && (static_cast<unsigned char>(b[n]) & 0xC0) == 0x80)
    --n;
  return n;
}

} // namespace

std::string DecodeStream::push(uint32_t id) {
  ids_.push_back(id);
  std::span<const uint32_t> all(ids_);
  std::string before = tokenizer_.decode(all.subspan(prefixOffset_, readOffset_ - prefixOffset_),
                                         skipSpecialTokens_);
  std::string after = tokenizer_.decode(all.subspan(prefixOffset_), skipSpecialTokens_);
  if (after.size() <= before.size() || endsWithReplacement(after))
    return {};
  std::string text = after.substr(commonPrefix(before, after));
  prefixOffset_ = readOffset_;
  readOffset_ = ids_.size();
  return text;
}

std::string DecodeStream::finish() {
  if (readOffset_ == ids_.size())
    return {};
  std::span<const uint32_t> all(ids_);
  std::string before = tokenizer_.decode(all.subspan(prefixOffset_, readOffset_ - prefixOffset_),
                                         skipSpecialTokens_);
  std::string after = tokenizer_.decode(all.subspan(prefixOffset_), skipSpecialTokens_);
  prefixOffset_ = readOffset_ = ids_.size();
  return after.substr(commonPrefix(before, after));
}

} // namespace onnxc::text
