//===- runtime/DimExprQueries.h - Structure and text of dim expressions ----===//
//
// The evaluator (DimExpr.h) trusts its encoding; these helpers let session
// creation reject a malformed one up front, and let run-time messages show
// an expression the way the model author wrote it ("2*seq + 1").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/model_abi.h"
#include "onnxc/model_info.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::runtime {

/// Walks the terms of a well-formed dim expression: the one reader of
/// model_abi.h's word layout (numTerms, then coefficient, degree, symbols
/// per term), used by the evaluator, the queries below and the public C API.
class DimTerms {
public:
  explicit DimTerms(onnxc_dim_expr expr) : remaining_(expr[0]), next_(expr + 1) {}
  bool done() const { return remaining_ <= 0; }
  /// The next term; only while !done().
  onnxc_dim_term next() {
    onnxc_dim_term term{next_[0], static_cast<int32_t>(next_[1]), next_ + 2};
    next_ += 2 + term.degree;
    --remaining_;
    return term;
  }

private:
  int64_t remaining_;
  const int64_t *next_;
};

/// Whether `expr` is non-null, has plausible term counts and degrees, and
/// only names symbols in [0, numSymbols).
bool isWellFormedDimExpr(onnxc_dim_expr expr, int32_t numSymbols);

/// The symbol index if `expr` is exactly one symbol (1*s), else nullopt.
std::optional<int32_t> singleSymbolOf(onnxc_dim_expr expr);

/// The distinct symbols `expr` mentions, in first-use order.
std::vector<int32_t> symbolsOf(onnxc_dim_expr expr);

/// Whether `expr` mentions no symbol at all.
inline bool isConstantDimExpr(onnxc_dim_expr expr) { return symbolsOf(expr).empty(); }

/// Renders `expr` with symbol names, e.g. "batch*seq*64 + 1"; "0" if empty.
std::string formatDimExpr(onnxc_dim_expr expr, const char *const *symbolNames);

} // namespace onnxc::runtime
