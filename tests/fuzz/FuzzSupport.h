//===- tests/fuzz/FuzzSupport.h - What the fuzz harnesses share -------------===//
//
// Each harness in this folder defines LLVMFuzzerTestOneInput. An input that
// onnxc refuses with onnxc::Error is a clean rejection; a crash, a sanitizer
// report, an escaping exception of another type, or a broken property
// (finding()) is what the fuzzer is looking for.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace onnxc::fuzz {

/// Reports a broken property of the input being run: prints "fuzz finding:
/// WHAT" and `details` to stderr and aborts, so that libFuzzer (or the
/// standalone driver) records the input as a crash.
[[noreturn]] void finding(const std::string &what, const std::string &details = "");

/// Caps onnxc's tensor memory budget and the compiled runtime's limit at
/// 1 GiB, under libFuzzer's 4 GiB RSS limit, so a model asking for more is
/// refused by onnxc (the behavior under test) rather than reported as an
/// out-of-memory by libFuzzer. Every harness calls it first.
void limitMemory();

/// Whether ONNXC_FUZZ_VERBOSE is set (not "0"): harnesses then say on
/// stderr why an input was refused, to check that the seeds get far.
bool verbose();
/// Whether the input runs under FuzzDriver.cpp (ctest replaying seeds and
/// regressions) rather than libFuzzer: committed inputs must be well formed.
bool replaying();
/// Prints "note: WHAT" when verbose().
void note(const std::string &what);

/// Print -> parse -> print gives the same text, with every constant and node
/// name printed and with the default (elided) options. `stage` says which
/// graph this is in the report.
void expectPrintRoundTrip(const Graph &graph, const char *stage);

/// A new empty directory under $TMPDIR (or /tmp) whose name starts with
/// `prefix`; removed with everything in it when the process exits normally.
std::string makeTempDir(const std::string &prefix);

/// Writes `bytes` to `path` (aborts with a finding-free message on failure:
/// a harness that cannot set up its folder has nothing to test).
void writeFile(const std::string &path, std::string_view bytes);

/// Reads fuzz bytes front to back; every read past the end gives zeros, so a
/// short input is still a whole (small) test case.
class ByteReader {
public:
  ByteReader(const uint8_t *data, size_t size) : data_(data), size_(size) {}

  uint8_t byte() { return pos_ < size_ ? data_[pos_++] : 0; }
  /// A value in [0, bound) (bound > 0).
  unsigned below(unsigned bound) { return byte() % bound; }
  bool flag() { return byte() & 1; }
  /// A uniformly spread float in [lo, hi] from two bytes.
  float inRange(float lo, float hi) {
    unsigned raw = unsigned(byte()) | unsigned(byte()) << 8;
    return lo + (hi - lo) * float(raw) / 65535.0f;
  }
  /// A string of up to `maxLength` bytes, ended by '\n' or the input.
  std::string line(size_t maxLength);
  /// The bytes not read yet.
  std::string_view rest() const {
    return {reinterpret_cast<const char *>(data_) + pos_, size_ - pos_};
  }
  bool atEnd() const { return pos_ >= size_; }

private:
  const uint8_t *data_;
  size_t size_;
  size_t pos_ = 0;
};

} // namespace onnxc::fuzz
