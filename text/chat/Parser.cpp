//===- text/chat/Parser.cpp - Tokens to a template tree --------------------===//
#include "text/chat/Parser.h"

#include "ir/Error.h"
#include "text/chat/ExpressionParser.h"

#include <algorithm>

namespace onnxc::text::chat {
namespace {

/// Tags of jinja2 that chat templates do not use and onnxc does not implement.
const char *const kUnsupportedTags[] = {"include", "extends", "block",    "import",
                                        "from",    "with",    "call",     "autoescape",
                                        "do",      "trans",   "pluralize"};

class Parser : public ExpressionParser {
public:
  using ExpressionParser::ExpressionParser;

  StmtList parseAll() {
    std::string endedBy;
    StmtList body = parseBody({}, endedBy);
    return body;
  }

private:
  static StmtPtr makeStmt(StmtKind kind, int line) {
    auto stmt = std::make_unique<Stmt>();
    stmt->kind = kind;
    stmt->line = line;
    return stmt;
  }

  /// Statements until `{% NAME` with NAME in `ends` (consumed, its name in `endedBy`).
  StmtList parseBody(const std::vector<std::string> &ends, std::string &endedBy) {
    enter();
    StmtList body;
    while (true) {
      const Token &token = peek();
      if (token.kind == TokenKind::End) {
        if (!ends.empty())
          error("missing '{% " + ends.back() + " %}'");
        break;
      }
      if (token.kind == TokenKind::Text) {
        auto stmt = makeStmt(StmtKind::Text, token.line);
        stmt->text = next().text;
        body.push_back(std::move(stmt));
      } else if (token.kind == TokenKind::PrintBegin) {
        next();
        auto stmt = makeStmt(StmtKind::Print, token.line);
        stmt->expr = parseTupleOrExpression();
        if (peek().kind != TokenKind::PrintEnd)
          error("expected '}}', found " + describe(peek()));
        next();
        body.push_back(std::move(stmt));
      } else {
        next(); // {%
        if (peek().kind == TokenKind::Name &&
            std::find(ends.begin(), ends.end(), peek().text) != ends.end()) {
          endedBy = next().text;
          break;
        }
        body.push_back(parseStatement());
      }
    }
    --depth_;
    return body;
  }

  StmtPtr parseStatement() {
    int line = peek().line;
    std::string tag = expectName("a tag name");
    if (tag == "for")
      return parseFor(line);
    if (tag == "if")
      return parseIf(line);
    if (tag == "set")
      return parseSet(line);
    if (tag == "macro")
      return parseMacro(line);
    if (tag == "filter")
      return parseFilterBlock(line);
    if (tag == "break" || tag == "continue") {
      expectBlockEnd();
      return makeStmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, line);
    }
    if (tag == "generation") {
      // transformers' AssistantTracker tag: renders its body in place.
      expectBlockEnd();
      auto stmt = makeStmt(StmtKind::Body, line);
      std::string endedBy;
      stmt->bodies.push_back(parseBody({"endgeneration"}, endedBy));
      expectBlockEnd();
      return stmt;
    }
    for (const char *unsupported : kUnsupportedTags)
      if (tag == unsupported)
        error("unsupported tag '" + tag + "'", line);
    if (tag.rfind("end", 0) == 0 || tag == "else" || tag == "elif")
      error("unexpected '" + tag + "'", line);
    error("unknown tag '" + tag + "'", line);
  }

  StmtPtr parseFor(int line) {
    auto stmt = makeStmt(StmtKind::For, line);
    stmt->targets.push_back(expectName("a loop variable"));
    while (isOperator(",")) {
      next();
      stmt->targets.push_back(expectName("a loop variable"));
    }
    if (!isName("in"))
      error("expected 'in', found " + describe(peek()));
    next();
    stmt->expr = parseOr(); // no conditional: an `if` here filters the loop
    if (isOperator(",")) {
      std::vector<ExprPtr> items;
      items.push_back(std::move(stmt->expr));
      while (isOperator(",")) {
        next();
        items.push_back(parseOr());
      }
      ExprPtr tuple = makeExpr(ExprKind::List, line);
      tuple->children = std::move(items);
      stmt->expr = std::move(tuple);
    }
    if (isName("if")) {
      next();
      stmt->filter = parseExpression();
    }
    if (isName("recursive"))
      error("unsupported recursive loops");
    expectBlockEnd();
    std::string endedBy;
    stmt->bodies.push_back(parseBody({"else", "endfor"}, endedBy));
    expectBlockEnd();
    if (endedBy == "else") {
      stmt->bodies.push_back(parseBody({"endfor"}, endedBy));
      expectBlockEnd();
    }
    return stmt;
  }

