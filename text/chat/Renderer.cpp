//===- text/chat/Renderer.cpp - Running a parsed chat template -------------===//
#include "text/chat/Renderer.h"

#include "ir/Error.h"
#include "text/chat/Builtins.h"

#include <cmath>
#include <memory>

namespace onnxc::text::chat {
namespace {

enum class Flow { Normal, Break, Continue };

using Frame = std::shared_ptr<ValueDict>;

class Renderer {
public:
  Renderer(const ValueDict &variables, const RenderLimits &limits) : limits_(limits) {
    auto globals = std::make_shared<ValueDict>(makeGlobals());
    for (const auto &[name, value] : variables.entries)
      globals->set(name, value);
    frames_.push_back(globals);
    frames_.push_back(std::make_shared<ValueDict>()); // the template's own top-level names
  }

  std::string run(const StmtList &body) {
    std::string out;
    Flow flow = execList(body, out);
    if (flow != Flow::Normal)
      fail("chat template: 'break' or 'continue' outside a loop");
    return out;
  }

private:
  void step() {
    if (++steps_ > limits_.maxSteps)
      fail("rendering takes more than ", limits_.maxSteps, " steps; is the template looping?");
  }

  void checkSize(size_t bytes) const {
    if (bytes > limits_.maxOutputBytes)
      fail("the rendered text would exceed ", limits_.maxOutputBytes, " bytes");
  }

  void emit(std::string &out, const std::string &text) {
    checkSize(out.size() + text.size());
    out += text;
  }

  Value lookup(const std::string &name) const {
    for (auto it = frames_.rbegin(); it != frames_.rend(); ++it)
      if (const Value *found = (*it)->find(name))
        return *found;
    return Value::undefined("'" + name + "' is undefined");
  }

  Flow execList(const StmtList &body, std::string &out) {
    for (const StmtPtr &stmt : body) {
      Flow flow = exec(*stmt, out);
      if (flow != Flow::Normal)
        return flow;
    }
    return Flow::Normal;
  }

  Flow exec(const Stmt &stmt, std::string &out) {
    try {
      return execUnchecked(stmt, out);
    } catch (const Error &e) {
      std::string message = e.what();
      if (message.rfind("chat template", 0) == 0)
        throw;
      fail("chat template line ", stmt.line, ": ", message);
    }
  }

  Flow execUnchecked(const Stmt &stmt, std::string &out) {
    step();
    switch (stmt.kind) {
    case StmtKind::Text:
      emit(out, stmt.text);
      return Flow::Normal;
    case StmtKind::Print:
      emit(out, eval(*stmt.expr).str());
      return Flow::Normal;
    case StmtKind::If:
      for (size_t i = 0; i < stmt.bodies.size(); ++i)
        if (i >= stmt.conditions.size() || eval(*stmt.conditions[i]).truthy())
          return execList(stmt.bodies[i], out);
      return Flow::Normal;
    case StmtKind::For:
      return execFor(stmt, out);
    case StmtKind::Set:
      execSet(stmt);
      return Flow::Normal;
    case StmtKind::SetBlock: {
      std::string captured;
      execList(stmt.bodies[0], captured);
      frames_.back()->set(stmt.targets[0], Value::string(captured));
      return Flow::Normal;
    }
    case StmtKind::Macro:
      defineMacro(stmt);
      return Flow::Normal;
    case StmtKind::Break:
      return Flow::Break;
    case StmtKind::Continue:
      return Flow::Continue;
    case StmtKind::Body:
      return execList(stmt.bodies[0], out);
    case StmtKind::FilterBlock:
      return execFilterBlock(stmt, out);
    }
    return Flow::Normal;
  }

  Flow execFilterBlock(const Stmt &stmt, std::string &out) {
    std::string body;
    Flow flow = execList(stmt.bodies[0], body);
    std::vector<const Expr *> chain; // outermost filter first
    for (const Expr *filter = stmt.expr.get(); filter->kind == ExprKind::Filter;
         filter = filter->children[0].get())
      chain.push_back(filter);
    Value text = Value::string(body);
    for (auto it = chain.rbegin(); it != chain.rend(); ++it)
      text = applyFilter((*it)->name, text, evalArguments(**it, 1));
    emit(out, text.str());
    return flow;
  }

