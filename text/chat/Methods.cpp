//===- text/chat/Methods.cpp - Attribute, item and method access -----------===//
//
// jinja2 looks `a.b` up as getattr(a, "b") first, then a["b"]; and `a["b"]`
// the other way round. For the dicts chat templates see, that means a key
// named like a dict method (items, keys, values, get) is reached with `.`
// only as the method; everything else is the key. The string methods are
// Python's, over code points.
//
//===----------------------------------------------------------------------===//
#include "text/chat/Builtins.h"

#include "ir/Error.h"
#include "text/Unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <optional>

namespace onnxc::text::chat {
namespace {

/// Python's str.isspace: White_Space plus the ASCII separators \x1c-\x1f.
bool isPythonSpace(char32_t c) { return isWhitespace(c) || (c >= 0x1C && c <= 0x1F); }

const Value &argument(const CallArgs &args, size_t index, const char *keyword,
                      const Value &fallback) {
  if (index < args.positional.size())
    return args.positional[index];
  for (const auto &[name, value] : args.keywords)
    if (name == keyword)
      return value;
  return fallback;
}

std::string requireString(const Value &value, const char *what) {
  if (!value.isString())
    fail(what, " expects a string, got ", value.typeName());
  return value.asString();
}

std::vector<std::string> splitText(const std::string &text, const Value &separator,
                                   int64_t maxSplit) {
  std::vector<std::string> parts;
  if (separator.isNone() || separator.isUndefined()) {
    // Runs of whitespace separate; leading and trailing whitespace is dropped.
    std::vector<std::string> chars = splitCharacters(text);
    std::string current;
    bool inWord = false;
    for (size_t i = 0; i < chars.size(); ++i) {
      size_t pos = 0;
      bool space = isPythonSpace(nextCodePoint(chars[i], pos));
      if (space && inWord) {
        parts.push_back(current);
        current.clear();
        inWord = false;
        if (maxSplit >= 0 && int64_t(parts.size()) >= maxSplit) {
          size_t rest = i;
          while (rest < chars.size()) {
            size_t p = 0;
            if (!isPythonSpace(nextCodePoint(chars[rest], p)))
              break;
            ++rest;
          }
          std::string tail;
          for (; rest < chars.size(); ++rest)
            tail += chars[rest];
          if (!tail.empty())
            parts.push_back(tail);
          return parts;
        }
      } else if (!space) {
        current += chars[i];
        inWord = true;
      }
    }
    if (inWord)
      parts.push_back(current);
    return parts;
  }
  std::string sep = requireString(separator, "split");
  if (sep.empty())
    fail("split: empty separator");
  size_t start = 0;
  while (true) {
    size_t found = text.find(sep, start);
    if (found == std::string::npos || (maxSplit >= 0 && int64_t(parts.size()) >= maxSplit))
      break;
    parts.push_back(text.substr(start, found - start));
    start = found + sep.size();
  }
  parts.push_back(text.substr(start));
  return parts;
}

std::string replaceText(const std::string &text, const std::string &old, const std::string &with,
                        int64_t count) {
  if (old.empty()) {
    std::vector<std::string> chars = splitCharacters(text);
    std::string out;
    int64_t done = 0;
    for (const std::string &c : chars) {
      if (count < 0 || done < count) {
        out += with;
        ++done;
      }
      out += c;
    }
    if (count < 0 || done < count)
      out += with;
    return out;
  }
  std::string out;
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t found = text.find(old, start);
    if (found == std::string::npos)
      break;
    out += text.substr(start, found - start) + with;
    start = found + old.size();
    ++done;
  }
  return out + text.substr(start);
}

/// Python's str.title: a cased letter after a cased letter is lowered, others raised.
std::string pythonTitle(const std::string &text) {
  std::string out;
  bool previousCased = false;
  for (size_t pos = 0; pos < text.size();) {
    char32_t c = nextCodePoint(text, pos);
    const utf8proc_property_t *property = utf8proc_get_property(utf8proc_int32_t(c));
    bool cased = property->category == UTF8PROC_CATEGORY_LU ||
                 property->category == UTF8PROC_CATEGORY_LL ||
                 property->category == UTF8PROC_CATEGORY_LT;
    char32_t mapped = previousCased ? char32_t(utf8proc_tolower(utf8proc_int32_t(c)))
                                    : char32_t(utf8proc_totitle(utf8proc_int32_t(c)));
    appendUtf8(out, mapped);
    previousCased = cased;
  }
  return out;
}

bool matchesAffix(const std::string &text, const Value &affix, bool prefix) {
  auto one = [&](const std::string &candidate) {
    if (candidate.size() > text.size())
      return false;
    return prefix ? text.compare(0, candidate.size(), candidate) == 0
                  : text.compare(text.size() - candidate.size(), candidate.size(), candidate) == 0;
  };
  if (affix.kind() == Value::Kind::List) {
    for (const Value &item : affix.asList())
      if (one(requireString(item, prefix ? "startswith" : "endswith")))
        return true;
    return false;
  }
  return one(requireString(affix, prefix ? "startswith" : "endswith"));
}

Value stringMethod(const Value &self, const std::string &name) {
  const std::string text = self.asString();
  auto bind = [&](auto body) { return Value::callable("str." + name, body); };
  if (name == "strip" || name == "lstrip" || name == "rstrip")
    return bind([text, name](const CallArgs &args) {
      return Value::string(stripText(text, name != "rstrip", name != "lstrip",
                                     argument(args, 0, "chars", Value::none())));
    });
  if (name == "upper" || name == "lower")
    return bind([text, name](const CallArgs &) {
      return Value::string(changeCase(text, name == "upper"));
    });
  if (name == "title")
    return bind([text](const CallArgs &) { return Value::string(pythonTitle(text)); });
  if (name == "capitalize")
    return bind(
        [text](const CallArgs &) { return applyFilter("capitalize", Value::string(text), {}); });
  if (name == "startswith" || name == "endswith")
    return bind([text, name](const CallArgs &args) {
      return Value::boolean(
          matchesAffix(text, argument(args, 0, "prefix", Value::none()), name == "startswith"));
    });
  if (name == "split")
    return bind([text](const CallArgs &args) {
      Value maxSplit = argument(args, 1, "maxsplit", Value::integer(-1));
      ValueList parts;
      for (std::string &part :
           splitText(text, argument(args, 0, "sep", Value::none()), maxSplit.asInt()))
        parts.push_back(Value::string(std::move(part)));
      return Value::list(std::move(parts));
    });
  if (name == "replace")
    return bind([text](const CallArgs &args) {
      return Value::string(replaceText(text,
                                       requireString(argument(args, 0, "old", Value()), "replace"),
                                       requireString(argument(args, 1, "new", Value()), "replace"),
                                       argument(args, 2, "count", Value::integer(-1)).asInt()));
    });
  if (name == "join")
    return bind([text](const CallArgs &args) {
      std::string out;
      ValueList items = iterate(argument(args, 0, "iterable", Value::list({})));
      for (size_t i = 0; i < items.size(); ++i)
        out += (i ? text : "") + requireString(items[i], "join");
      return Value::string(out);
    });
  if (name == "find" || name == "count")
    return bind([text, name](const CallArgs &args) {
      std::string needle = requireString(argument(args, 0, "sub", Value()), name.c_str());
      if (name == "count") {
        if (needle.empty())
          return Value::integer(int64_t(splitCharacters(text).size()) + 1);
        int64_t count = 0;
        for (size_t at = text.find(needle); at != std::string::npos;
             at = text.find(needle, at + needle.size()))
          ++count;
        return Value::integer(count);
      }
      size_t at = text.find(needle);
      return Value::integer(
          at == std::string::npos ? -1 : int64_t(splitCharacters(text.substr(0, at)).size()));
    });
  return Value::undefined("'str object' has no attribute '" + name + "'");
}

Value dictMethod(const Value &self, const std::string &name) {
  if (name == "items" || name == "keys" || name == "values")
    return Value::callable("dict." + name, [self, name](const CallArgs &) {
      ValueList out;
      for (const auto &[key, value] : self.asDict().entries)
        out.push_back(name == "items"  ? Value::list({Value::string(key), value})
                      : name == "keys" ? Value::string(key)
                                       : value);
      return Value::list(std::move(out));
    });
  if (name == "get")
    return Value::callable("dict.get", [self](const CallArgs &args) {
      Value key = argument(args, 0, "key", Value());
      const Value *found = key.isString() ? self.asDict().find(key.asString()) : nullptr;
      return found ? *found : argument(args, 1, "default", Value::none());
    });
  return Value();
}

} // namespace

