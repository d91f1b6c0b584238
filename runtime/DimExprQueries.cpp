//===- runtime/DimExprQueries.cpp - Structure and text of dim expressions --===//
#include "DimExprQueries.h"

#include <algorithm>

namespace onnxc::runtime {

namespace {

// Far beyond any shape a model has; a larger count means a corrupt encoding
// that would otherwise send the evaluator reading through unrelated memory.
constexpr int64_t kMaxTerms = 1024;
constexpr int64_t kMaxDegree = 32;

} // namespace

bool isWellFormedDimExpr(onnxc_dim_expr expr, int32_t numSymbols) {
  if (!expr)
    return false;
  int64_t numTerms = *expr++;
  if (numTerms < 0 || numTerms > kMaxTerms)
    return false;
  for (int64_t term = 0; term < numTerms; ++term) {
    ++expr; // coefficient
    int64_t degree = *expr++;
    if (degree < 0 || degree > kMaxDegree)
      return false;
    for (int64_t d = 0; d < degree; ++d) {
      int64_t symbol = *expr++;
      if (symbol < 0 || symbol >= numSymbols)
        return false;
    }
  }
  return true;
}

std::optional<int32_t> singleSymbolOf(onnxc_dim_expr expr) {
  if (expr[0] != 1 || expr[1] != 1 || expr[2] != 1)
    return std::nullopt;
  return static_cast<int32_t>(expr[3]);
}

std::vector<int32_t> symbolsOf(onnxc_dim_expr expr) {
  std::vector<int32_t> symbols;
  int64_t numTerms = *expr++;
  for (int64_t term = 0; term < numTerms; ++term) {
    ++expr;
    int64_t degree = *expr++;
    for (int64_t d = 0; d < degree; ++d) {
      auto symbol = static_cast<int32_t>(*expr++);
      if (std::find(symbols.begin(), symbols.end(), symbol) == symbols.end())
        symbols.push_back(symbol);
    }
  }
  return symbols;
}

std::string formatDimExpr(onnxc_dim_expr expr, const char *const *symbolNames) {
  std::string text;
  int64_t numTerms = *expr++;
  for (int64_t term = 0; term < numTerms; ++term) {
    int64_t coefficient = *expr++;
    int64_t degree = *expr++;
    if (term > 0)
      text += coefficient < 0 ? " - " : " + ";
    else if (coefficient < 0)
      text += "-";
    // Negating INT64_MIN would overflow; print its magnitude as unsigned.
    uint64_t magnitude = coefficient < 0 ? 0 - static_cast<uint64_t>(coefficient)
                                         : static_cast<uint64_t>(coefficient);
    bool showCoefficient = magnitude != 1 || degree == 0;
    if (showCoefficient)
      text += std::to_string(magnitude);
    for (int64_t d = 0; d < degree; ++d) {
      if (showCoefficient || d > 0)
        text += "*";
      text += symbolNames[*expr++];
    }
  }
  return text.empty() ? "0" : text;
}

} // namespace onnxc::runtime