  void assign(ValueDict &frame, const std::vector<std::string> &names, const Value &value) {
    if (names.size() == 1) {
      frame.set(names[0], value);
      return;
    }
    ValueList items = iterate(value);
    if (items.size() != names.size())
      fail("cannot unpack ", items.size(), " values into ", names.size(), " names");
    for (size_t i = 0; i < names.size(); ++i)
      frame.set(names[i], items[i]);
  }

  void execSet(const Stmt &stmt) {
    Value value = eval(*stmt.expr);
    if (stmt.attribute.empty()) {
      assign(*frames_.back(), stmt.targets, value);
      return;
    }
    Value target = lookup(stmt.targets[0]);
    if (target.kind() != Value::Kind::Namespace)
      fail("cannot assign attribute on non-namespace object '", stmt.targets[0], "'");
    target.mutableNamespace().set(stmt.attribute, value);
  }

  /// The `loop` object: built once per loop, its per-item values overwritten in a copy for
  /// each item (entries by position, see kLoopKeys), so an iteration costs no lookups.
  static constexpr const char *kLoopKeys[] = {"index",  "index0", "revindex", "revindex0",
                                              "first",  "last",   "previtem", "nextitem",
                                              "length", "depth",  "depth0",   "cycle"};

  static ValueDict loopTemplate(size_t length, std::shared_ptr<size_t> position) {
    ValueDict loop;
    for (const char *key : kLoopKeys)
      loop.entries.emplace_back(key, Value());
    loop.entries[8].second = Value::integer(int64_t(length));
    loop.entries[9].second = Value::integer(1);
    loop.entries[10].second = Value::integer(0);
    loop.entries[11].second = Value::callable("loop.cycle", [position](const CallArgs &args) {
      if (args.positional.empty())
        fail("no items for cycling given");
      return args.positional[*position % args.positional.size()];
    });
    return loop;
  }

  static Value loopObject(const ValueDict &base, const ValueList &items, size_t index) {
    ValueDict loop = base;
    auto &e = loop.entries;
    size_t length = items.size();
    e[0].second = Value::integer(int64_t(index + 1));
    e[1].second = Value::integer(int64_t(index));
    e[2].second = Value::integer(int64_t(length - index));
    e[3].second = Value::integer(int64_t(length - index - 1));
    e[4].second = Value::boolean(index == 0);
    e[5].second = Value::boolean(index + 1 == length);
    e[6].second = index > 0 ? items[index - 1] : Value::undefined("there is no previous item");
    e[7].second = index + 1 < length ? items[index + 1] : Value::undefined("there is no next item");
    return Value::dict(std::move(loop));
  }

  Flow execFor(const Stmt &stmt, std::string &out) {
    ValueList items = iterate(eval(*stmt.expr));
    auto frame = std::make_shared<ValueDict>(); // one frame, emptied for each item
    if (stmt.filter) {
      // The filter sees the loop variables but not `loop`; it decides loop.length.
      ValueList kept;
      frames_.push_back(frame);
      for (const Value &item : items) {
        step();
        frame->entries.clear();
        assign(*frame, stmt.targets, item);
        if (eval(*stmt.filter).truthy())
          kept.push_back(item);
      }
      frames_.pop_back();
      items = std::move(kept);
    }
    auto position = std::make_shared<size_t>(0);
    ValueDict base = loopTemplate(items.size(), position);
    frames_.push_back(frame);
    for (size_t i = 0; i < items.size(); ++i) {
      step();
      *position = i;
      frame->entries.clear();
      frame->entries.emplace_back("loop", loopObject(base, items, i));
      assign(*frame, stmt.targets, items[i]);
      if (execList(stmt.bodies[0], out) == Flow::Break)
        break;
    }
    frames_.pop_back();
    if (items.empty() && stmt.bodies.size() > 1)
      return execList(stmt.bodies[1], out);
    return Flow::Normal;
  }