void failUndefined(const Value &value) {
  fail(value.undefinedName().empty() ? std::string("undefined value") : value.undefinedName());
}

std::vector<std::string> splitCharacters(const std::string &text) {
  std::vector<std::string> chars;
  for (size_t pos = 0; pos < text.size();) {
    size_t start = pos;
    nextCodePoint(text, pos);
    chars.push_back(text.substr(start, pos - start));
  }
  return chars;
}

std::string stripText(const std::string &text, bool left, bool right, const Value &chars) {
  std::vector<std::string> characters = splitCharacters(text);
  std::vector<std::string> strip;
  bool whitespace = chars.isNone() || chars.isUndefined();
  if (!whitespace)
    strip = splitCharacters(requireString(chars, "strip"));
  auto stripped = [&](const std::string &c) {
    if (whitespace) {
      size_t pos = 0;
      return isPythonSpace(nextCodePoint(c, pos));
    }
    for (const std::string &s : strip)
      if (s == c)
        return true;
    return false;
  };
  size_t begin = 0, end = characters.size();
  while (left && begin < end && stripped(characters[begin]))
    ++begin;
  while (right && end > begin && stripped(characters[end - 1]))
    --end;
  std::string out;
  for (size_t i = begin; i < end; ++i)
    out += characters[i];
  return out;
}

