//===- text/Regex.h - PCRE2 regexes with Unicode properties, JIT-compiled ---===//
//
// HF tokenizers compiles its Split and ByteLevel patterns with Oniguruma;
// PCRE2 in UTF + UCP mode reads the same syntax (\p{L}, lookahead, (?i:...))
// and its JIT keeps pre-tokenization off the profile.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace onnxc::text {

class Regex {
public:
  /// Compiles `pattern`; a bad pattern throws naming `where`.
  Regex(const std::string &pattern, std::string_view where);
  ~Regex();
  Regex(const Regex &) = delete;
  Regex &operator=(const Regex &) = delete;

  /// Every non-overlapping match in `text` (valid UTF-8), as byte ranges, left
  /// to right; an empty match advances by one character.
  void findAll(std::string_view text, std::vector<std::pair<size_t, size_t>> &matches) const;

  const std::string &pattern() const { return pattern_; }

private:
  std::string pattern_;
  void *code_ = nullptr; // pcre2_code_8
};

} // namespace onnxc::text