  StmtPtr parseIf(int line) {
    auto stmt = makeStmt(StmtKind::If, line);
    stmt->conditions.push_back(parseTupleOrExpression());
    expectBlockEnd();
    while (true) {
      std::string endedBy;
      stmt->bodies.push_back(parseBody({"elif", "else", "endif"}, endedBy));
      if (endedBy == "elif") {
        stmt->conditions.push_back(parseTupleOrExpression());
        expectBlockEnd();
        continue;
      }
      expectBlockEnd();
      if (endedBy == "else") {
        stmt->bodies.push_back(parseBody({"endif"}, endedBy));
        expectBlockEnd();
      }
      return stmt;
    }
  }

  StmtPtr parseSet(int line) {
    auto stmt = makeStmt(StmtKind::Set, line);
    stmt->targets.push_back(expectName("a variable name"));
    if (isOperator(".")) {
      next();
      stmt->attribute = expectName("an attribute name");
    }
    while (isOperator(",") && stmt->attribute.empty()) {
      next();
      stmt->targets.push_back(expectName("a variable name"));
    }
    if (isOperator("=")) {
      next();
      stmt->expr = parseTupleOrExpression();
      expectBlockEnd();
      return stmt;
    }
    if (stmt->targets.size() != 1 || !stmt->attribute.empty())
      error("expected '=', found " + describe(peek()));
    if (isOperator("|"))
      error("unsupported filter on a block set");
    expectBlockEnd();
    stmt->kind = StmtKind::SetBlock;
    std::string endedBy;
    stmt->bodies.push_back(parseBody({"endset"}, endedBy));
    expectBlockEnd();
    return stmt;
  }

  /// {% filter a(args)|b %}body{% endfilter %}: the filters applied to the body's text, which
  /// stands in the chain as a literal placeholder.
  StmtPtr parseFilterBlock(int line) {
    StmtPtr stmt = makeStmt(StmtKind::FilterBlock, line);
    ExprPtr chain = parseFilter(makeExpr(ExprKind::Literal, line), line);
    while (isOperator("|")) {
      int filterLine = next().line;
      chain = parseFilter(std::move(chain), filterLine);
    }
    stmt->expr = std::move(chain);
    expectBlockEnd();
    std::string endedBy;
    stmt->bodies.push_back(parseBody({"endfilter"}, endedBy));
    expectBlockEnd();
    return stmt;
  }

  StmtPtr parseMacro(int line) {
    auto stmt = makeStmt(StmtKind::Macro, line);
    stmt->text = expectName("a macro name");
    expectOperator("(");
    while (!isOperator(")")) {
      if (!stmt->targets.empty())
        expectOperator(",");
      if (isOperator(")"))
        break;
      stmt->targets.push_back(expectName("a parameter name"));
      ExprPtr fallback;
      if (isOperator("=")) {
        next();
        fallback = parseExpression();
      }
      stmt->conditions.push_back(std::move(fallback));
    }
    next();
    expectBlockEnd();
    std::string endedBy;
    stmt->bodies.push_back(parseBody({"endmacro"}, endedBy));
    if (peek().kind == TokenKind::Name && peek().text == stmt->text)
      next(); // {% endmacro name %}
    expectBlockEnd();
    return stmt;
  }
};

} // namespace

StmtList parseTemplate(const std::vector<Token> &tokens) { return Parser(tokens).parseAll(); }

} // namespace onnxc::text::chat
