//===- text/chat/Value.cpp - Printing and comparing template values --------===//
#include "text/chat/Value.h"

#include "ir/Error.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace onnxc::text::chat {

const Value *ValueDict::find(const std::string &key) const {
  for (const auto &[name, value] : entries)
    if (name == key)
      return &value;
  return nullptr;
}

void ValueDict::set(const std::string &key, Value value) {
  for (auto &[name, existing] : entries)
    if (name == key) {
      existing = std::move(value);
      return;
    }
  entries.emplace_back(key, std::move(value));
}

Value Value::undefined(std::string name) {
  Value v;
  v.string_ = std::make_shared<const std::string>(std::move(name));
  return v;
}

Value Value::none() {
  Value v;
  v.kind_ = Kind::None;
  return v;
}

Value Value::boolean(bool value) {
  Value v;
  v.kind_ = Kind::Bool;
  v.boolValue_ = value;
  v.intValue_ = value ? 1 : 0;
  return v;
}

Value Value::integer(int64_t value) {
  Value v;
  v.kind_ = Kind::Int;
  v.intValue_ = value;
  return v;
}

Value Value::floating(double value) {
  Value v;
  v.kind_ = Kind::Float;
  v.floatValue_ = value;
  return v;
}

Value Value::string(std::string value, bool markup) {
  Value v;
  v.kind_ = Kind::String;
  v.markup_ = markup;
  v.string_ = std::make_shared<const std::string>(std::move(value));
  return v;
}

Value Value::list(ValueList items) {
  Value v;
  v.kind_ = Kind::List;
  v.list_ = std::make_shared<const ValueList>(std::move(items));
  return v;
}

Value Value::dict(ValueDict entries) {
  Value v;
  v.kind_ = Kind::Dict;
  v.dict_ = std::make_shared<ValueDict>(std::move(entries));
  return v;
}

Value Value::makeNamespace(ValueDict entries) {
  Value v = dict(std::move(entries));
  v.kind_ = Kind::Namespace;
  return v;
}

Value Value::callable(std::string name, std::function<Value(const CallArgs &)> body) {
  Value v;
  v.kind_ = Kind::Callable;
  v.callable_ = std::make_shared<const Callable>(Callable{std::move(name), std::move(body)});
  return v;
}

bool Value::truthy() const {
  switch (kind_) {
  case Kind::Undefined:
  case Kind::None:
    return false;
  case Kind::Bool:
    return boolValue_;
  case Kind::Int:
    return intValue_ != 0;
  case Kind::Float:
    return floatValue_ != 0;
  case Kind::String:
    return !string_->empty();
  case Kind::List:
    return !list_->empty();
  case Kind::Dict:
    return !dict_->entries.empty();
  case Kind::Namespace:
  case Kind::Callable:
    return true;
  }
  return false;
}

std::string formatFloat(double value) {
  if (std::isnan(value))
    return "nan";
  if (std::isinf(value))
    return value < 0 ? "-inf" : "inf";
  // The shortest scientific form that reads back to the same double.
  char buffer[64];
  for (int precision = 0; precision <= 17; ++precision) {
    std::snprintf(buffer, sizeof buffer, "%.*e", precision, value);
    if (std::strtod(buffer, nullptr) == value)
      break;
  }
  std::string scientific = buffer;
  size_t ePos = scientific.find('e');
  int exponent = std::atoi(scientific.c_str() + ePos + 1);
  bool negative = scientific[0] == '-';
  std::string digits;
  for (size_t i = negative ? 1 : 0; i < ePos; ++i)
    if (scientific[i] != '.')
      digits += scientific[i];
  std::string sign = negative ? "-" : "";
  // Python's repr switches to exponent form below 1e-4 and from 1e16 up.
  if (exponent < -4 || exponent >= 16) {
    std::string mantissa = digits.substr(0, 1);
    if (digits.size() > 1)
      mantissa += "." + digits.substr(1);
    char exp[16];
    std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + mantissa + exp;
  }
  if (exponent < 0)
    return sign + "0." + std::string(size_t(-exponent - 1), '0') + digits;
  if (digits.size() <= size_t(exponent) + 1)
    return sign + digits + std::string(size_t(exponent) + 1 - digits.size(), '0') + ".0";
  return sign + digits.substr(0, size_t(exponent) + 1) + "." + digits.substr(size_t(exponent) + 1);
}

