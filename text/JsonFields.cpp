//===- text/JsonFields.cpp - Reading tokenizer.json fields with located errors -===//
#include "text/JsonFields.h"

namespace onnxc::text {

const JsonObject &expectObject(const JsonValue &value, const std::string &where) {
  const JsonObject *object = value.getAsObject();
  if (!object)
    fail(where, ": expected an object");
  return *object;
}

const JsonArray &expectArray(const JsonValue &value, const std::string &where) {
  const JsonArray *array = value.getAsArray();
  if (!array)
    fail(where, ": expected an array");
  return *array;
}

std::string expectString(const JsonValue &value, const std::string &where) {
  std::optional<llvm::StringRef> text = value.getAsString();
  if (!text)
    fail(where, ": expected a string");
  return text->str();
}

int64_t expectInteger(const JsonValue &value, const std::string &where) {
  std::optional<int64_t> number = value.getAsInteger();
  if (!number)
    fail(where, ": expected an integer");
  return *number;
}

const JsonValue &requireField(const JsonObject &object, std::string_view key,
                              const std::string &where) {
  const JsonValue *value = object.get(llvm::StringRef(key.data(), key.size()));
  if (!value)
    fail(where, ": missing field '", key, "'");
  return *value;
}

std::string requireString(const JsonObject &object, std::string_view key,
                          const std::string &where) {
  return expectString(requireField(object, key, where), where + "." + std::string(key));
}

std::optional<std::string> optionalString(const JsonObject &object, std::string_view key,
                                          const std::string &where) {
  const JsonValue *value = object.get(llvm::StringRef(key.data(), key.size()));
  if (!value || value->kind() == JsonValue::Null)
    return std::nullopt;
  return expectString(*value, where + "." + std::string(key));
}

bool optionalBool(const JsonObject &object, std::string_view key, bool fallback,
                  const std::string &where) {
  const JsonValue *value = object.get(llvm::StringRef(key.data(), key.size()));
  if (!value || value->kind() == JsonValue::Null)
    return fallback;
  std::optional<bool> flag = value->getAsBoolean();
  if (!flag)
    fail(where, ".", key, ": expected true or false");
  return *flag;
}

int64_t optionalInteger(const JsonObject &object, std::string_view key, int64_t fallback,
                        const std::string &where) {
  const JsonValue *value = object.get(llvm::StringRef(key.data(), key.size()));
  if (!value || value->kind() == JsonValue::Null)
    return fallback;
  return expectInteger(*value, where + "." + std::string(key));
}

std::string componentType(const JsonObject &object, const std::string &where) {
  return requireString(object, "type", where);
}

void unsupportedComponent(const std::string &where, const std::string &type) {
  fail(where, ": unsupported component type '", type, "'");
}

} // namespace onnxc::text
