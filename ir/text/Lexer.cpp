//===- ir/text/Lexer.cpp - Tokens of the textual IR ------------------------------===//
#include "ir/text/Lexer.h"

#include "ir/Error.h"

#include <cctype>

namespace onnxc {

namespace {
bool isBareNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.';
}
bool isDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }
int hexDigitValue(char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}
} // namespace

const char *tokenKindName(IRToken::Kind kind) {
  switch (kind) {
  case IRToken::Kind::EndOfFile:
    return "end of input";
  case IRToken::Kind::Identifier:
    return "identifier";
  case IRToken::Kind::ValueName:
    return "value name";
  case IRToken::Kind::GraphName:
    return "graph name";
  case IRToken::Kind::Integer:
    return "integer";
  case IRToken::Kind::Float:
    return "float";
  case IRToken::Kind::Hex:
    return "hex literal";
  case IRToken::Kind::String:
    return "string";
  case IRToken::Kind::LParen:
    return "'('";
  case IRToken::Kind::RParen:
    return "')'";
  case IRToken::Kind::LBrace:
    return "'{'";
  case IRToken::Kind::RBrace:
    return "'}'";
  case IRToken::Kind::LSquare:
    return "'['";
  case IRToken::Kind::RSquare:
    return "']'";
  case IRToken::Kind::Less:
    return "'<'";
  case IRToken::Kind::Greater:
    return "'>'";
  case IRToken::Kind::Comma:
    return "','";
  case IRToken::Kind::Colon:
    return "':'";
  case IRToken::Kind::Equal:
    return "'='";
  case IRToken::Kind::Arrow:
    return "'->'";
  }
  return "token";
}

void IRLexer::error(unsigned line, unsigned column, const std::string &message) const {
  fail(fileName_, ":", line, ":", column, ": ", message);
}

char IRLexer::advance() {
  char c = source_[pos_++];
  if (c == '\n') {
    ++line_;
    column_ = 1;
  } else {
    ++column_;
  }
  return c;
}

void IRLexer::skipWhitespaceAndComments() {
  while (!atEnd()) {
    char c = peekChar();
    if (c == '#') {
      while (!atEnd() && peekChar() != '\n')
        advance();
    } else if (std::isspace(static_cast<unsigned char>(c))) {
      advance();
    } else {
      return;
    }
  }
}

// Reads "..." starting at the opening quote, resolving escapes.
std::string IRLexer::lexQuoted(unsigned line, unsigned column) {
  advance(); // the opening quote
  std::string out;
  while (true) {
    if (atEnd() || peekChar() == '\n')
      error(line, column, "unterminated string");
    char c = advance();
    if (c == '"')
      return out;
    if (c != '\\') {
      out += c;
      continue;
    }
    if (atEnd())
      error(line, column, "unterminated string");
    unsigned escLine = line_, escColumn = column_ - 1;
    char e = advance();
    switch (e) {
    case '"':
      out += '"';
      break;
    case '\\':
      out += '\\';
      break;
    case 'n':
      out += '\n';
      break;
    case 't':
      out += '\t';
      break;
    case 'x': {
      int high = hexDigitValue(peekChar());
      int low = high < 0 ? -1 : hexDigitValue(peekChar(1));
      if (low < 0)
        error(escLine, escColumn, "expected two hex digits after '\\x'");
      advance();
      advance();
      out += char(high * 16 + low);
      break;
    }
    default:
      error(escLine, escColumn, std::string("unknown escape '\\") + e + "' in string");
    }
  }
}

std::string IRLexer::lexBareName() {
  std::string out;
  while (!atEnd() && isBareNameChar(peekChar()))
    out += advance();
  return out;
}

