//===- text/ByteLevel.cpp - GPT-2's byte-to-character table ------------------===//
#include "text/ByteLevel.h"

#include "text/Unicode.h"

namespace onnxc::text {
namespace {

bool printsAsItself(int byte) {
  return (byte >= '!' && byte <= '~') || (byte >= 0xA1 && byte <= 0xAC) ||
         (byte >= 0xAE && byte <= 0xFF);
}

struct Tables {
  std::array<std::string, 256> chars;
  std::array<int, 512> bytes;
  Tables() {
    bytes.fill(-1);
    int shifted = 0;
    for (int byte = 0; byte < 256; ++byte) {
      char32_t c = printsAsItself(byte) ? byte : 256 + shifted++;
      appendUtf8(chars[byte], c);
      bytes[c] = byte;
    }
  }
};

const Tables &tables() {
  static const Tables instance;
  return instance;
}

} // namespace

const std::array<std::string, 256> &byteLevelChars() { return tables().chars; }

int byteLevelByte(char32_t c) { return c < 512 ? tables().bytes[c] : -1; }

} // namespace onnxc::text