  void defineMacro(const Stmt &stmt) {
    // Weak: the macro is stored in the frames it sees, and a shared_ptr cycle would leak them.
    std::vector<std::weak_ptr<ValueDict>> scope(frames_.begin(), frames_.begin() + 2);
    Value macro = Value::callable(stmt.text, [this, &stmt, scope](const CallArgs &args) {
      std::vector<Frame> frames;
      for (const auto &frame : scope)
        frames.push_back(frame.lock());
      return callMacro(stmt, frames, args);
    });
    frames_.back()->set(stmt.text, macro);
  }

  Value callMacro(const Stmt &stmt, const std::vector<Frame> &scope, const CallArgs &args) {
    if (callDepth_ >= limits_.maxCallDepth)
      fail("macro calls nested deeper than ", limits_.maxCallDepth);
    const std::vector<std::string> &params = stmt.targets;
    if (args.positional.size() > params.size())
      fail("macro '", stmt.text, "' takes ", params.size(), " arguments, got ",
           args.positional.size());
    auto frame = std::make_shared<ValueDict>();
    std::vector<Frame> saved = frames_;
    frames_ = scope;
    frames_.push_back(frame);
    ++callDepth_;
    struct Restore {
      Renderer &self;
      std::vector<Frame> frames;
      ~Restore() {
        self.frames_ = std::move(frames);
        --self.callDepth_;
      }
    } restore{*this, std::move(saved)};
    for (const auto &[name, value] : args.keywords)
      if (std::find(params.begin(), params.end(), name) == params.end())
        fail("macro '", stmt.text, "' has no parameter '", name, "'");
    for (size_t i = 0; i < params.size(); ++i) {
      const Value *keyword = nullptr;
      for (const auto &[name, value] : args.keywords)
        if (name == params[i])
          keyword = &value;
      if (i < args.positional.size())
        frame->set(params[i], args.positional[i]);
      else if (keyword)
        frame->set(params[i], *keyword);
      else if (stmt.conditions[i])
        frame->set(params[i], eval(*stmt.conditions[i]));
      else
        frame->set(params[i], Value::undefined("parameter '" + params[i] + "' was not provided"));
    }
    std::string out;
    execList(stmt.bodies[0], out);
    return Value::string(out);
  }

  Value eval(const Expr &expr) {
    step();
    switch (expr.kind) {
    case ExprKind::Literal:
      return expr.value;
    case ExprKind::Name:
      return lookup(expr.name);
    case ExprKind::Attribute:
      return getAttribute(eval(*expr.children[0]), expr.name);
    case ExprKind::Item:
      return getItem(eval(*expr.children[0]), eval(*expr.children[1]));
    case ExprKind::Slice: {
      Value parts[3];
      for (int i = 0; i < 3; ++i)
        parts[i] =
            expr.children[size_t(i) + 1] ? eval(*expr.children[size_t(i) + 1]) : Value::none();
      return getSlice(eval(*expr.children[0]), parts[0], parts[1], parts[2]);
    }
    case ExprKind::Call:
      return evalCall(expr);
    case ExprKind::Filter: {
      Value subject = eval(*expr.children[0]);
      Value result = applyFilter(expr.name, subject, evalArguments(expr, 1));
      if (result.isString())
        checkSize(result.asString().size());
      return result;
    }
    case ExprKind::Test: {
      Value subject = eval(*expr.children[0]);
      CallArgs args = evalArguments(expr, 1);
      return Value::boolean(applyTest(expr.name, subject, args.positional) != expr.negated);
    }
    case ExprKind::Unary:
      return evalUnary(expr);
    case ExprKind::Binary:
      return evalBinary(expr);
    case ExprKind::Compare:
      return evalCompare(expr);
    case ExprKind::Condition:
      if (eval(*expr.children[0]).truthy())
        return eval(*expr.children[1]);
      return expr.children[2] ? eval(*expr.children[2])
                              : Value::undefined("the conditional expression has no else");
    case ExprKind::List: {
      ValueList items;
      for (const ExprPtr &child : expr.children)
        items.push_back(eval(*child));
      return Value::list(std::move(items));
    }
    case ExprKind::Dict: {
      ValueDict dict;
      for (const auto &[key, value] : expr.keywords)
        dict.set(key, eval(*value));
      return Value::dict(std::move(dict));
    }
    }
    return Value();
  }

