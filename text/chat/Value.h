//===- text/chat/Value.h - The values a chat template computes with --------===//
//
// Jinja evaluates Python objects; chat templates only meet a JSON-like subset
// of them: none, booleans, ints, floats, strings, lists, dicts (keys are
// strings, kept in insertion order as Python's are), plus the callables a
// template can call (macros, bound string methods, raise_exception) and
// namespace() objects, the one mutable kind. Lists and dicts are shared and
// never modified once built: transformers renders in Jinja's immutable
// sandbox, where list.append and dict.update are refused too.
//
// A string may be "markup" (jinja2's Markup): tojson returns one, and adding a
// plain string to it HTML-escapes the plain one, which transformers 4.40's
// rendering shows in its output, so onnxc reproduces it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace onnxc::text::chat {

class Value;
using ValueList = std::vector<Value>;

/// A dict (or a namespace's attributes): string keys in insertion order.
struct ValueDict {
  std::vector<std::pair<std::string, Value>> entries;
  const Value *find(const std::string &key) const;
  void set(const std::string &key, Value value);
};

/// Arguments of a call: positional, then keyword.
struct CallArgs {
  std::vector<Value> positional;
  std::vector<std::pair<std::string, Value>> keywords;
};

struct Callable {
  std::string name;
  std::function<Value(const CallArgs &)> body;
};

class Value {
public:
  enum class Kind { Undefined, None, Bool, Int, Float, String, List, Dict, Namespace, Callable };

  Value() = default; // undefined
  static Value undefined(std::string name);
  static Value none();
  static Value boolean(bool value);
  static Value integer(int64_t value);
  static Value floating(double value);
  static Value string(std::string value, bool markup = false);
  static Value list(ValueList items);
  static Value dict(ValueDict entries);
  static Value makeNamespace(ValueDict entries);
  static Value callable(std::string name, std::function<Value(const CallArgs &)> body);

  Kind kind() const { return kind_; }
  bool isUndefined() const { return kind_ == Kind::Undefined; }
  bool isNone() const { return kind_ == Kind::None; }
  bool isString() const { return kind_ == Kind::String; }
  bool isNumber() const {
    return kind_ == Kind::Int || kind_ == Kind::Float || kind_ == Kind::Bool;
  }
  bool isMarkup() const { return kind_ == Kind::String && markup_; }
  /// Dicts and namespaces both hold key/value entries.
  bool isMapping() const { return kind_ == Kind::Dict || kind_ == Kind::Namespace; }

  bool asBool() const { return boolValue_; }
  int64_t asInt() const { return intValue_; }
  double asFloat() const { return kind_ == Kind::Float ? floatValue_ : double(intValue_); }
  const std::string &asString() const { return *string_; }
  const ValueList &asList() const { return *list_; }
  const ValueDict &asDict() const { return *dict_; }
  /// The namespace's own entries, which `{% set ns.x = ... %}` changes.
  ValueDict &mutableNamespace() const { return *dict_; }
  const Callable &asCallable() const { return *callable_; }
  /// For an undefined value: the name that was looked up, for the error.
  const std::string &undefinedName() const { return *string_; }

  /// Python truthiness (undefined is false).
  bool truthy() const;
  /// str(value) as Python prints it ('None', 'True', "['a', 1]"); undefined is "".
  std::string str() const;
  /// repr(value), for items inside a printed list or dict.
  std::string repr() const;
  /// The type name in Python's words, for errors ("str", "int", "list", ...).
  std::string typeName() const;

private:
  Kind kind_ = Kind::Undefined;
  bool markup_ = false;
  bool boolValue_ = false;
  int64_t intValue_ = 0;
  double floatValue_ = 0;
  std::shared_ptr<const std::string> string_;
  std::shared_ptr<const ValueList> list_;
  std::shared_ptr<ValueDict> dict_;
  std::shared_ptr<const Callable> callable_;
};

/// Python's == (1 == 1.0 == True; lists and dicts element-wise; undefined equals undefined).
bool valuesEqual(const Value &a, const Value &b);
/// Python's <, <=, >, >= on numbers, strings or lists; throws Error for other kinds.
bool valuesLess(const Value &a, const Value &b);
/// Python's repr of a float: the shortest digits that read back ("0.1", "1e-05", "10000000000.0").
std::string formatFloat(double value);
/// markupsafe's escape: & < > ' " as HTML entities.
std::string escapeHtml(const std::string &text);

} // namespace onnxc::text::chat
