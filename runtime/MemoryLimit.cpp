//===- runtime/MemoryLimit.cpp - The most a run may allocate --------------===//
#include "MemoryLimit.h"

#include <cstdlib>
#include <unistd.h>

namespace onnxc::runtime {

namespace {

/// "8G" -> 8 << 30; 0 for anything the runtime does not understand. The
/// compiler's ir/MemoryBudget parses the same syntax (the runtime links
/// nothing of the compiler's, so it keeps its own few lines).
int64_t parseLimit(const char *text) {
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

} // namespace

int64_t defaultMemoryLimit() {
  static const int64_t limit = [] {
    if (const char *text = std::getenv("ONNXC_MEMORY_LIMIT"))
      if (int64_t bytes = parseLimit(text); bytes > 0)
        return bytes;
    long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
    return pages > 0 && pageSize > 0 ? int64_t(pages) * int64_t(pageSize) : INT64_MAX;
  }();
  return limit;
}

} // namespace onnxc::runtime
