//===- runtime/InputBinding.h - Checking inputs and binding symbols --------===//
//
// The only place a run learns its shapes: each symbol takes the value of the
// input axis the descriptor names as its source, and every other input dim
// is then checked against its expression, so that kernels, which trust the
// symbols blindly, never see an inconsistent shape.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc.h"

#include <cstdint>
#include <string>

namespace onnxc::runtime {

/// Checks the inputs' count (naming the missing ones), data pointers,
/// dtypes, ranks, sizes (when size_bytes is set) and dims against a checked
/// descriptor and writes the symbol values into `symbols` (num_symbols
/// entries). A cache capacity symbol (onnxc_cache_pair) takes
/// `cacheCapacity`, or with 0 the length of its pair's present; a paired
/// input that says its size_bytes must hold the capacity's layout. Returns ""
/// on success, else one line naming the input at fault.
std::string bindInputs(const onnxc_model_descriptor &model, const onnxc_tensor *inputs,
                       int32_t numInputs, int64_t *symbols, int64_t cacheCapacity = 0);

} // namespace onnxc::runtime
