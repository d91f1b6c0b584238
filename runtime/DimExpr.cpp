//===- runtime/DimExpr.cpp - Evaluating symbolic dims of a compiled model --===//
#include "DimExpr.h"

#include "DimExprQueries.h"

namespace onnxc::runtime {

std::optional<int64_t> evaluateDimExpr(onnxc_dim_expr expr, const int64_t *symbols,
                                       int32_t numSymbols) {
  int64_t total = 0;
  for (DimTerms terms(expr); !terms.done();) {
    onnxc_dim_term term = terms.next();
    int64_t product = term.coefficient;
    for (int32_t d = 0; d < term.degree; ++d) {
      int64_t symbol = term.symbols[d];
      if (symbol < 0 || symbol >= numSymbols)
        return std::nullopt;
      if (__builtin_mul_overflow(product, symbols[symbol], &product))
        return std::nullopt;
    }
    if (__builtin_add_overflow(total, product, &total))
      return std::nullopt;
  }
  return total;
}

} // namespace onnxc::runtime
