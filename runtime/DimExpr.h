//===- runtime/DimExpr.h - Evaluating symbolic dims of a compiled model ----===//
#pragma once

#include "onnxc/model_abi.h"

#include <cstdint>
#include <optional>

namespace onnxc::runtime {

/// Evaluates a dim expression (see model_abi.h) for the bound symbol values.
/// nullopt if the encoding is malformed (symbol index out of range) or the
/// value overflows int64.
std::optional<int64_t> evaluateDimExpr(onnxc_dim_expr expr, const int64_t *symbols,
                                       int32_t numSymbols);

} // namespace onnxc::runtime
