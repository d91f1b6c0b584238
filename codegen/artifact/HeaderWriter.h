//===- codegen/artifact/HeaderWriter.h - The generated C header of a compiled model -===//
//
// `onnxc compile` writes model.h next to model.so: it includes onnxc/onnxc.h,
// declares the model's descriptor accessor, numbers the inputs and outputs
// with macros, and documents in a comment what a caller has to provide:
// each input and output with its dtype and symbolic shape, and which input
// axis binds each symbol. The descriptor carries the same facts at run time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"

#include <string>

namespace onnxc {

/// The text of the header for `plan`; `fileName` (e.g. "bert.h") appears in
/// the banner only.
std::string renderModelHeader(const ModelPlan &plan, const std::string &fileName);

/// Writes renderModelHeader(plan, basename of path) to `path`; throws
/// onnxc::Error naming the file when it cannot be written.
void writeModelHeader(const ModelPlan &plan, const std::string &path);

} // namespace onnxc
