//===- text/chat/ExpressionParser.h - Tokens to expression trees -----------===//
//
// The expression half of the parser: recursive descent over jinja2's grammar
// with its precedence (conditional expression, or, and, not, comparisons with
// `in` and `not in`, + and -, ~, * / // %, **, unary minus, then attribute,
// item and call postfixes and the filter and `is` test chains), and the
// token cursor the statement half (Parser.cpp) shares.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"
#include "text/chat/Ast.h"
#include "text/chat/Lexer.h"

#include <algorithm>
#include <string>
#include <vector>

namespace onnxc::text::chat {

/// Deeper nesting than this is refused rather than risking the C++ stack.
constexpr int kMaxNesting = 200;

class ExpressionParser {
public:
  explicit ExpressionParser(const std::vector<Token> &tokens) : tokens_(tokens) {}

  /// `a, b` at the top of a print, if or set is a tuple.
  ExprPtr parseTupleOrExpression();
  ExprPtr parseExpression();
  ExprPtr parseOr();

protected:
  const Token &peek(size_t ahead = 0) const {
    return tokens_[std::min(pos_ + ahead, tokens_.size() - 1)];
  }
  const Token &next() {
    const Token &token = peek();
    if (pos_ < tokens_.size() - 1)
      ++pos_;
    return token;
  }
  [[noreturn]] void error(const std::string &problem, int line = 0) const {
    fail("chat template line ", line ? line : peek().line, ": ", problem);
  }
  bool isOperator(const char *op, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Operator && peek(ahead).text == op;
  }
  bool isName(const char *name, size_t ahead = 0) const {
    return peek(ahead).kind == TokenKind::Name && peek(ahead).text == name;
  }
  static std::string describe(const Token &token) {
    switch (token.kind) {
    case TokenKind::End:
      return "end of template";
    case TokenKind::PrintEnd:
      return "'}}'";
    case TokenKind::BlockEnd:
      return "'%}'";
    case TokenKind::String:
      return "a string";
    case TokenKind::Text:
      return "text";
    default:
      return "'" + token.text + "'";
    }
  }
  void expectOperator(const char *op) {
    if (!isOperator(op))
      error(std::string("expected '") + op + "', found " + describe(peek()));
    next();
  }
  std::string expectName(const char *what) {
    if (peek().kind != TokenKind::Name)
      error(std::string("expected ") + what + ", found " + describe(peek()));
    return next().text;
  }
  void expectBlockEnd() {
    if (peek().kind != TokenKind::BlockEnd)
      error("expected '%}', found " + describe(peek()));
    next();
  }
  void enter() {
    if (++depth_ > kMaxNesting)
      error("template nested deeper than 200 levels");
  }

  ExprPtr makeExpr(ExprKind kind, int line);
  /// `name` or `name(args)` applied to `subject`, the `|` already read.
  ExprPtr parseFilter(ExprPtr subject, int line);

  const std::vector<Token> &tokens_;
  size_t pos_ = 0;
  int depth_ = 0;

private:
  ExprPtr binary(ExprKind kind, std::string op, ExprPtr left, ExprPtr right, int line);
  ExprPtr parseAnd();
  ExprPtr parseNot();
  ExprPtr parseCompare();
  ExprPtr parseAdditive();
  ExprPtr parseConcat();
  ExprPtr parseMultiplicative();
  ExprPtr parsePower();
  ExprPtr parseUnary(bool withFilters);
  ExprPtr parsePrimary();
  ExprPtr parseParenthesized();
  ExprPtr parseListLiteral();
  ExprPtr parseDictLiteral();
  ExprPtr parsePostfix(ExprPtr expr);
  ExprPtr parseSubscript(ExprPtr object);
  /// `(args, name=value)` into `expr`'s children (after any already there) and keywords.
  void parseArguments(Expr &expr);
  ExprPtr parseCall(ExprPtr callee);
  ExprPtr parseFiltersAndTests(ExprPtr expr);
  ExprPtr parseTest(ExprPtr subject);
};

} // namespace onnxc::text::chat
