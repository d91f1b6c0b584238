//===- text/chat/ExpressionParser.cpp - Tokens to expression trees ---------===//
#include "text/chat/ExpressionParser.h"

#include "text/chat/Builtins.h"

#include <cerrno>
#include <cstdlib>

namespace onnxc::text::chat {

ExprPtr ExpressionParser::makeExpr(ExprKind kind, int line) {
  auto expr = std::make_unique<Expr>();
  expr->kind = kind;
  expr->line = line;
  return expr;
}

ExprPtr ExpressionParser::binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right,
                                 int line) {
  ExprPtr expr = makeExpr(kind, line);
  expr->name = std::move(op);
  expr->children.push_back(std::move(left));
  expr->children.push_back(std::move(right));
  return expr;
}

/// `a, b` at the top of a print, if or set is a tuple.
ExprPtr ExpressionParser::parseTupleOrExpression() {
  int line = peek().line;
  ExprPtr first = parseExpression();
  if (!isOperator(","))
    return first;
  ExprPtr tuple = makeExpr(ExprKind::List, line);
  tuple->children.push_back(std::move(first));
  while (isOperator(",")) {
    next();
    tuple->children.push_back(parseExpression());
  }
  return tuple;
}

ExprPtr ExpressionParser::parseExpression() {
  enter();
  int line = peek().line;
  ExprPtr expr = parseOr();
  while (isName("if")) {
    next();
    ExprPtr condition = parseOr();
    ExprPtr otherwise;
    if (isName("else")) {
      next();
      otherwise = parseExpression();
    }
    ExprPtr conditional = makeExpr(ExprKind::Condition, line);
    conditional->children.push_back(std::move(condition));
    conditional->children.push_back(std::move(expr));
    conditional->children.push_back(std::move(otherwise));
    expr = std::move(conditional);
  }
  --depth_;
  return expr;
}

