//===- text/JsonFields.h - Reading tokenizer.json fields with located errors -===//
//
// tokenizer.json is read with LLVM's JSON parser (llvm/Support/JSON.h, the
// reader the onnxc tool already uses). These helpers turn a missing or
// mistyped field into one error line naming where it is, e.g.
// "tokenizer.json: model.vocab: expected an object".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"

#include <llvm/Support/JSON.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace onnxc::text {

using JsonObject = llvm::json::Object;
using JsonArray = llvm::json::Array;
using JsonValue = llvm::json::Value;

const JsonObject &expectObject(const JsonValue &value, const std::string &where);
const JsonArray &expectArray(const JsonValue &value, const std::string &where);
std::string expectString(const JsonValue &value, const std::string &where);
int64_t expectInteger(const JsonValue &value, const std::string &where);

/// The field `key` of `object`; a missing field throws.
const JsonValue &requireField(const JsonObject &object, std::string_view key,
                              const std::string &where);
std::string requireString(const JsonObject &object, std::string_view key, const std::string &where);
/// A string field that may be absent or null.
std::optional<std::string> optionalString(const JsonObject &object, std::string_view key,
                                          const std::string &where);
bool optionalBool(const JsonObject &object, std::string_view key, bool fallback,
                  const std::string &where);
int64_t optionalInteger(const JsonObject &object, std::string_view key, int64_t fallback,
                        const std::string &where);

/// "type" of a component object.
std::string componentType(const JsonObject &object, const std::string &where);

/// The one error for a component onnxc does not implement.
[[noreturn]] void unsupportedComponent(const std::string &where, const std::string &type);

} // namespace onnxc::text
