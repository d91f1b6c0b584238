//===- text/chat/Lexer.h - Chat template text to tokens --------------------===//
//
// Splits a template into text and the tokens of its {{ }} and {% %} tags,
// with the whitespace rules of jinja2 3.1 as transformers configures it:
// trim_blocks (the newline after a block tag or comment is dropped),
// lstrip_blocks (spaces and tabs before a block tag on its own line are
// dropped), the `-` and `+` markers on tags, one trailing newline of the
// template dropped, and \r\n or \r read as \n. Comments {# #} vanish;
// {% raw %}...{% endraw %} becomes text.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace onnxc::text::chat {

enum class TokenKind {
  Text,       // template text outside tags
  PrintBegin, // {{
  PrintEnd,   // }}
  BlockBegin, // {%
  BlockEnd,   // %}
  Name,
  String, // the decoded value of a string literal
  Integer,
  Float,
  Operator, // + - * / // % ** ~ == != < <= > >= = . , : | ( ) [ ] { }
  End,      // end of the template
};

struct Token {
  TokenKind kind;
  std::string text;
  int line;
};

/// The tokens of `source`; malformed text throws Error "chat template line N: ...".
std::vector<Token> lexTemplate(std::string_view source);

} // namespace onnxc::text::chat