  CallArgs evalArguments(const Expr &expr, size_t first) {
    CallArgs args;
    for (size_t i = first; i < expr.children.size(); ++i)
      args.positional.push_back(eval(*expr.children[i]));
    for (const auto &[name, value] : expr.keywords)
      args.keywords.emplace_back(name, eval(*value));
    return args;
  }

  Value evalCall(const Expr &expr) {
    Value callee = eval(*expr.children[0]);
    if (callee.isUndefined())
      failUndefined(callee);
    if (callee.kind() != Value::Kind::Callable)
      fail("'", callee.typeName(), "' object is not callable");
    Value result = callee.asCallable().body(evalArguments(expr, 1));
    if (result.isString())
      checkSize(result.asString().size());
    return result;
  }

  Value evalUnary(const Expr &expr) {
    Value operand = eval(*expr.children[0]);
    if (expr.name == "not")
      return Value::boolean(!operand.truthy());
    if (operand.isUndefined())
      failUndefined(operand);
    if (operand.kind() == Value::Kind::Float)
      return Value::floating(expr.name == "-" ? -operand.asFloat() : operand.asFloat());
    if (!operand.isNumber())
      fail("bad operand type for unary ", expr.name, ": '", operand.typeName(), "'");
    if (expr.name == "-" && operand.asInt() == INT64_MIN)
      fail("integer overflow");
    return Value::integer(expr.name == "-" ? -operand.asInt() : operand.asInt());
  }

  Value evalBinary(const Expr &expr) {
    const std::string &op = expr.name;
    Value left = eval(*expr.children[0]);
    if (op == "and")
      return left.truthy() ? eval(*expr.children[1]) : left;
    if (op == "or")
      return left.truthy() ? left : eval(*expr.children[1]);
    Value right = eval(*expr.children[1]);
    if (op == "~") {
      checkSize(left.str().size() + right.str().size());
      return Value::string(left.str() + right.str());
    }
    if (left.isUndefined())
      failUndefined(left);
    if (right.isUndefined())
      failUndefined(right);
    return arithmetic(op, left, right);
  }

  Value arithmetic(const std::string &op, const Value &left, const Value &right) {
    if (op == "+" && left.isString() && right.isString()) {
      // Markup + str escapes the plain string, as markupsafe does.
      bool markup = left.isMarkup() || right.isMarkup();
      std::string a = markup && !left.isMarkup() ? escapeHtml(left.asString()) : left.asString();
      std::string b = markup && !right.isMarkup() ? escapeHtml(right.asString()) : right.asString();
      checkSize(a.size() + b.size());
      return Value::string(a + b, markup);
    }
    if (op == "+" && left.kind() == Value::Kind::List && right.kind() == Value::Kind::List) {
      ValueList items = left.asList();
      items.insert(items.end(), right.asList().begin(), right.asList().end());
      return Value::list(std::move(items));
    }
    if (op == "*" && (left.isString() || left.kind() == Value::Kind::List) &&
        (right.kind() == Value::Kind::Int || right.kind() == Value::Kind::Bool))
      return repeat(left, right.asInt());
    if (op == "*" && (right.isString() || right.kind() == Value::Kind::List) &&
        (left.kind() == Value::Kind::Int || left.kind() == Value::Kind::Bool))
      return repeat(right, left.asInt());
    if (!left.isNumber() || !right.isNumber())
      fail("unsupported operand type(s) for ", op, ": '", left.typeName(), "' and '",
           right.typeName(), "'");
    bool real = left.kind() == Value::Kind::Float || right.kind() == Value::Kind::Float;
    if (op == "/" || (real && op != "**"))
      return floatArithmetic(op, left.asFloat(), right.asFloat());
    return integerArithmetic(op, left.asInt(), right.asInt());
  }

