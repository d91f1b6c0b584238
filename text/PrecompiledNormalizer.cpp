//===- text/PrecompiledNormalizer.cpp - SentencePiece's compiled character map -===//
//
// HF's converters keep a SentencePiece model's normalization rules as
// "Precompiled": base64 of a little-endian uint32 trie size, a darts-clone
// double-array trie over UTF-8 keys, and the replacement strings (each ended
// by a NUL) the trie's values point into. T5, ALBERT, XLM-R and mBART files
// carry one. As in HF, the text is cut into extended grapheme clusters; a
// cluster under 6 bytes is replaced whole when the trie has a prefix of it
// (the shortest), else each character is replaced on its own or kept.
//
//===----------------------------------------------------------------------===//
#include "text/Normalizers.h"

#include "text/Unicode.h"

#include <cstring>
#include <utf8proc.h>

namespace onnxc::text {
namespace {

std::string decodeBase64(std::string_view text, const std::string &where) {
  auto value = [](char c) -> int {
    if (c >= 'A' && c <= 'Z')
      return c - 'A';
    if (c >= 'a' && c <= 'z')
      return c - 'a' + 26;
    if (c >= '0' && c <= '9')
      return c - '0' + 52;
    if (c == '+')
      return 62;
    if (c == '/')
      return 63;
    return -1;
  };
  std::string out;
  out.reserve(text.size() / 4 * 3);
  uint32_t buffer = 0;
  int bits = 0;
  for (char c : text) {
    if (c == '=')
      break;
    int v = value(c);
    if (v < 0)
      fail(where, ": precompiled_charsmap is not base64");
    buffer = (buffer << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  return out;
}

class PrecompiledNormalizer : public Normalizer {
public:
  PrecompiledNormalizer(std::string blob, const std::string &where) {
    if (blob.size() < 4)
      fail(where, ": precompiled_charsmap is too short");
    uint32_t trieBytes;
    std::memcpy(&trieBytes, blob.data(), 4);
    if (trieBytes % 4 != 0 || trieBytes > blob.size() - 4)
      fail(where, ": precompiled_charsmap has a trie of ", trieBytes, " bytes in ",
           blob.size() - 4);
    units_.resize(trieBytes / 4);
    std::memcpy(units_.data(), blob.data() + 4, trieBytes);
    replacements_ = blob.substr(4 + trieBytes);
    if (units_.empty())
      fail(where, ": precompiled_charsmap has an empty trie");
  }

  void normalize(std::string &text) const override;

private:
  /// The replacement of the shortest key that is a prefix of `chunk`, if any.
  std::optional<std::string_view> transform(std::string_view chunk) const;
  void appendCluster(std::string_view cluster, std::string &out) const;

  std::vector<uint32_t> units_;
  std::string replacements_;
};

// darts-clone's unit layout: offset in bits 10..31 (shifted by 8 more when
// bit 9 is set), a leaf flag in bit 8, the label in the low byte (bit 31 set
// on a value unit).
std::optional<std::string_view> PrecompiledNormalizer::transform(std::string_view chunk) const {
  auto offset = [](uint32_t unit) { return (unit >> 10) << ((unit & (1u << 9)) >> 6); };
  size_t node = offset(units_[0]);
  for (char c : chunk) {
    auto byte = static_cast<unsigned char>(c);
    node ^= byte;
    if (node >= units_.size())
      return std::nullopt;
    uint32_t unit = units_[node];
    if ((unit & ((1u << 31) | 0xFF)) != byte)
      return std::nullopt;
    node ^= offset(unit);
    if ((unit >> 8) & 1) {
      if (node >= units_.size())
        return std::nullopt;
      size_t begin = units_[node] & ((1u << 31) - 1);
      if (begin >= replacements_.size())
        return std::nullopt;
      size_t end = replacements_.find('\0', begin);
      return std::string_view(replacements_)
          .substr(begin, end == std::string::npos ? std::string::npos : end - begin);
    }
  }
  return std::nullopt;
}

void PrecompiledNormalizer::appendCluster(std::string_view cluster, std::string &out) const {
  if (cluster.size() < 6)
    if (auto replacement = transform(cluster)) {
      out.append(*replacement);
      return;
    }
  size_t pos = 0;
  while (pos < cluster.size()) {
    size_t begin = pos;
    nextCodePoint(cluster, pos);
    std::string_view character = cluster.substr(begin, pos - begin);
    if (auto replacement = transform(character))
      out.append(*replacement);
    else
      out.append(character);
  }
}

void PrecompiledNormalizer::normalize(std::string &text) const {
  std::string out;
  out.reserve(text.size());
  utf8proc_int32_t state = 0;
  size_t clusterStart = 0;
  size_t pos = 0;
  char32_t previous = 0;
  while (pos < text.size()) {
    size_t begin = pos;
    char32_t c = nextCodePoint(text, pos);
    if (begin > 0 && utf8proc_grapheme_break_stateful(static_cast<utf8proc_int32_t>(previous),
                                                      static_cast<utf8proc_int32_t>(c), &state)) {
      appendCluster(std::string_view(text).substr(clusterStart, begin - clusterStart), out);
      clusterStart = begin;
    }
    previous = c;
  }
  appendCluster(std::string_view(text).substr(clusterStart), out);
  text = std::move(out);
}

} // namespace

std::unique_ptr<Normalizer> makePrecompiledNormalizer(const JsonObject &object,
                                                      const std::string &where) {
  std::string blob = decodeBase64(requireString(object, "precompiled_charsmap", where), where);
  return std::make_unique<PrecompiledNormalizer>(std::move(blob), where);
}

} // namespace onnxc::text
