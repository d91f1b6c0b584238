//===- text/Unicode.h - UTF-8 and the Unicode character classes tokenizers use -===//
//
// The character tests are the ones HF tokenizers (Rust) applies: Rust's
// char::is_whitespace, is_alphanumeric and the general categories of the
// unicode_categories crate, answered here from utf8proc's tables.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace onnxc::text {

/// Decodes the code point at `pos` of valid UTF-8 and advances `pos` past it.
inline char32_t nextCodePoint(std::string_view s, size_t &pos) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(s[i]); };
  unsigned char b = byte(pos);
  if (b < 0x80) {
    ++pos;
    return b;
  }
  if (b < 0xE0) {
    char32_t c = ((b & 0x1F) << 6) | (byte(pos + 1) & 0x3F);
    pos += 2;
    return c;
  }
  if (b < 0xF0) {
    char32_t c = ((b & 0x0F) << 12) | ((byte(pos + 1) & 0x3F) << 6) | (byte(pos + 2) & 0x3F);
    pos += 3;
    return c;
  }
  char32_t c = ((b & 0x07) << 18) | ((byte(pos + 1) & 0x3F) << 12) | ((byte(pos + 2) & 0x3F) << 6) |
               (byte(pos + 3) & 0x3F);
  pos += 4;
  return c;
}

/// The length in bytes of the UTF-8 sequence that starts with `lead`.
inline size_t utf8Length(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

/// Appends the UTF-8 encoding of `c`.
void appendUtf8(std::string &out, char32_t c);

/// The byte offset of the first invalid UTF-8 sequence in `s`, or npos.
size_t findInvalidUtf8(std::string_view s);

/// Throws "NAME is not valid UTF-8 (byte N)" when `s` is not.
void requireUtf8(std::string_view s, std::string_view name);

/// Rust's char::is_whitespace: the White_Space property.
bool isWhitespace(char32_t c);
/// Rust's char::is_alphanumeric (letters and numbers), used by single_word.
bool isAlphanumeric(char32_t c);
/// Rust's char::is_numeric: the N* general categories.
bool isNumeric(char32_t c);
/// The unicode_categories crate's is_punctuation: the P* general categories.
bool isPunctuation(char32_t c);
/// The general categories Cc, Cf, Cs and Co (not Cn, as in HF).
bool isOther(char32_t c);
/// General category Mn.
bool isNonspacingMark(char32_t c);
/// The CJK ideograph blocks BERT puts spaces around.
bool isChineseChar(char32_t c);

/// Rust's char::to_lowercase, appended (U+0130 lowercases to two code points).
void appendLowercase(std::string &out, char32_t c);

/// Unicode normalization forms through utf8proc.
enum class NormalForm { NFC, NFD, NFKC, NFKD };
std::string normalizeUnicode(std::string_view s, NormalForm form);

} // namespace onnxc::text
