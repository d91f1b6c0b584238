//===- runtime/DescriptorCheck.h - Sanity checks of a model descriptor -----===//
//
// A descriptor comes from generated code, possibly from a model.so built by
// another onnxc version; checking it once at session creation means a run
// can index every array without bounds checks and a codegen bug surfaces as
// a message instead of a wild write.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/model_abi.h"

#include <string>

namespace onnxc::runtime {

/// Checks the ABI version and that every index, count, lifetime and dim
/// expression is in range and every symbol source reads a dim that is
/// exactly that symbol. Returns "" if the descriptor is usable, else one line
/// saying what is wrong.
std::string checkDescriptor(const onnxc_model_descriptor *model);

} // namespace onnxc::runtime
