//===- ir/text/ParseLiterals.h - Numbers and dense literals of the text IR -----===//
//
// Internal to the IR parser. The parser reads the tokens; these turn number
// tokens, and the tokens of a `dense<...>` literal once its type is known,
// into values. Errors go through the lexer, so they read
// `FILE:LINE:COL: message` like every other parse error.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Tensor.h"
#include "ir/shape/Shape.h"
#include "ir/text/Lexer.h"

#include <charconv>
#include <string>
#include <vector>

namespace onnxc {

/// The text between `dense<` and `>`, kept until the type it must match is
/// known (for tensor attributes the type follows the literal).
struct DenseLiteral {
  enum class Form { Elided, Hex, Scalar, List } form = Form::Elided;
  IRToken start;                 // for error positions
  std::vector<IRToken> elements; // Scalar: one; List: any number
  std::string hexDigits;
};

/// The identifiers `inf` and `nan` (signed forms lex as Float tokens).
inline bool isFloatWord(const IRToken &token) {
  return token.kind == IRToken::Kind::Identifier && (token.text == "inf" || token.text == "nan");
}

/// Parses all of `text` as a T; false when it is not one or is out of range.
template <typename T> bool parseWhole(const std::string &text, T &out) {
  const char *end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return ec == std::errc() && ptr == end;
}

/// A number token as f32; values beyond the f32 range round through double,
/// as a cast would.
float parseFloatToken(const IRLexer &lexer, const IRToken &token);

/// The tensor `literal` spells for `type`, checking the element count, the
/// literal's form against the rank, and each element against the dtype.
/// `typeToken` positions errors about the type itself.
Tensor buildTensor(const IRLexer &lexer, const DenseLiteral &literal, const TensorType &type,
                   const IRToken &typeToken);

} // namespace onnxc
