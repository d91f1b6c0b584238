//===- text/chat/Filters.cpp - jinja2's filters and tests ------------------===//
//
// The filters and `is` tests of jinja2 3.1 that chat templates use, with its
// semantics (jinja2/filters.py, jinja2/tests.py): `title` capitalizes after
// spaces and brackets only (unlike str.title), `default` replaces undefined
// values only unless its second argument is true, `tojson` is HTML-safe and
// sorts keys and returns markup. A name outside these lists is refused when
// the template is parsed.
//
//===----------------------------------------------------------------------===//
#include "text/chat/Builtins.h"

#include "ir/Error.h"
#include "text/chat/Json.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace onnxc::text::chat {
namespace {

const char *const kFilters[] = {
    "trim",   "tojson",  "length", "count",   "upper",      "lower",      "capitalize",
    "title",  "default", "d",      "join",    "first",      "last",       "list",
    "string", "int",     "float",  "replace", "items",      "reverse",    "sort",
    "unique", "map",     "select", "reject",  "selectattr", "rejectattr", "abs",
    "safe",   "round",   "min",    "max",     "sum",        "dictsort",   "indent"};

const char *const kTests[] = {
    "defined", "undefined", "none",        "string",  "number",   "integer",  "float",
    "boolean", "true",      "false",       "mapping", "iterable", "sequence", "callable",
    "even",    "odd",       "divisibleby", "equalto", "eq",       "==",       "ne",
    "!=",      "lt",        "<",           "le",      "<=",       "gt",       ">",
    "ge",      ">=",        "in",          "sameas",  "lower",    "upper"};

const Value &argument(const CallArgs &args, size_t index, const char *keyword,
                      const Value &fallback) {
  if (index < args.positional.size())
    return args.positional[index];
  for (const auto &[name, value] : args.keywords)
    if (name == keyword)
      return value;
  return fallback;
}

/// jinja2's do_title: capitalize each piece after runs of spaces and -({[<.
std::string jinjaTitle(const std::string &text) {
  std::string out;
  bool wordStart = true;
  for (const std::string &c : splitCharacters(text)) {
    bool separator = c == "-" || c == "(" || c == "{" || c == "[" || c == "<" ||
                     stripText(c, true, true, Value::none()).empty();
    if (separator) {
      out += c;
      wordStart = true;
    } else {
      out += changeCase(c, wordStart);
      wordStart = false;
    }
  }
  return out;
}

std::string capitalize(const std::string &text) {
  std::vector<std::string> chars = splitCharacters(text);
  std::string out;
  for (size_t i = 0; i < chars.size(); ++i)
    out += changeCase(chars[i], i == 0);
  return out;
}

Value toInteger(const Value &value, const Value &fallback) {
  if (value.kind() == Value::Kind::Int || value.kind() == Value::Kind::Bool)
    return Value::integer(value.asInt());
  if (value.kind() == Value::Kind::Float)
    return std::isfinite(value.asFloat()) ? Value::integer(int64_t(value.asFloat())) : fallback;
  if (!value.isString())
    return fallback;
  std::string text = stripText(value.asString(), true, true, Value::none());
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0' && errno == 0)
    return Value::integer(parsed);
  double real = std::strtod(text.c_str(), &end);
  if (!text.empty() && *end == '\0' && std::isfinite(real))
    return Value::integer(int64_t(real));
  return fallback;
}

Value toFloat(const Value &value, const Value &fallback) {
  if (value.isNumber())
    return Value::floating(value.asFloat());
  if (!value.isString())
    return fallback;
  std::string text = stripText(value.asString(), true, true, Value::none());
  char *end = nullptr;
  double real = std::strtod(text.c_str(), &end);
  return !text.empty() && *end == '\0' ? Value::floating(real) : fallback;
}

/// The value of `attribute` ("a.b" follows dicts) of `item`, for map, sort and selectattr.
Value attributeOf(const Value &item, const std::string &attribute) {
  Value current = item;
  size_t start = 0;
  while (true) {
    size_t dot = attribute.find('.', start);
    std::string part = attribute.substr(start, dot == std::string::npos ? dot : dot - start);
    current = getItem(current, Value::string(part));
    if (dot == std::string::npos || current.isUndefined())
      return current;
    start = dot + 1;
  }
}

/// select/reject/selectattr/rejectattr: items passing (or failing) a test.
Value selectItems(const Value &subject, const CallArgs &args, bool byAttribute, bool keep) {
  if (!subject.truthy())
    return Value::list({}); // jinja2 iterates only `if seq`: none selects nothing
  size_t next = 0;
  std::string attribute;
  if (byAttribute) {
    if (args.positional.empty() || !args.positional[0].isString())
      fail("selectattr expects an attribute name");
    attribute = args.positional[next++].asString();
  }
  std::string test;
  if (next < args.positional.size()) {
    if (!args.positional[next].isString())
      fail("select expects a test name");
    test = args.positional[next++].asString();
    if (!isKnownTest(test))
      fail("unknown test '", test, "'");
  }
  std::vector<Value> testArgs(args.positional.begin() + long(next), args.positional.end());
  ValueList out;
  for (const Value &item : iterate(subject)) {
    Value checked = byAttribute ? attributeOf(item, attribute) : item;
    bool passed = test.empty() ? checked.truthy() : applyTest(test, checked, testArgs);
    if (passed == keep)
      out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value sortItems(const Value &subject, const CallArgs &args) {
  ValueList items = iterate(subject);
  bool reverse = argument(args, 0, "reverse", Value::boolean(false)).truthy();
  bool caseSensitive = argument(args, 1, "case_sensitive", Value::boolean(false)).truthy();
  Value attribute = argument(args, 2, "attribute", Value::none());
  auto key = [&](const Value &item) {
    Value k = attribute.isString() ? attributeOf(item, attribute.asString()) : item;
    return k.isString() && !caseSensitive ? Value::string(changeCase(k.asString(), false)) : k;
  };
  std::stable_sort(items.begin(), items.end(), [&](const Value &a, const Value &b) {
    return reverse ? valuesLess(key(b), key(a)) : valuesLess(key(a), key(b));
  });
  return Value::list(std::move(items));
}

/// A keyword-only argument.
const Value &keyword(const CallArgs &args, const char *name, const Value &fallback) {
  for (const auto &[key, value] : args.keywords)
    if (key == name)
      return value;
  return fallback;
}

Value mapItems(const Value &subject, const CallArgs &args) {
  ValueList out;
  if (!subject.truthy())
    return Value::list({}); // as select: jinja2 maps only `if seq`
  Value attribute = keyword(args, "attribute", Value::none());
  if (attribute.isString()) {
    Value fallback = keyword(args, "default", Value());
    for (const Value &item : iterate(subject)) {
      Value v = attributeOf(item, attribute.asString());
      out.push_back(v.isUndefined() && !fallback.isUndefined() ? fallback : v);
    }
    return Value::list(std::move(out));
  }
  if (args.positional.empty() || !args.positional[0].isString())
    fail("map expects a filter name or attribute=");
  std::string filter = args.positional[0].asString();
  if (!isKnownFilter(filter))
    fail("unknown filter '", filter, "'");
  CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keywords};
  for (const Value &item : iterate(subject))
    out.push_back(applyFilter(filter, item, rest));
  return Value::list(std::move(out));
}

/// jinja2's do_indent: every line after the first (and the first with first=true) indented,
/// blank lines too only with blank=true. Lines end at \n, \r\n or \r.
std::string indentLines(const std::string &text, const CallArgs &args) {
  Value width = argument(args, 0, "width", Value::integer(4));
  std::string indentation =
      width.isString() ? width.asString()
                       : std::string(size_t(std::clamp<int64_t>(width.asInt(), 0, 1 << 16)), ' ');
  bool first = argument(args, 1, "first", Value::boolean(false)).truthy();
  bool blank = argument(args, 2, "blank", Value::boolean(false)).truthy();
  std::vector<std::string> lines;
  std::string current;
  std::string padded = text + "\n"; // as jinja2: the last line always ends
  for (size_t i = 0; i < padded.size(); ++i) {
    char c = padded[i];
    if (c == '\n' || c == '\r') {
      lines.push_back(current);
      current.clear();
      if (c == '\r' && i + 1 < padded.size() && padded[i + 1] == '\n')
        ++i;
    } else {
      current += c;
    }
  }
  std::string out = first ? indentation : "";
  for (size_t i = 0; i < lines.size(); ++i) {
    if (i > 0)
      out += "\n" + (blank || !lines[i].empty() ? indentation : std::string());
    out += lines[i];
  }
  return out;
}

Value stringFilter(const std::string &name, const Value &subject, const CallArgs &args) {
  std::string text = subject.str();
  if (name == "trim")
    return Value::string(stripText(text, true, true, argument(args, 0, "chars", Value::none())),
                         subject.isMarkup());
  if (name == "upper" || name == "lower")
    return Value::string(changeCase(text, name == "upper"));
  if (name == "capitalize")
    return Value::string(capitalize(text));
  if (name == "title")
    return Value::string(jinjaTitle(text));
  if (name == "string")
    return subject.isString() ? subject : Value::string(text);
  if (name == "safe")
    return Value::string(text, true);
  if (name == "indent")
    return Value::string(indentLines(text, args));
  // replace
  Value old = argument(args, 0, "old", Value()), with = argument(args, 1, "new", Value());
  if (!old.isString() || !with.isString())
    fail("replace expects two strings");
  Value count = argument(args, 2, "count", Value::none());
  CallArgs methodArgs{{old, with, count.isNone() ? Value::integer(-1) : count}, {}};
  return getAttribute(Value::string(text), "replace").asCallable().body(methodArgs);
}

Value listFilter(const std::string &name, const Value &subject, const CallArgs &args) {
  if (name == "join") {
    std::string separator = argument(args, 0, "d", Value::string("")).str();
    Value attribute = argument(args, 1, "attribute", Value::none());
    std::string out;
    ValueList items = iterate(subject);
    for (size_t i = 0; i < items.size(); ++i) {
      Value item = attribute.isString() ? attributeOf(items[i], attribute.asString()) : items[i];
      out += (i ? separator : "") + item.str();
    }
    return Value::string(out);
  }
  ValueList items = iterate(subject);
  if (name == "first" || name == "last") {
    if (items.empty())
      return Value::undefined("no first item, sequence was empty");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list")
    return Value::list(std::move(items));
  if (name == "reverse") {
    if (subject.isString()) {
      std::string out;
      for (auto it = items.rbegin(); it != items.rend(); ++it)
        out += it->asString();
      return Value::string(out);
    }
    std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "unique") {
    ValueList out;
    for (const Value &item : items)
      if (std::none_of(out.begin(), out.end(),
                       [&](const Value &seen) { return valuesEqual(seen, item); }))
        out.push_back(item);
    return Value::list(std::move(out));
  }
  if (name == "min" || name == "max") {
    if (items.empty())
      return Value::undefined("no " + name + " item, sequence was empty");
    Value best = items[0];
    for (const Value &item : items)
      if (name == "min" ? valuesLess(item, best) : valuesLess(best, item))
        best = item;
    return best;
  }
  // sum
  Value total = argument(args, 1, "start", Value::integer(0));
  for (const Value &item : items) {
    if (!item.isNumber() || !total.isNumber())
      fail("sum expects numbers");
    total = item.kind() == Value::Kind::Float || total.kind() == Value::Kind::Float
                ? Value::floating(total.asFloat() + item.asFloat())
                : Value::integer(total.asInt() + item.asInt());
  }
  return total;
}

} // namespace

bool isKnownFilter(const std::string &name) {
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

bool isKnownTest(const std::string &name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

Value applyFilter(const std::string &name, const Value &subject, const CallArgs &args) {
  if (name == "default" || name == "d") {
    bool boolean = argument(args, 1, "boolean", Value::boolean(false)).truthy();
    bool replace = subject.isUndefined() || (boolean && !subject.truthy());
    return replace ? argument(args, 0, "default_value", Value::string("")) : subject;
  }
  if (name == "length" || name == "count")
    return Value::integer(int64_t(lengthOf(subject)));
  if (name == "tojson") {
    Value indent = argument(args, 0, "indent", Value::none());
    std::optional<int> spaces;
    if (indent.kind() == Value::Kind::Int)
      spaces = int(std::clamp<int64_t>(indent.asInt(), 0, 64));
    else if (!indent.isNone())
      fail("tojson indent must be an integer");
    return Value::string(toJson(subject, spaces), true);
  }
  if (name == "items") {
    if (subject.isUndefined())
      return Value::list({});
    if (!subject.isMapping())
      fail("items expects a mapping, got ", subject.typeName());
    return getAttribute(subject, "items").asCallable().body({});
  }
  if (name == "dictsort") {
    if (!subject.isMapping())
      fail("dictsort expects a mapping, got ", subject.typeName());
    ValueList pairs = getAttribute(subject, "items").asCallable().body({}).asList();
    std::stable_sort(pairs.begin(), pairs.end(), [](const Value &a, const Value &b) {
      return valuesLess(a.asList()[0], b.asList()[0]);
    });
    return Value::list(std::move(pairs));
  }
  if (subject.isUndefined() && name != "string" && name != "trim" && name != "join" &&
      name != "list" && name != "first" && name != "last" && name != "upper" && name != "lower" &&
      name != "title" && name != "capitalize")
    failUndefined(subject);
  if (name == "int")
    return toInteger(subject, argument(args, 0, "default", Value::integer(0)));
  if (name == "float")
    return toFloat(subject, argument(args, 0, "default", Value::floating(0)));
  if (name == "abs") {
    if (subject.kind() == Value::Kind::Float)
      return Value::floating(std::fabs(subject.asFloat()));
    if (!subject.isNumber())
      fail("bad operand type for abs(): '", subject.typeName(), "'");
    return Value::integer(subject.asInt() < 0 ? -subject.asInt() : subject.asInt());
  }
  if (name == "round") {
    if (!subject.isNumber())
      fail("round expects a number");
    int64_t precision = argument(args, 0, "precision", Value::integer(0)).asInt();
    double scale = std::pow(10.0, double(precision));
    return Value::floating(std::nearbyint(subject.asFloat() * scale) / scale);
  }
  if (name == "sort")
    return sortItems(subject, args);
  if (name == "map")
    return mapItems(subject, args);
  if (name == "select" || name == "reject")
    return selectItems(subject, args, false, name == "select");
  if (name == "selectattr" || name == "rejectattr")
    return selectItems(subject, args, true, name == "selectattr");
  if (name == "join" || name == "first" || name == "last" || name == "list" || name == "reverse" ||
      name == "unique" || name == "min" || name == "max" || name == "sum")
    return listFilter(name, subject, args);
  if (isKnownFilter(name))
    return stringFilter(name, subject, args);
  fail("unknown filter '", name, "'");
}

bool applyTest(const std::string &name, const Value &subject, const std::vector<Value> &args) {
  using Kind = Value::Kind;
  Kind kind = subject.kind();
  auto other = [&]() -> const Value & {
    if (args.empty())
      fail("test '", name, "' expects an argument");
    return args[0];
  };
  if (name == "defined" || name == "undefined")
    return subject.isUndefined() == (name == "undefined");
  if (name == "none")
    return kind == Kind::None;
  if (name == "string")
    return kind == Kind::String;
  if (name == "number")
    return subject.isNumber();
  if (name == "integer")
    return kind == Kind::Int;
  if (name == "float")
    return kind == Kind::Float;
  if (name == "boolean")
    return kind == Kind::Bool;
  if (name == "true" || name == "false")
    return kind == Kind::Bool && subject.asBool() == (name == "true");
  if (name == "mapping")
    return kind == Kind::Dict;
  if (name == "iterable")
    return kind == Kind::String || kind == Kind::List || kind == Kind::Dict ||
           kind == Kind::Undefined;
  if (name == "sequence")
    return kind == Kind::String || kind == Kind::List || kind == Kind::Dict ||
           kind == Kind::Undefined;
  if (name == "callable")
    return kind == Kind::Callable;
  if (name == "lower" || name == "upper")
    return kind == Kind::String &&
           changeCase(subject.asString(), name == "upper") == subject.asString();
  if (name == "even" || name == "odd" || name == "divisibleby") {
    if (subject.isUndefined())
      failUndefined(subject);
    if (kind != Kind::Int && kind != Kind::Bool)
      fail("test '", name, "' expects an integer, got ", subject.typeName());
    int64_t divisor = name == "divisibleby" ? other().asInt() : 2;
    if (divisor == 0)
      fail("integer division or modulo by zero");
    int64_t remainder = subject.asInt() % divisor;
    return name == "odd" ? remainder != 0 : remainder == 0;
  }
  if (name == "equalto" || name == "eq" || name == "==" || name == "sameas")
    return valuesEqual(subject, other());
  if (name == "ne" || name == "!=")
    return !valuesEqual(subject, other());
  if (name == "lt" || name == "<")
    return valuesLess(subject, other());
  if (name == "le" || name == "<=")
    return !valuesLess(other(), subject);
  if (name == "gt" || name == ">")
    return valuesLess(other(), subject);
  if (name == "ge" || name == ">=")
    return !valuesLess(subject, other());
  if (name == "in") {
    const Value &container = other();
    if (container.isString())
      return subject.isString() &&
             container.asString().find(subject.asString()) != std::string::npos;
    for (const Value &item : iterate(container))
      if (valuesEqual(item, subject))
        return true;
    return false;
  }
  fail("unknown test '", name, "'");
}

} // namespace onnxc::text::chat
