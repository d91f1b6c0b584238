//===- text/chat/Parser.h - Tokens to a template tree ----------------------===//
//
// Recursive descent over jinja2's grammar: the tags here (Parser.cpp), the
// expressions in ExpressionParser. A tag, filter or test outside the subset
// is refused in one line naming it: "chat template line 3: unsupported tag
// 'include'".
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/chat/Ast.h"
#include "text/chat/Lexer.h"

namespace onnxc::text::chat {

/// Parses a whole template; throws Error on malformed or unsupported input.
StmtList parseTemplate(const std::vector<Token> &tokens);

} // namespace onnxc::text::chat