ExprPtr ExpressionParser::parseOr() {
  ExprPtr left = parseAnd();
  while (isName("or")) {
    int line = next().line;
    left = binary(ExprKind::Binary, "or", std::move(left), parseAnd(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parseAnd() {
  ExprPtr left = parseNot();
  while (isName("and")) {
    int line = next().line;
    left = binary(ExprKind::Binary, "and", std::move(left), parseNot(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parseNot() {
  if (isName("not")) {
    int line = next().line;
    enter();
    ExprPtr expr = makeExpr(ExprKind::Unary, line);
    expr->name = "not";
    expr->children.push_back(parseNot());
    --depth_;
    return expr;
  }
  return parseCompare();
}

ExprPtr ExpressionParser::parseCompare() {
  int line = peek().line;
  ExprPtr first = parseAdditive();
  ExprPtr compare;
  static const char *const ops[] = {"==", "!=", "<", "<=", ">", ">="};
  while (true) {
    std::string op;
    for (const char *candidate : ops)
      if (isOperator(candidate))
        op = candidate;
    if (op.empty() && isName("in"))
      op = "in";
    else if (op.empty() && isName("not") && isName("in", 1))
      op = "not in";
    if (op.empty())
      break;
    next();
    if (op == "not in")
      next();
    if (!compare) {
      compare = makeExpr(ExprKind::Compare, line);
      compare->children.push_back(std::move(first));
    }
    compare->ops.push_back(op);
    compare->children.push_back(parseAdditive());
  }
  return compare ? std::move(compare) : std::move(first);
}

ExprPtr ExpressionParser::parseAdditive() {
  ExprPtr left = parseConcat();
  while (isOperator("+") || isOperator("-")) {
    const Token &op = next();
    left = binary(ExprKind::Binary, op.text, std::move(left), parseConcat(), op.line);
  }
  return left;
}

ExprPtr ExpressionParser::parseConcat() {
  ExprPtr left = parseMultiplicative();
  while (isOperator("~")) {
    int line = next().line;
    left = binary(ExprKind::Binary, "~", std::move(left), parseMultiplicative(), line);
  }
  return left;
}

ExprPtr ExpressionParser::parseMultiplicative() {
  ExprPtr left = parsePower();
  while (isOperator("*") || isOperator("/") || isOperator("//") || isOperator("%")) {
    const Token &op = next();
    left = binary(ExprKind::Binary, op.text, std::move(left), parsePower(), op.line);
  }
  return left;
}

ExprPtr ExpressionParser::parsePower() {
  ExprPtr left = parseUnary(true);
  while (isOperator("**")) {
    int line = next().line;
    left = binary(ExprKind::Binary, "**", std::move(left), parseUnary(true), line);
  }
  return left;
}

ExprPtr ExpressionParser::parseUnary(bool withFilters) {
  enter();
  ExprPtr expr;
  if (isOperator("-") || isOperator("+")) {
    const Token &op = next();
    expr = makeExpr(ExprKind::Unary, op.line);
    expr->name = op.text;
    expr->children.push_back(parseUnary(false));
  } else {
    expr = parsePrimary();
  }
  expr = parsePostfix(std::move(expr));
  if (withFilters)
    expr = parseFiltersAndTests(std::move(expr));
  --depth_;
  return expr;
}

ExprPtr ExpressionParser::parsePrimary() {
  const Token &token = peek();
  int line = token.line;
  switch (token.kind) {
  case TokenKind::Name: {
    next();
    ExprPtr expr = makeExpr(ExprKind::Literal, line);
    const std::string &name = token.text;
    if (name == "true" || name == "True")
      expr->value = Value::boolean(true);
    else if (name == "false" || name == "False")
      expr->value = Value::boolean(false);
    else if (name == "none" || name == "None")
      expr->value = Value::none();
    else {
      expr->kind = ExprKind::Name;
      expr->name = name;
    }
    return expr;
  }
  case TokenKind::String: {
    std::string text;
    while (peek().kind == TokenKind::String)
      text += next().text; // adjacent literals join, as in Python
    ExprPtr expr = makeExpr(ExprKind::Literal, line);
    expr->value = Value::string(std::move(text));
    return expr;
  }
  case TokenKind::Integer: {
    next();
    errno = 0;
    long long value = std::strtoll(token.text.c_str(), nullptr, 10);
    if (errno == ERANGE)
      error("integer literal " + token.text + " does not fit in 64 bits", line);
    ExprPtr expr = makeExpr(ExprKind::Literal, line);
    expr->value = Value::integer(value);
    return expr;
  }
  case TokenKind::Float: {
    next();
    ExprPtr expr = makeExpr(ExprKind::Literal, line);
    expr->value = Value::floating(std::strtod(token.text.c_str(), nullptr));
    return expr;
  }
  default:
    break;
  }
  if (isOperator("("))
    return parseParenthesized();
  if (isOperator("["))
    return parseListLiteral();
  if (isOperator("{"))
    return parseDictLiteral();
  error("unexpected " + describe(token));
}

ExprPtr ExpressionParser::parseParenthesized() {
  int line = next().line;
  if (isOperator(")")) {
    next();
    return makeExpr(ExprKind::List, line); // ()
  }
  ExprPtr first = parseExpression();
  if (!isOperator(",")) {
    expectOperator(")");
    return first;
  }
  ExprPtr tuple = makeExpr(ExprKind::List, line);
  tuple->children.push_back(std::move(first));
  while (isOperator(",")) {
    next();
    if (isOperator(")"))
      break;
    tuple->children.push_back(parseExpression());
  }
  expectOperator(")");
  return tuple;
}

ExprPtr ExpressionParser::parseListLiteral() {
  ExprPtr list = makeExpr(ExprKind::List, next().line);
  while (!isOperator("]")) {
    if (!list->children.empty())
      expectOperator(",");
    if (isOperator("]"))
      break;
    list->children.push_back(parseExpression());
  }
  next();
  return list;
}

ExprPtr ExpressionParser::parseDictLiteral() {
  ExprPtr dict = makeExpr(ExprKind::Dict, next().line);
  while (!isOperator("}")) {
    if (!dict->keywords.empty())
      expectOperator(",");
    if (isOperator("}"))
      break;
    int line = peek().line;
    ExprPtr key = parseExpression();
    if (key->kind != ExprKind::Literal || !key->value.isString())
      error("dict keys must be string literals", line);
    expectOperator(":");
    dict->keywords.emplace_back(key->value.asString(), parseExpression());
  }
  next();
  return dict;
}

ExprPtr ExpressionParser::parsePostfix(ExprPtr expr) {
  while (true) {
    if (isOperator(".")) {
      int line = next().line;
      if (peek().kind == TokenKind::Integer) {
        ExprPtr index = makeExpr(ExprKind::Literal, line);
        index->value = Value::integer(std::strtoll(next().text.c_str(), nullptr, 10));
        expr = binary(ExprKind::Item, "", std::move(expr), std::move(index), line);
        continue;
      }
      ExprPtr attribute = makeExpr(ExprKind::Attribute, line);
      attribute->name = expectName("an attribute name");
      attribute->children.push_back(std::move(expr));
      expr = std::move(attribute);
    } else if (isOperator("[")) {
      expr = parseSubscript(std::move(expr));
    } else if (isOperator("(")) {
      expr = parseCall(std::move(expr));
    } else {
      return expr;
    }
  }
}

ExprPtr ExpressionParser::parseSubscript(ExprPtr object) {
  int line = next().line;
  ExprPtr parts[3];
  if (!isOperator(":")) {
    parts[0] = parseExpression();
    if (isOperator("]")) {
      next();
      return binary(ExprKind::Item, "", std::move(object), std::move(parts[0]), line);
    }
    if (isOperator(","))
      error("unsupported tuple subscript", line);
  }
  expectOperator(":");
  if (!isOperator("]") && !isOperator(":"))
    parts[1] = parseExpression();
  if (isOperator(":")) {
    next();
    if (!isOperator("]"))
      parts[2] = parseExpression();
  }
  expectOperator("]");
  ExprPtr slice = makeExpr(ExprKind::Slice, line);
  slice->children.push_back(std::move(object));
  for (ExprPtr &part : parts)
    slice->children.push_back(std::move(part));
  return slice;
}

/// `(args, name=value)` into `expr`'s children (after any already there) and keywords.
void ExpressionParser::parseArguments(Expr &expr) {
  expectOperator("(");
  bool first = true;
  while (!isOperator(")")) {
    if (!first)
      expectOperator(",");
    first = false;
    if (isOperator(")"))
      break;
    if (isOperator("*") || isOperator("**"))
      error("unsupported * or ** arguments");
    if (peek().kind == TokenKind::Name && isOperator("=", 1)) {
      std::string name = next().text;
      next();
      expr.keywords.emplace_back(name, parseExpression());
    } else {
      if (!expr.keywords.empty())
        error("positional argument after a keyword argument");
      expr.children.push_back(parseExpression());
    }
  }
  next();
}

ExprPtr ExpressionParser::parseCall(ExprPtr callee) {
  ExprPtr call = makeExpr(ExprKind::Call, peek().line);
  call->children.push_back(std::move(callee));
  parseArguments(*call);
  return call;
}

ExprPtr ExpressionParser::parseFilter(ExprPtr subject, int line) {
  ExprPtr filter = makeExpr(ExprKind::Filter, line);
  filter->name = expectName("a filter name");
  if (!isKnownFilter(filter->name))
    error("unknown filter '" + filter->name + "'", line);
  filter->children.push_back(std::move(subject));
  if (isOperator("("))
    parseArguments(*filter);
  return filter;
}

ExprPtr ExpressionParser::parseFiltersAndTests(ExprPtr expr) {
  while (true) {
    if (isOperator("|")) {
      int line = next().line;
      expr = parseFilter(std::move(expr), line);
    } else if (isName("is")) {
      expr = parseTest(std::move(expr));
    } else if (isOperator("(")) {
      expr = parseCall(std::move(expr));
    } else {
      return expr;
    }
  }
}

ExprPtr ExpressionParser::parseTest(ExprPtr subject) {
  int line = next().line;
  ExprPtr test = makeExpr(ExprKind::Test, line);
  if (isName("not")) {
    next();
    test->negated = true;
  }
  test->name = expectName("a test name");
  if (!isKnownTest(test->name))
    error("unknown test '" + test->name + "'", line);
  test->children.push_back(std::move(subject));
  const Token &after = peek();
  bool argumentStart = after.kind == TokenKind::Name || after.kind == TokenKind::String ||
                       after.kind == TokenKind::Integer || after.kind == TokenKind::Float ||
                       isOperator("[") || isOperator("{");
  if (isOperator("(")) {
    parseArguments(*test);
  } else if (argumentStart && !isName("else") && !isName("or") && !isName("and")) {
    if (isName("is"))
      error("tests cannot be chained with 'is'");
    test->children.push_back(parsePostfix(parsePrimary()));
  }
  return test;
}

} // namespace onnxc::text::chat
