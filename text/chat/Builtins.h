//===- text/chat/Builtins.h - Filters, tests, methods and globals ----------===//
//
// What a chat template can call besides its own macros, with jinja2 3.1's
// and Python's semantics: the filters (Filters.cpp), the `is` tests, the
// attributes and methods of strings and dicts (Methods.cpp), and the
// globals (range, namespace, raise_exception, dict, strftime_now). Errors are
// thrown as Error without a line; the renderer adds the statement's line.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/chat/Value.h"

#include <string>
#include <vector>

namespace onnxc::text::chat {

bool isKnownFilter(const std::string &name);
bool isKnownTest(const std::string &name);

Value applyFilter(const std::string &name, const Value &subject, const CallArgs &args);
bool applyTest(const std::string &name, const Value &subject, const std::vector<Value> &args);

/// `object.name`: a dict key, a namespace entry, or a bound method; else undefined.
Value getAttribute(const Value &object, const std::string &name);
/// `object[key]`: list and string indices (negative from the end), dict keys; else undefined.
Value getItem(const Value &object, const Value &key);
/// `object[start:stop:step]` on lists and strings, with Python's slice rules.
Value getSlice(const Value &object, const Value &start, const Value &stop, const Value &step);

/// The items a for loop visits: list items, dict keys, string characters; undefined is empty.
ValueList iterate(const Value &value);
/// len(): code points of a string, items of a list or dict.
size_t lengthOf(const Value &value);
/// Throws the error an undefined value carries when it is used, not just printed.
[[noreturn]] void failUndefined(const Value &value);

/// The globals of every render: range, namespace, dict, raise_exception, strftime_now.
ValueDict makeGlobals();

/// The code points of UTF-8 text, each as its own string (Python's iteration over a str).
std::vector<std::string> splitCharacters(const std::string &text);
/// str.strip / lstrip / rstrip: Python whitespace, or the code points of `chars`.
std::string stripText(const std::string &text, bool left, bool right, const Value &chars);
/// str.upper / str.lower by code point.
std::string changeCase(const std::string &text, bool upper);

/// The message raise_exception's errors carry, so that callers can tell them apart.
inline const char *kRaisedPrefix = "raise_exception: ";

} // namespace onnxc::text::chat
