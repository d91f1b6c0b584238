//===- text/chat/Json.h - JSON to template values and back -----------------===//
//
// Messages and tools arrive as JSON. They are read by this small parser
// rather than llvm::json because llvm::json::Object is a hash map: it loses
// the key order, which Python dicts keep and a template shows whenever it
// iterates `message.items()` or prints a dict. tokenizer_config.json, whose
// key order does not matter, is read with llvm::json (ChatTemplate.cpp).
//
// toJson writes what jinja2 3.1's `tojson` filter writes: Python's
// json.dumps(sort_keys=True, ensure_ascii=True) with `indent`, then < > & '
// as \u escapes (its "HTML-safe" form).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/chat/Value.h"

#include <optional>
#include <string>
#include <string_view>

namespace onnxc::text::chat {

/// Parses JSON text; throws Error naming `what` and the byte offset on bad input.
Value parseJson(std::string_view text, const std::string &what);

/// jinja2's tojson of `value` (undefined and callables throw Error).
std::string toJson(const Value &value, std::optional<int> indent);

} // namespace onnxc::text::chat
