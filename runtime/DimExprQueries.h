//===- runtime/DimExprQueries.h - Structure and text of dim expressions ----===//
//
// The evaluator (DimExpr.h) trusts its encoding; these helpers let session
// creation reject a malformed one up front, and let run-time messages show
// an expression the way the model author wrote it ("2*seq + 1").
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/model_abi.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::runtime {

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
