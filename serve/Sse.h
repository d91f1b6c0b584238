//===- serve/Sse.h - Server-sent events, as OpenAI streams them -----------===//
//
// A streamed completion is a text/event-stream of `data: {json}\n\n`
// events, one per chunk of text, ended by `data: [DONE]\n\n`.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <llvm/Support/JSON.h>

#include <string>

namespace onnxc::serve {

/// `value` as one event.
std::string sseEvent(const llvm::json::Value &value);
/// The event that ends an OpenAI stream.
inline const char *const kSseDone = "data: [DONE]\n\n";
/// `value` as compact JSON text.
std::string jsonText(const llvm::json::Value &value);

} // namespace onnxc::serve
