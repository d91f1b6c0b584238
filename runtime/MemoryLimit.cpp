//===- runtime/MemoryLimit.cpp - The most a run may allocate --------------===//
#include "MemoryLimit.h"

#include <cstdlib>
#include <string>
#include <unistd.h>

namespace onnxc::runtime {

namespace {

/// "8G" -> 8 << 30; 0 for anything the runtime does not understand. The
/// compiler's ir/MemoryBudget parses the same syntax (the runtime links
/// nothing of the compiler's, so it keeps its own few lines).
int64_t parseLimit(const char *text) {
  if (*text < '0' || *text > '9') // strtoull would take spaces and signs
    return 0;
  char *end = nullptr;
  unsigned long long value = std::strtoull(text, &end, 10);
  if (end == text)
    return 0;
  unsigned shift = 0;
  switch (*end) {
  case 'K':
  case 'k':
    shift = 10;
    ++end;
    break;
  case 'M':
  case 'm':
    shift = 20;
    ++end;
    break;
  case 'G':
  case 'g':
    shift = 30;
    ++end;
    break;
  case 'T':
  case 't':
    shift = 40;
    ++end;
    break;
  default:
    break;
  }
  if (*end == 'i')
    ++end;
  if (*end == 'B' || *end == 'b')
    ++end;
  if (*end != '\0' || value > (static_cast<unsigned long long>(INT64_MAX) >> shift))
    return 0;
  return static_cast<int64_t>(value << shift);
}

/// `text` for a message: bytes outside printable ASCII as \xNN (a valid
/// limit is ASCII; the rest is what a message must not echo raw).
std::string printable(const char *text) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (; *text; ++text) {
    auto byte = static_cast<unsigned char>(*text);
    if (byte >= 0x20 && byte < 0x7f) {
      out += char(byte);
    } else {
      out += "\\x";
      out += digits[byte >> 4];
      out += digits[byte & 15];
    }
  }
  return out;
}

struct DefaultLimit {
  int64_t bytes = 0;
  std::string error;
};

/// $ONNXC_MEMORY_LIMIT read once. Never destroyed: a model.so registers
/// no exit-time destructors.
const DefaultLimit &defaultLimit() {
  static const DefaultLimit *limit = [] {
    auto *out = new DefaultLimit;
    if (const char *text = std::getenv("ONNXC_MEMORY_LIMIT")) {
      out->bytes = parseLimit(text);
      if (out->bytes <= 0)
        out->error = "ONNXC_MEMORY_LIMIT is '" + printable(text) +
                     "': set it to a positive size such as 512M or 8G, or unset it";
      return out;
    }
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    out->bytes = pages > 0 && pageSize > 0 ? int64_t(pages) * int64_t(pageSize) : INT64_MAX;
    return out;
  }();
  return *limit;
}

} // namespace

int64_t defaultMemoryLimit() { return defaultLimit().bytes; }

const std::string &memoryLimitError() { return defaultLimit().error; }

} // namespace onnxc::runtime
