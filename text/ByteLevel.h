//===- text/ByteLevel.h - GPT-2's byte-to-character table --------------------===//
//
// Byte-level BPE works on bytes shown as printable characters: the bytes
// GPT-2 considered printable stand for themselves, the other 68 are moved to
// U+0100 and up, so every token is valid UTF-8 text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <array>
#include <string>

namespace onnxc::text {

/// The UTF-8 text of the character that stands for each byte.
const std::array<std::string, 256> &byteLevelChars();
/// The byte a character stands for, or -1 when it stands for none.
int byteLevelByte(char32_t c);

/// The GPT-2 pre-tokenization regex HF's ByteLevel uses when use_regex is set.
inline constexpr const char *kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

} // namespace onnxc::text
