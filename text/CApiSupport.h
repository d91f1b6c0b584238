//===- text/CApiSupport.h - What the C API's files share ---------------------===//
//
// The tokenizer handle and the guard every C entry point runs its body in:
// a C caller sees -1 or NULL and one line from onnxc_tokenizer_last_error(),
// never an exception.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"
#include "text/Tokenizer.h"

#include <memory>
#include <new>
#include <string>

struct onnxc_tokenizer {
  std::unique_ptr<onnxc::text::Tokenizer> tokenizer;
};

namespace onnxc::text {

/// This thread's last error (onnxc_tokenizer_last_error).
std::string &lastError();

/// Runs `body`, turning any exception into `failed` and the thread's last error.
template <typename Result, typename Body> Result guarded(Result failed, Body body) {
  try {
    lastError().clear();
    return body();
  } catch (const std::bad_alloc &) {
    lastError() = "out of memory";
  } catch (const std::exception &e) {
    lastError() = e.what();
  } catch (...) {
    lastError() = "unknown error";
  }
  return failed;
}

inline void requirePointer(const void *pointer, const char *what, const char *function) {
  if (!pointer)
    onnxc::fail(function, ": ", what, " is NULL");
}

} // namespace onnxc::text