  Value repeat(const Value &sequence, int64_t times) {
    if (times <= 0)
      return sequence.isString() ? Value::string("") : Value::list({});
    if (sequence.isString()) {
      checkSize(sequence.asString().size() * size_t(std::min<int64_t>(times, 1 << 30)));
      std::string out;
      for (int64_t i = 0; i < times; ++i)
        out += sequence.asString();
      return Value::string(out, sequence.isMarkup());
    }
    checkSize(sequence.asList().size() * size_t(std::min<int64_t>(times, 1 << 30)));
    ValueList items;
    for (int64_t i = 0; i < times; ++i)
      items.insert(items.end(), sequence.asList().begin(), sequence.asList().end());
    return Value::list(std::move(items));
  }

  static Value floatArithmetic(const std::string &op, double a, double b) {
    if ((op == "/" || op == "//" || op == "%") && b == 0)
      fail("float division by zero");
    if (op == "+")
      return Value::floating(a + b);
    if (op == "-")
      return Value::floating(a - b);
    if (op == "*")
      return Value::floating(a * b);
    if (op == "/")
      return Value::floating(a / b);
    if (op == "//")
      return Value::floating(std::floor(a / b));
    if (op == "%") {
      double r = std::fmod(a, b);
      return Value::floating(r != 0 && ((r < 0) != (b < 0)) ? r + b : r);
    }
    return Value::floating(std::pow(a, b));
  }

  static Value integerArithmetic(const std::string &op, int64_t a, int64_t b) {
    int64_t result = 0;
    bool overflow = false;
    if (op == "+")
      overflow = __builtin_add_overflow(a, b, &result);
    else if (op == "-")
      overflow = __builtin_sub_overflow(a, b, &result);
    else if (op == "*")
      overflow = __builtin_mul_overflow(a, b, &result);
    else if (op == "//" || op == "%") {
      if (b == 0)
        fail("integer division or modulo by zero");
      if (a == INT64_MIN && b == -1)
        fail("integer overflow");
      int64_t q = a / b, r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) {
        --q;
        r += b;
      }
      result = op == "//" ? q : r;
    } else { // **
      if (b < 0)
        return Value::floating(std::pow(double(a), double(b)));
      result = 1;
      for (int64_t i = 0; i < b && !overflow; ++i)
        overflow = __builtin_mul_overflow(result, a, &result);
    }
    if (overflow)
      fail("integer overflow in '", op, "'");
    return Value::integer(result);
  }

  Value evalCompare(const Expr &expr) {
    Value left = eval(*expr.children[0]);
    for (size_t i = 0; i < expr.ops.size(); ++i) {
      Value right = eval(*expr.children[i + 1]);
      if (!compare(expr.ops[i], left, right))
        return Value::boolean(false);
      left = std::move(right);
    }
    return Value::boolean(true);
  }

  static bool compare(const std::string &op, const Value &left, const Value &right) {
    if (op == "==")
      return valuesEqual(left, right);
    if (op == "!=")
      return !valuesEqual(left, right);
    if (op == "in" || op == "not in") {
      bool found = false;
      if (right.isString()) {
        if (!left.isString())
          fail("'in <string>' requires string as left operand, not ", left.typeName());
        found = right.asString().find(left.asString()) != std::string::npos;
      } else if (right.isMapping()) {
        found = left.isString() && right.asDict().find(left.asString()) != nullptr;
      } else {
        for (const Value &item : iterate(right))
          found = found || valuesEqual(item, left);
      }
      return found == (op == "in");
    }
    if (left.isUndefined())
      failUndefined(left);
    if (right.isUndefined())
      failUndefined(right);
    if (op == "<")
      return valuesLess(left, right);
    if (op == ">")
      return valuesLess(right, left);
    if (op == "<=")
      return !valuesLess(right, left);
    return !valuesLess(left, right); // >=
  }

  const RenderLimits &limits_;
  std::vector<Frame> frames_;
  size_t steps_ = 0;
  int callDepth_ = 0;
};

} // namespace

std::string renderTemplate(const StmtList &body, const ValueDict &variables,
                           const RenderLimits &limits) {
  return Renderer(variables, limits).run(body);
}

} // namespace onnxc::text::chat