IRToken IRLexer::lexNumber(IRToken token) {
  std::string &text = token.text;
  if (peekChar() == '-')
    text += advance();
  // -inf and -nan: the unsigned spellings are identifiers the parser accepts.
  for (const char *word : {"inf", "nan"}) {
    if (text == "-" && source_.substr(pos_, 3) == word && !isBareNameChar(peekChar(3))) {
      for (int i = 0; i < 3; ++i)
        text += advance();
      token.kind = IRToken::Kind::Float;
      return token;
    }
  }
  if (!isDigit(peekChar()))
    error(token.line, token.column, "expected a number after '-'");
  if (text.empty() && peekChar() == '0' && (peekChar(1) == 'x' || peekChar(1) == 'X')) {
    advance();
    advance();
    while (hexDigitValue(peekChar()) >= 0)
      text += advance();
    token.kind = IRToken::Kind::Hex;
    return token;
  }
  token.kind = IRToken::Kind::Integer;
  while (isDigit(peekChar()))
    text += advance();
  if (peekChar() == '.') {
    token.kind = IRToken::Kind::Float;
    text += advance();
    while (isDigit(peekChar()))
      text += advance();
  }
  if (peekChar() == 'e' || peekChar() == 'E') {
    token.kind = IRToken::Kind::Float;
    text += advance();
    if (peekChar() == '+' || peekChar() == '-')
      text += advance();
    if (!isDigit(peekChar()))
      error(token.line, token.column, "expected digits in the exponent of '" + text + "'");
    while (isDigit(peekChar()))
      text += advance();
  }
  if (isBareNameChar(peekChar()))
    error(line_, column_, std::string("unexpected '") + peekChar() + "' after number");
  return token;
}

IRToken IRLexer::next() {
  skipWhitespaceAndComments();
  IRToken token;
  token.line = line_;
  token.column = column_;
  if (atEnd())
    return token;

  auto single = [&](IRToken::Kind kind) {
    advance();
    token.kind = kind;
    return token;
  };
  char c = peekChar();
  switch (c) {
  case '(':
    return single(IRToken::Kind::LParen);
  case ')':
    return single(IRToken::Kind::RParen);
  case '{':
    return single(IRToken::Kind::LBrace);
  case '}':
    return single(IRToken::Kind::RBrace);
  case '[':
    return single(IRToken::Kind::LSquare);
  case ']':
    return single(IRToken::Kind::RSquare);
  case '<':
    return single(IRToken::Kind::Less);
  case '>':
    return single(IRToken::Kind::Greater);
  case ',':
    return single(IRToken::Kind::Comma);
  case ':':
    return single(IRToken::Kind::Colon);
  case '=':
    return single(IRToken::Kind::Equal);
  case '"':
    token.kind = IRToken::Kind::String;
    token.text = lexQuoted(token.line, token.column);
    return token;
  case '%':
  case '@': {
    advance();
    token.kind = c == '%' ? IRToken::Kind::ValueName : IRToken::Kind::GraphName;
    if (peekChar() == '"')
      token.text = lexQuoted(line_, column_);
    else if (isBareNameChar(peekChar()))
      token.text = lexBareName();
    else
      error(token.line, token.column, std::string("expected a name after '") + c + "'");
    return token;
  }
  default:
    break;
  }
  if (c == '-' && peekChar(1) == '>') {
    advance();
    return single(IRToken::Kind::Arrow);
  }
  if (c == '-' || isDigit(c))
    return lexNumber(std::move(token));
  if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
    token.kind = IRToken::Kind::Identifier;
    token.text = lexBareName();
    return token;
  }
  if (std::isprint(static_cast<unsigned char>(c)))
    error(token.line, token.column, std::string("unexpected character '") + c + "'");
  error(token.line, token.column, "unexpected byte in input");
}

std::string IRLexer::rawUntilClosingSquare() {
  unsigned startLine = line_, startColumn = column_;
  std::string out;
  int depth = 0;
  while (true) {
    if (atEnd())
      error(startLine, startColumn, "expected ']'");
    char c = peekChar();
    if (c == ']' && depth == 0) {
      advance();
      return out;
    }
    // Dims never span lines or hold these; stopping here gives a sane
    // position for a forgotten ']'.
    if (c == '\n' || c == '{' || c == '}' || c == '=' || (c == ')' && depth == 0))
      error(line_, column_, "expected ']'");
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    out += advance();
  }
}

} // namespace onnxc
