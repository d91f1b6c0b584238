//===- ir/MemoryBudget.cpp - The most tensor memory onnxc may hold --------===//
#include "ir/MemoryBudget.h"

#include "ir/Error.h"
#include "ir/PrintableText.h"

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace onnxc {

namespace {

std::atomic<int64_t> bytesInUse{0};
std::atomic<int64_t> explicitLimit{0};

int64_t physicalMemory() {
  long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGESIZE);
  if (pages <= 0 || pageSize <= 0)
    return INT64_MAX;
  return int64_t(pages) * int64_t(pageSize);
}

/// $ONNXC_MEMORY_LIMIT, else physical memory. A value that does not parse
/// is an error each time the limit is needed: ignoring it would run without
/// the only bound its user set.
int64_t defaultLimit() {
  static const std::optional<int64_t> limit = []() -> std::optional<int64_t> {
    const char *text = std::getenv("ONNXC_MEMORY_LIMIT");
    if (!text)
      return physicalMemory();
    std::optional<int64_t> bytes = parseByteSize(text);
    if (bytes && *bytes > 0)
      return bytes;
    return std::nullopt;
  }();
  if (!limit)
    throw Error("ONNXC_MEMORY_LIMIT is '" + printableText(std::getenv("ONNXC_MEMORY_LIMIT")) +
                "': set it to a positive size such as 512M or 8G, or unset it");
  return *limit;
}

[[noreturn]] void overBudget(int64_t bytes, int64_t inUse, int64_t limit);

} // namespace

int64_t memoryLimit() {
  int64_t limit = explicitLimit.load(std::memory_order_relaxed);
  return limit > 0 ? limit : defaultLimit();
}

void setMemoryLimit(int64_t bytes) { explicitLimit.store(bytes > 0 ? bytes : 0); }

int64_t tensorBytesInUse() { return bytesInUse.load(std::memory_order_relaxed); }

namespace {
[[noreturn]] void overBudget(int64_t bytes, int64_t inUse, int64_t limit) {
  throw SizeError("a tensor of " + formatBytes(bytes) + " would exceed the memory limit of " +
                  formatBytes(limit) + " (" + formatBytes(inUse) +
                  " in use; raise it with --memory-limit or ONNXC_MEMORY_LIMIT)");
}
} // namespace

void reserveTensorBytes(int64_t bytes) {
  int64_t limit = memoryLimit();
  int64_t before = bytesInUse.fetch_add(bytes, std::memory_order_relaxed);
  if (bytes > limit || before > limit - bytes) {
    bytesInUse.fetch_sub(bytes, std::memory_order_relaxed);
    overBudget(bytes, before, limit);
  }
}

void checkTensorBytesAvailable(int64_t bytes) {
  int64_t limit = memoryLimit(), inUse = tensorBytesInUse();
  if (bytes > limit || inUse > limit - bytes)
    overBudget(bytes, inUse, limit);
}

void releaseTensorBytes(int64_t bytes) { bytesInUse.fetch_sub(bytes, std::memory_order_relaxed); }

std::optional<int64_t> parseByteSize(const std::string &text) {
  size_t pos = 0;
  uint64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    if (__builtin_mul_overflow(value, 10u, &value) ||
        __builtin_add_overflow(value, uint64_t(text[pos] - '0'), &value))
      return std::nullopt;
    ++pos;
  }
  if (pos == 0)
    return std::nullopt;
  std::string unit = text.substr(pos);
  for (char &c : unit)
    c = char(std::toupper(static_cast<unsigned char>(c)));
  if (unit.size() > 1 && unit.back() == 'B')
    unit.pop_back();
  if (unit.size() > 1 && unit.back() == 'I')
    unit.pop_back();
  unsigned shift;
  if (unit.empty() || unit == "B")
    shift = 0;
  else if (unit == "K")
    shift = 10;
  else if (unit == "M")
    shift = 20;
  else if (unit == "G")
    shift = 30;
  else if (unit == "T")
    shift = 40;
  else
    return std::nullopt;
  if (value > (uint64_t(INT64_MAX) >> shift))
    return std::nullopt;
  return int64_t(value << shift);
}

std::string formatBytes(int64_t bytes) {
  static const char *units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  if (bytes < 1024)
    return std::to_string(bytes) + " B";
  double value = double(bytes);
  int unit = -1;
  while (value >= 1024 && unit < 5) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, units[unit]);
  return text;
}

} // namespace onnxc
