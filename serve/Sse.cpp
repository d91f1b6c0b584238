//===- serve/Sse.cpp - Server-sent events, as OpenAI streams them -----------===//
#include "serve/Sse.h"

namespace onnxc::serve {

std::string jsonText(const llvm::json::Value &value) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << value;
  stream.flush();
  return out;
}

// JSON text has no raw newline (strings escape it), so one data line holds the event.
std::string sseEvent(const llvm::json::Value &value) { return "data: " + jsonText(value) + "\n\n"; }

} // namespace onnxc::serve