std::string changeCase(const std::string &text, bool upper) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    auto c = utf8proc_int32_t(nextCodePoint(text, pos));
    appendUtf8(out, char32_t(upper ? utf8proc_toupper(c) : utf8proc_tolower(c)));
  }
  return out;
}

Value getAttribute(const Value &object, const std::string &name) {
  switch (object.kind()) {
  case Value::Kind::Undefined:
    failUndefined(object);
  case Value::Kind::String:
    return stringMethod(object, name);
  case Value::Kind::Dict: {
    Value method = dictMethod(object, name);
    if (!method.isUndefined())
      return method;
    const Value *found = object.asDict().find(name);
    return found ? *found : Value::undefined("'dict object' has no attribute '" + name + "'");
  }
  case Value::Kind::Namespace: {
    const Value *found = object.asDict().find(name);
    return found ? *found : Value::undefined("'Namespace' has no attribute '" + name + "'");
  }
  default:
    return Value::undefined("'" + object.typeName() + " object' has no attribute '" + name + "'");
  }
}

Value getItem(const Value &object, const Value &key) {
  if (object.isUndefined())
    failUndefined(object);
  bool integerKey = key.kind() == Value::Kind::Int || key.kind() == Value::Kind::Bool;
  if ((object.kind() == Value::Kind::List || object.isString()) && integerKey) {
    std::vector<std::string> chars;
    if (object.isString())
      chars = splitCharacters(object.asString());
    int64_t size = object.isString() ? int64_t(chars.size()) : int64_t(object.asList().size());
    int64_t index = key.asInt() < 0 ? key.asInt() + size : key.asInt();
    if (index < 0 || index >= size)
      return Value::undefined("'" + object.typeName() + " object' has no element " +
                              std::to_string(key.asInt()));
    return object.isString() ? Value::string(chars[size_t(index)], object.isMarkup())
                             : object.asList()[size_t(index)];
  }
  if (object.isMapping() && key.isString()) {
    const Value *found = object.asDict().find(key.asString());
    if (found)
      return *found;
  }
  if (key.isString())
    return getAttribute(object, key.asString());
  return Value::undefined("'" + object.typeName() + " object' has no element " + key.repr());
}

Value getSlice(const Value &object, const Value &start, const Value &stop, const Value &step) {
  if (object.isUndefined())
    failUndefined(object);
  if (object.kind() != Value::Kind::List && !object.isString())
    fail("'", object.typeName(), "' object is not subscriptable");
  auto bound = [](const Value &v, const char *what) -> std::optional<int64_t> {
    if (v.isNone() || v.isUndefined())
      return std::nullopt;
    if (v.kind() != Value::Kind::Int && v.kind() != Value::Kind::Bool)
      fail("slice ", what, " must be an integer, got ", v.typeName());
    return v.asInt();
  };
  std::vector<std::string> chars;
  if (object.isString())
    chars = splitCharacters(object.asString());
  int64_t size = object.isString() ? int64_t(chars.size()) : int64_t(object.asList().size());
  int64_t stride = bound(step, "step").value_or(1);
  if (stride == 0)
    fail("slice step cannot be zero");
  // Python's slice.indices.
  auto clamp = [&](std::optional<int64_t> v, int64_t fallback) {
    if (!v)
      return fallback;
    int64_t i = *v < 0 ? *v + size : *v;
    if (stride > 0)
      return std::clamp<int64_t>(i, 0, size);
    return std::clamp<int64_t>(i, -1, size - 1);
  };
  int64_t from = clamp(bound(start, "start"), stride > 0 ? 0 : size - 1);
  int64_t to = clamp(bound(stop, "stop"), stride > 0 ? size : -1);
  ValueList items;
  std::string text;
  for (int64_t i = from; stride > 0 ? i < to : i > to; i += stride) {
    if (object.isString())
      text += chars[size_t(i)];
    else
      items.push_back(object.asList()[size_t(i)]);
  }
  return object.isString() ? Value::string(text, object.isMarkup()) : Value::list(items);
}

