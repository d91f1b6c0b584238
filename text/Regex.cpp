//===- text/Regex.cpp - PCRE2 regexes with Unicode properties, JIT-compiled -===//
#define PCRE2_CODE_UNIT_WIDTH 8
#include "text/Regex.h"

#include "ir/Error.h"
#include "text/Unicode.h"

#include <pcre2.h>

namespace onnxc::text {
namespace {

std::string pcreMessage(int code) {
  PCRE2_UCHAR buffer[256];
  pcre2_get_error_message(code, buffer, sizeof(buffer));
  return reinterpret_cast<const char *>(buffer);
}

/// Per-thread match state: a JIT stack large enough for long whitespace runs
/// (`\s+(?!\S)` backtracks over the whole run) and match data reused across calls.
struct MatchState {
  pcre2_jit_stack *stack = pcre2_jit_stack_create(32 * 1024, 64 * 1024 * 1024, nullptr);
  pcre2_match_context *context = pcre2_match_context_create(nullptr);
  pcre2_match_data *data = pcre2_match_data_create(4, nullptr);
  MatchState() { pcre2_jit_stack_assign(context, nullptr, stack); }
  ~MatchState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    pcre2_jit_stack_free(stack);
  }
};

MatchState &matchState() {
  thread_local MatchState state;
  return state;
}

} // namespace

Regex::Regex(const std::string &pattern, std::string_view where) : pattern_(pattern) {
  int errorCode = 0;
  PCRE2_SIZE errorOffset = 0;
  pcre2_code *code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &errorCode, &errorOffset, nullptr);
  if (!code)
    fail(where, ": regex '", pattern, "' does not compile at offset ", errorOffset, ": ",
         pcreMessage(errorCode));
  // Without JIT (an architecture PCRE2 cannot JIT for) the interpreter runs the same pattern.
  pcre2_jit_compile(code, PCRE2_JIT_COMPLETE);
  code_ = code;
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code *>(code_)); }

void Regex::findAll(std::string_view text, std::vector<std::pair<size_t, size_t>> &matches) const {
  matches.clear();
  auto *code = static_cast<pcre2_code *>(code_);
  MatchState &state = matchState();
  const auto *subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t start = 0;
  while (start <= text.size()) {
    int rc = pcre2_match(code, subject, text.size(), start, PCRE2_NO_UTF_CHECK, state.data,
                         state.context);
    if (rc == PCRE2_ERROR_NOMATCH)
      break;
    if (rc < 0)
      fail("regex '", pattern_, "' failed on a text of ", text.size(), " bytes: ", pcreMessage(rc));
    PCRE2_SIZE *ovector = pcre2_get_ovector_pointer(state.data);
    size_t begin = ovector[0], end = ovector[1];
    matches.emplace_back(begin, end);
    if (end > begin) {
      start = end;
    } else {
      if (end >= text.size())
        break;
      start = end + utf8Length(static_cast<unsigned char>(text[end]));
    }
  }
}

} // namespace onnxc::text
