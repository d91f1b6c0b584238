//===- codegen/artifact/DimEncoding.h - ir::Dim -> the ABI's dim expression words -===//
#pragma once

#include "ir/shape/Dim.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace onnxc {

/// Encodes a known dimension as the word list of model_abi.h (numTerms, then
/// coefficient, degree, symbol indices per term), numbering symbols through
/// `symbolIndex`. Throws onnxc::Error for unknown dims or unnumbered symbols.
std::vector<int64_t> encodeDim(const Dim &dim, const std::map<std::string, int32_t> &symbolIndex);

} // namespace onnxc