std::string escapeHtml(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '\'':
      out += "&#39;";
      break;
    case '"':
      out += "&#34;";
      break;
    default:
      out += c;
    }
  }
  return out;
}

namespace {

/// Python's repr of a str: single quotes unless the text holds ' and no ".
std::string reprString(const std::string &text) {
  char quote =
      text.find('\'') != std::string::npos && text.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : text) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += char(c);
    }
  }
  return out + quote;
}

} // namespace

std::string Value::str() const {
  switch (kind_) {
  case Kind::Undefined:
    return "";
  case Kind::None:
    return "None";
  case Kind::Bool:
    return boolValue_ ? "True" : "False";
  case Kind::Int:
    return std::to_string(intValue_);
  case Kind::Float:
    return formatFloat(floatValue_);
  case Kind::String:
    return *string_;
  case Kind::List: {
    std::string out = "[";
    for (size_t i = 0; i < list_->size(); ++i)
      out += (i ? ", " : "") + (*list_)[i].repr();
    return out + "]";
  }
  case Kind::Dict: {
    std::string out = "{";
    for (size_t i = 0; i < dict_->entries.size(); ++i)
      out += (i ? ", " : "") + reprString(dict_->entries[i].first) + ": " +
             dict_->entries[i].second.repr();
    return out + "}";
  }
  case Kind::Namespace:
    return "<Namespace>";
  case Kind::Callable:
    return "<function " + callable_->name + ">";
  }
  return "";
}

std::string Value::repr() const {
  if (kind_ == Kind::String)
    return markup_ ? "Markup(" + reprString(*string_) + ")" : reprString(*string_);
  return str();
}

std::string Value::typeName() const {
  switch (kind_) {
  case Kind::Undefined:
    return "undefined";
  case Kind::None:
    return "NoneType";
  case Kind::Bool:
    return "bool";
  case Kind::Int:
    return "int";
  case Kind::Float:
    return "float";
  case Kind::String:
    return "str";
  case Kind::List:
    return "list";
  case Kind::Dict:
    return "dict";
  case Kind::Namespace:
    return "Namespace";
  case Kind::Callable:
    return "function";
  }
  return "object";
}

bool valuesEqual(const Value &a, const Value &b) {
  if (a.isNumber() && b.isNumber()) {
    if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float)
      return a.asFloat() == b.asFloat();
    return a.asInt() == b.asInt();
  }
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Undefined:
  case Value::Kind::None:
    return true;
  case Value::Kind::String:
    return a.asString() == b.asString();
  case Value::Kind::List: {
    const ValueList &x = a.asList(), &y = b.asList();
    if (x.size() != y.size())
      return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (!valuesEqual(x[i], y[i]))
        return false;
    return true;
  }
  case Value::Kind::Dict: {
    const ValueDict &x = a.asDict(), &y = b.asDict();
    if (x.entries.size() != y.entries.size())
      return false;
    for (const auto &[key, value] : x.entries) {
      const Value *other = y.find(key);
      if (!other || !valuesEqual(value, *other))
        return false;
    }
    return true;
  }
  case Value::Kind::Namespace:
    return &a.asDict() == &b.asDict();
  default:
    return false;
  }
}

bool valuesLess(const Value &a, const Value &b) {
  if (a.isNumber() && b.isNumber()) {
    if (a.kind() == Value::Kind::Float || b.kind() == Value::Kind::Float)
      return a.asFloat() < b.asFloat();
    return a.asInt() < b.asInt();
  }
  if (a.isString() && b.isString())
    return a.asString() < b.asString(); // UTF-8 byte order is code point order
  if (a.kind() == Value::Kind::List && b.kind() == Value::Kind::List) {
    const ValueList &x = a.asList(), &y = b.asList();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i)
      if (!valuesEqual(x[i], y[i]))
        return valuesLess(x[i], y[i]);
    return x.size() < y.size();
  }
  fail("cannot compare ", a.typeName(), " with ", b.typeName());
}

} // namespace onnxc::text::chat
