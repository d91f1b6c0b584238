//===- ir/PrintableText.cpp - User text made safe for a one-line message ---===//
#include "ir/PrintableText.h"

#include <cstdint>

namespace onnxc {

namespace {

/// The length of the valid UTF-8 sequence of a character from U+00A0 up
/// at the front of `text`, or 0 (a control, an invalid or overlong form).
size_t printableSequence(std::string_view text) {
  auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  unsigned char lead = byte(0);
  size_t length = lead >= 0xf0 && lead < 0xf5 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc2 ? 2 : 0;
  if (lead >= 0xf5 || length == 0 || text.size() < length)
    return 0;
  uint32_t code = lead & (0x7f >> length);
  for (size_t i = 1; i < length; ++i) {
    if ((byte(i) & 0xc0) != 0x80)
      return 0;
    code = (code << 6) | (byte(i) & 0x3f);
  }
  static const uint32_t smallest[] = {0, 0, 0xa0, 0x800, 0x10000};
  bool surrogate = code >= 0xd800 && code < 0xe000;
  return code >= smallest[length] && code <= 0x10ffff && !surrogate ? length : 0;
}

} // namespace

std::string printableText(std::string_view text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    auto lead = static_cast<unsigned char>(text[0]);
    size_t keep = lead >= 0x20 && lead < 0x7f ? 1 : lead >= 0x80 ? printableSequence(text) : 0;
    if (keep) {
      out.append(text.substr(0, keep));
      text.remove_prefix(keep);
      continue;
    }
    out += "\\x";
    out += digits[lead >> 4];
    out += digits[lead & 15];
    text.remove_prefix(1);
  }
  return out;
}

} // namespace onnxc
