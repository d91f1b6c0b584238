//===- runtime/DimExpr.cpp - Evaluating symbolic dims of a compiled model --===//
#include "DimExpr.h"

namespace onnxc::runtime {

std::optional<int64_t> evaluateDimExpr(onnxc_dim_expr expr, const int64_t *symbols,
                                       int32_t numSymbols) {
  int64_t numTerms = *expr++;
  int64_t total = 0;
  for (int64_t t = 0; t < numTerms; ++t) {
    int64_t term = *expr++;
    int64_t degree = *expr++;
    for (int64_t d = 0; d < degree; ++d) {
      int64_t symbol = *expr++;
      if (symbol < 0 || symbol >= numSymbols)
        return std::nullopt;
      if (__builtin_mul_overflow(term, symbols[symbol], &term))
        return std::nullopt;
    }
    if (__builtin_add_overflow(total, term, &total))
      return std::nullopt;
  }
  return total;
}

} // namespace onnxc::runtime
