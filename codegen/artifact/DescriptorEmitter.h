//===- codegen/artifact/DescriptorEmitter.h - ModelPlan -> onnxc_model_descriptor -===//
//
// Writes a ModelPlan into an llvm::Module as constant data laid out exactly
// like model_abi.h's structs: dim-expression words, names, tensor infos,
// buffers (constant bytes 64-byte aligned, ready for vector loads) and steps
// with kernel pointers. Everything is private to the module except the
// accessor functions, which return the descriptor's address:
//
//   const onnxc_model_descriptor *onnxc_model_<name>(void);  // named, for C programs
//   const onnxc_model_descriptor *onnxc_descriptor(void);    // fixed, for loaders
//
// A function (rather than an exported global) is the one shape that works the
// same through ORC lookups, dlsym and a C program linking model.so directly.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"

#include <string>
#include <string_view>

namespace llvm {
class Module;
}

namespace onnxc {

/// The accessor every artifact exports, whatever the model's name: loaders
/// (`onnxc run model.so`) that do not know the name look this one up.
inline constexpr const char *GenericDescriptorAccessor = "onnxc_descriptor";

/// "onnxc_model_" + the model name with every character that is not a
/// letter, digit or '_' replaced by '_' ("bert-base.v2" ->
/// "onnxc_model_bert_base_v2"); "onnxc_model_model" for an empty name.
std::string descriptorAccessorName(std::string_view modelName);

/// Emits the descriptor of `plan` into `module` and returns the name of its
/// named accessor. The module must already have its target data layout (see
/// TargetSelection::configureModule); step kernels and task counts must be
/// functions of `module` with the ABI's types, and are given internal
/// linkage since the descriptor is their only way in. Throws onnxc::Error
/// for an inconsistent plan, naming the step / buffer / tensor at fault.
std::string emitDescriptor(llvm::Module &module, const ModelPlan &plan);

/// Checks that the LLVM struct types the emitter uses have the field offsets
/// and sizes of the C structs in model_abi.h under `module`'s data layout;
/// throws onnxc::Error naming the first field that differs.
void checkDescriptorLayout(const llvm::Module &module);

} // namespace onnxc
