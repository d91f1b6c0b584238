//===- runtime/generate/GeneratorLength.h - How long a sequence the model holds -===//
//
// A decoder's graph often bounds the sequence it can run: GPT-2 slices its
// 1,024-row position table at past + seq, and shape inference recorded that
// as an assumption the runtime checks when inputs are bound. A generation
// asked for more would fail only at the step that crosses the bound, after
// all the work before it. The generator checks the bound before the first
// step instead, and says how many new tokens fit.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "GeneratorRoles.h"
#include "onnxc/model_abi.h"

#include <cstdint>
#include <string>

namespace onnxc::runtime {

/// Why `model` cannot run a generation laid out for `capacity` positions
/// after a prompt of `promptLength` (one of its assumptions over sequence
/// lengths breaks on the way), with the most new tokens that fit, or (for a
/// capacity set by the caller: `newTokens` < 0) the most positions; empty
/// when it can. Assumptions over other symbols (an encoder's length) are
/// checked when the steps bind their inputs, as before.
std::string checkSequenceLength(const onnxc_model_descriptor &model, const GeneratorRoles &roles,
                                int64_t promptLength, int64_t newTokens, int64_t capacity);

} // namespace onnxc::runtime
