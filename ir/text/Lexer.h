//===- ir/text/Lexer.h - Tokens of the textual IR --------------------------------===//
//
// Internal to the IR parser. Splits text-IR source into tokens, tracking the
// line and column of each so the parser can report `FILE:LINE:COL: message`.
// Tensor dimensions are not tokenized: the parser asks for the raw text up
// to the closing ']' and hands each comma-separated piece to Dim::parse.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace onnxc {

struct IRToken {
  enum class Kind {
    EndOfFile,
    Identifier, // graph, const, f32, Add, axis, _, inf, ...
    ValueName,  // %name or %"quoted name"; text holds the unescaped name
    GraphName,  // @name or @"quoted name"
    Integer,    // -?[0-9]+
    Float,      // -?[0-9]+ with '.' or exponent, or -inf / -nan
    Hex,        // 0x[0-9a-fA-F]*; text holds the digits only
    String,     // "..."; text holds the unescaped contents
    LParen,
    RParen,
    LBrace,
    RBrace,
    LSquare,
    RSquare,
    Less,
    Greater,
    Comma,
    Colon,
    Equal,
    Arrow,
  };

  Kind kind = Kind::EndOfFile;
  std::string text;
  unsigned line = 1, column = 1;
};

/// A one-token-at-a-time lexer. Errors (bad characters, unterminated
/// strings, bad escapes) throw onnxc::Error with the file position.
class IRLexer {
public:
  IRLexer(std::string_view source, std::string fileName)
      : source_(source), fileName_(std::move(fileName)) {}

  /// Reads the next token.
  IRToken next();

  /// Returns the raw source text from the current position up to (not
  /// including) the ']' that closes an already consumed '[', and moves past
  /// that ']'. Parentheses nest; ']' inside them does not close.
  std::string rawUntilClosingSquare();

  /// Throws onnxc::Error "FILE:LINE:COL: message".
  [[noreturn]] void error(unsigned line, unsigned column, const std::string &message) const;

  unsigned line() const { return line_; }
  unsigned column() const { return column_; }

private:
  bool atEnd() const { return pos_ >= source_.size(); }
  char peekChar(size_t ahead = 0) const {
    return pos_ + ahead < source_.size() ? source_[pos_ + ahead] : '\0';
  }
  char advance();
  void skipWhitespaceAndComments();
  std::string lexQuoted(unsigned line, unsigned column);
  std::string lexBareName();
  IRToken lexNumber(IRToken token);

  std::string_view source_;
  std::string fileName_;
  size_t pos_ = 0;
  unsigned line_ = 1, column_ = 1;
};

/// Spelling of a token kind for "expected X" messages.
const char *tokenKindName(IRToken::Kind kind);

} // namespace onnxc