ValueList iterate(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return {};
  case Value::Kind::List:
    return value.asList();
  case Value::Kind::Dict: {
    ValueList keys;
    for (const auto &entry : value.asDict().entries)
      keys.push_back(Value::string(entry.first));
    return keys;
  }
  case Value::Kind::String: {
    ValueList chars;
    for (std::string &c : splitCharacters(value.asString()))
      chars.push_back(Value::string(std::move(c)));
    return chars;
  }
  default:
    fail("'", value.typeName(), "' object is not iterable");
  }
}

size_t lengthOf(const Value &value) {
  switch (value.kind()) {
  case Value::Kind::Undefined:
    return 0;
  case Value::Kind::String:
    return splitCharacters(value.asString()).size();
  case Value::Kind::List:
    return value.asList().size();
  case Value::Kind::Dict:
    return value.asDict().entries.size();
  default:
    fail("object of type '", value.typeName(), "' has no len()");
  }
}

ValueDict makeGlobals() {
  ValueDict globals;
  globals.set("range", Value::callable("range", [](const CallArgs &args) {
                if (args.positional.empty() || args.positional.size() > 3)
                  fail("range expects 1 to 3 arguments");
                for (const Value &v : args.positional)
                  if (v.kind() != Value::Kind::Int && v.kind() != Value::Kind::Bool)
                    fail("range expects integers, got ", v.typeName());
                bool one = args.positional.size() == 1;
                int64_t start = one ? 0 : args.positional[0].asInt();
                int64_t stop = one ? args.positional[0].asInt() : args.positional[1].asInt();
                int64_t step = args.positional.size() == 3 ? args.positional[2].asInt() : 1;
                if (step == 0)
                  fail("range step cannot be zero");
                ValueList out;
                for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
                  // jinja2's sandbox refuses ranges longer than 100000 (MAX_RANGE).
                  if (out.size() >= 100000)
                    fail("range too big, the sandbox allows at most 100000 items");
                  out.push_back(Value::integer(i));
                }
                return Value::list(std::move(out));
              }));
  globals.set("namespace", Value::callable("namespace", [](const CallArgs &args) {
                ValueDict entries;
                for (const Value &v : args.positional) {
                  if (v.kind() != Value::Kind::Dict)
                    fail("namespace expects a dict or keyword arguments");
                  for (const auto &[key, value] : v.asDict().entries)
                    entries.set(key, value);
                }
                for (const auto &[key, value] : args.keywords)
                  entries.set(key, value);
                return Value::makeNamespace(std::move(entries));
              }));
  globals.set("dict", Value::callable("dict", [](const CallArgs &args) {
                ValueDict entries;
                for (const auto &[key, value] : args.keywords)
                  entries.set(key, value);
                return Value::dict(std::move(entries));
              }));
  globals.set("raise_exception", Value::callable("raise_exception", [](const CallArgs &args) {
                std::string message = args.positional.empty() ? "" : args.positional[0].str();
                fail(kRaisedPrefix, message);
                return Value();
              }));
  globals.set("strftime_now", Value::callable("strftime_now", [](const CallArgs &args) {
                std::string format =
                    requireString(argument(args, 0, "format", Value()), "strftime_now");
                std::time_t now =
                    std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
                std::tm local{};
                localtime_r(&now, &local);
                char buffer[512];
                size_t length = std::strftime(buffer, sizeof buffer, format.c_str(), &local);
                return Value::string(std::string(buffer, length));
              }));
  return globals;
}

} // namespace onnxc::text::chat
