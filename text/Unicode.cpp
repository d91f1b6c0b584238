//===- text/Unicode.cpp - UTF-8 and the Unicode character classes tokenizers use -===//
#include "text/Unicode.h"

#include "ir/Error.h"

#include <cstdlib>
#include <memory>
#include <utf8proc.h>

namespace onnxc::text {

void appendUtf8(std::string &out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
}

size_t findInvalidUtf8(std::string_view s) {
  const auto *p = reinterpret_cast<const unsigned char *>(s.data());
  size_t n = s.size();
  size_t i = 0;
  while (i < n) {
    // ASCII runs are the common case: skip them eight bytes at a time.
    while (i + 8 <= n) {
      uint64_t word;
      __builtin_memcpy(&word, p + i, 8);
      if (word & 0x8080808080808080ull)
        break;
      i += 8;
    }
    if (i >= n)
      break;
    unsigned char b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    char32_t min;
    char32_t c;
    if (b >= 0xC2 && b <= 0xDF) {
      len = 2, min = 0x80, c = b & 0x1F;
    } else if (b >= 0xE0 && b <= 0xEF) {
      len = 3, min = 0x800, c = b & 0x0F;
    } else if (b >= 0xF0 && b <= 0xF4) {
      len = 4, min = 0x10000, c = b & 0x07;
    } else {
      return i;
    }
    if (i + len > n)
      return i;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80)
        return i;
      c = (c << 6) | (p[i + k] & 0x3F);
    }
    if (c < min || c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
      return i;
    i += len;
  }
  return std::string_view::npos;
}

void requireUtf8(std::string_view s, std::string_view name) {
  size_t bad = findInvalidUtf8(s);
  if (bad != std::string_view::npos)
    fail(name, " is not valid UTF-8 (byte ", bad, ")");
}

static utf8proc_category_t category(char32_t c) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(c));
}

bool isWhitespace(char32_t c) {
  if (c < 0x80)
    return c == ' ' || (c >= 0x09 && c <= 0x0D);
  switch (c) {
  case 0x85:
  case 0xA0:
  case 0x1680:
  case 0x2028:
  case 0x2029:
  case 0x202F:
  case 0x205F:
  case 0x3000:
    return true;
  default:
    return c >= 0x2000 && c <= 0x200A;
  }
}

bool isAlphanumeric(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  utf8proc_category_t cat = category(c);
  return (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
         (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
}

bool isNumeric(char32_t c) {
  utf8proc_category_t cat = category(c);
  return cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO;
}

bool isPunctuation(char32_t c) {
  utf8proc_category_t cat = category(c);
  return cat >= UTF8PROC_CATEGORY_PC && cat <= UTF8PROC_CATEGORY_PO;
}

bool isOther(char32_t c) {
  // Cc, Cf, Cs, Co: the unicode_categories crate has no table of unassigned
  // code points, so HF keeps them (U+0378 survives BertNormalizer).
  return category(c) >= UTF8PROC_CATEGORY_CC;
}

bool isNonspacingMark(char32_t c) { return c >= 0x300 && category(c) == UTF8PROC_CATEGORY_MN; }

bool isChineseChar(char32_t c) {
  return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) ||
         (c >= 0x20000 && c <= 0x2A6DF) || (c >= 0x2A700 && c <= 0x2B73F) ||
         (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B920 && c <= 0x2CEAF) ||
         (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
}

void appendLowercase(std::string &out, char32_t c) {
  if (c < 0x80) {
    out.push_back(static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c));
    return;
  }
  // The one unconditional multi-code-point lowercase mapping of SpecialCasing.txt.
  if (c == 0x130) {
    out += "i\xCC\x87";
    return;
  }
  appendUtf8(out, static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(c))));
}

std::string normalizeUnicode(std::string_view s, NormalForm form) {
  int options = UTF8PROC_STABLE;
  switch (form) {
  case NormalForm::NFC:
    options |= UTF8PROC_COMPOSE;
    break;
  case NormalForm::NFD:
    options |= UTF8PROC_DECOMPOSE;
    break;
  case NormalForm::NFKC:
    options |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT;
    break;
  case NormalForm::NFKD:
    options |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT;
    break;
  }
  utf8proc_uint8_t *result = nullptr;
  utf8proc_ssize_t length = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t *>(s.data()),
                                         static_cast<utf8proc_ssize_t>(s.size()), &result,
                                         static_cast<utf8proc_option_t>(options));
  std::unique_ptr<utf8proc_uint8_t, decltype(&std::free)> owned(result, &std::free);
  if (length < 0)
    fail("unicode normalization failed: ", utf8proc_errmsg(length));
  return std::string(reinterpret_cast<const char *>(result), static_cast<size_t>(length));
}

} // namespace onnxc::text
