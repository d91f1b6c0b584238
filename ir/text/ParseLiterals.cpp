//===- ir/text/ParseLiterals.cpp - Numbers and dense literals of the text IR ---===//
#include "ir/text/ParseLiterals.h"

#include "ir/ElementTraits.h"
#include "ir/Error.h"

#include <limits>
#include <type_traits>

namespace onnxc {

namespace {

using Kind = IRToken::Kind;

[[noreturn]] void errorAt(const IRLexer &lexer, const IRToken &token, const std::string &message) {
  lexer.error(token.line, token.column, message);
}

/// Stores `value` into element `index` of an integer tensor when its dtype
/// can hold it; false when it cannot.
bool storeIfInRange(Tensor &tensor, int64_t index, int64_t value) {
  if (std::optional<std::pair<double, double>> range = quantizedRange(tensor.dtype());
      range && isFourBit(tensor.dtype())) {
    if (double(value) < range->first || double(value) > range->second)
      return false;
    tensor.setElementFromDouble(index, double(value));
    return true;
  }
  return dispatchDType(tensor.dtype(), [&]<DType D>() {
    using T = typename ElementTraits<D>::Storage;
    if constexpr (std::is_integral_v<T>) {
      if (value < int64_t(std::numeric_limits<T>::min()) ||
          (value >= 0 && uint64_t(value) > uint64_t(std::numeric_limits<T>::max())))
        return false;
      tensor.data<T>()[index] = T(value);
      return true;
    } else {
      return false; // not reached: only integer dtypes are stored here
    }
  });
}

void storeScalar(const IRLexer &lexer, Tensor &tensor, int64_t index, const IRToken &token) {
  DType dtype = tensor.dtype();
  std::string typeName(dtypeName(dtype));
  if (dtype == DType::Bool) {
    if (token.text != "true" && token.text != "false")
      errorAt(lexer, token, "expected 'true' or 'false' in a bool tensor");
    tensor.data<uint8_t>()[index] = token.text == "true";
    return;
  }
  if (isFloat(dtype)) {
    if (token.kind == Kind::Identifier && !isFloatWord(token))
      errorAt(lexer, token, "expected a number in a " + typeName + " tensor");
    if (dtype == DType::F64) {
      double value = 0;
      if (!parseWhole(token.text, value))
        errorAt(lexer, token, "invalid number '" + token.text + "'");
      tensor.data<double>()[index] = value;
      return;
    }
    float value = parseFloatToken(lexer, token);
    if (dtype == DType::F32)
      tensor.data<float>()[index] = value;
    else if (dtype == DType::F16)
      tensor.data<uint16_t>()[index] = floatToHalf(value);
    else
      tensor.data<uint16_t>()[index] = floatToBfloat16(value);
    return;
  }
  if (token.kind != Kind::Integer)
    errorAt(lexer, token, "expected an integer in a " + typeName + " tensor");
  if (dtype == DType::U64) {
    uint64_t value = 0;
    if (!parseWhole(token.text, value))
      errorAt(lexer, token, "value " + token.text + " out of range for u64");
    tensor.data<uint64_t>()[index] = value;
    return;
  }
  int64_t value = 0;
  if (!parseWhole(token.text, value) || !storeIfInRange(tensor, index, value))
    errorAt(lexer, token, "value " + token.text + " out of range for " + typeName);
}

} // namespace

float parseFloatToken(const IRLexer &lexer, const IRToken &token) {
  float value = 0;
  if (parseWhole(token.text, value))
    return value;
  // Out of f32 range (hand-written text): round through double like a cast.
  double wide = 0;
  if (!parseWhole(token.text, wide))
    errorAt(lexer, token, "invalid number '" + token.text + "'");
  return float(wide);
}

Tensor buildTensor(const IRLexer &lexer, const DenseLiteral &literal, const TensorType &type,
                   const IRToken &typeToken) {
  std::optional<std::vector<int64_t>> dims = type.shape.staticDims();
  if (!dims)
    errorAt(lexer, typeToken, "tensor type " + type.str() + " must have constant dimensions");
  for (int64_t d : *dims)
    if (d < 0)
      errorAt(lexer, typeToken, "tensor type " + type.str() + " has a negative dimension");
  Tensor elided;
  try {
    elided = Tensor::elided(type.dtype, *dims);
  } catch (const Error &e) { // too many elements
    errorAt(lexer, typeToken, e.what());
  }
  if (literal.form == DenseLiteral::Form::Elided)
    return elided;
  if (type.dtype == DType::Unknown)
    errorAt(lexer, literal.start, "a tensor of unknown dtype can only be dense<elided>");

  if (literal.form == DenseLiteral::Form::Hex) {
    const std::string &hex = literal.hexDigits;
    if (hex.size() % 2)
      errorAt(lexer, literal.start, "hex literal has an odd number of digits");
    if (hex.size() / 2 != elided.byteSize())
      errorAt(lexer, literal.start,
              "hex literal has " + std::to_string(hex.size() / 2) + " bytes, " + type.str() +
                  " needs " + std::to_string(elided.byteSize()));
    std::vector<uint8_t> bytes(hex.size() / 2);
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = uint8_t(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
    return Tensor::fromBytes(type.dtype, *dims, bytes.data(), bytes.size());
  }

  int64_t count = elided.numElements();
  if (literal.form == DenseLiteral::Form::Scalar && !dims->empty())
    errorAt(lexer, literal.start,
            "a scalar literal needs a rank-0 type, not " + type.str() + "; write a list [...]");
  if (literal.form == DenseLiteral::Form::List && dims->empty())
    errorAt(lexer, literal.start, "a rank-0 type takes a scalar literal, not a list");
  if (int64_t(literal.elements.size()) != count)
    errorAt(lexer, literal.start,
            "literal has " + std::to_string(literal.elements.size()) + " elements, type " +
                type.str() + " needs " + std::to_string(count));
  Tensor tensor(type.dtype, *dims);
  for (int64_t i = 0; i < count; ++i)
    storeScalar(lexer, tensor, i, literal.elements[size_t(i)]);
  return tensor;
}

} // namespace onnxc
