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
  if (onnxc_dim_num_terms(expr) != 1)
    return std::nullopt;
  onnxc_dim_term term = DimTerms(expr).next();
  if (term.coefficient != 1 || term.degree != 1)
    return std::nullopt;
  return static_cast<int32_t>(term.symbols[0]);
}

std::vector<int32_t> symbolsOf(onnxc_dim_expr expr) {
  std::vector<int32_t> symbols;
  for (DimTerms terms(expr); !terms.done();) {
    onnxc_dim_term term = terms.next();
    for (int32_t d = 0; d < term.degree; ++d) {
      auto symbol = static_cast<int32_t>(term.symbols[d]);
      if (std::find(symbols.begin(), symbols.end(), symbol) == symbols.end())
        symbols.push_back(symbol);
    }
  }
  return symbols;
}

std::string formatDimExpr(onnxc_dim_expr expr, const char *const *symbolNames) {
  std::string text;
  bool first = true;
  for (DimTerms terms(expr); !terms.done(); first = false) {
    onnxc_dim_term term = terms.next();
    if (!first)
      text += term.coefficient < 0 ? " - " : " + ";
    else if (term.coefficient < 0)
      text += "-";
    // Negating INT64_MIN would overflow; print its magnitude as unsigned.
    uint64_t magnitude = term.coefficient < 0 ? 0 - static_cast<uint64_t>(term.coefficient)
                                              : static_cast<uint64_t>(term.coefficient);
    bool showCoefficient = magnitude != 1 || term.degree == 0;
    if (showCoefficient)
      text += std::to_string(magnitude);
    for (int32_t d = 0; d < term.degree; ++d) {
      if (showCoefficient || d > 0)
        text += "*";
      text += symbolNames[term.symbols[d]];
    }
  }
  return text.empty() ? "0" : text;
}

} // namespace onnxc::runtime
