//===- codegen/artifact/DescriptorEmitter.h - ModelPlan -> onnxc_model_descriptor -===//
//
// Writes a ModelPlan into an llvm::Module as constant data laid out exactly
// like model_abi.h's structs: dim-expression words, names, tensor infos,
// buffers (constant bytes 64-byte aligned, ready for vector loads; in the
// module or bound by the JIT, see ConstantPlacement) and steps
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

/// Where the bytes of the plan's constant buffers (the weights) go.
enum class ConstantPlacement {
  /// Globals of the module, each in the large read-only data section
  /// (.lrodata, LLVM's "large" code model for that global), which linkers
  /// place beside the rest of the image: gigabytes of weights then never sit
  /// between the code and the small constants it reaches with 32-bit
  /// offsets. For artifacts (.o, .so).
  InModule,
  /// Declarations only, named externalConstantName(buffer index): the JIT
  /// binds each to the bytes in memory (ModelJit.h), so the weights are never
  /// copied into LLVM's constants, the object file or JIT-linked memory.
  External,
};

/// The symbol an External constant buffer's bytes are bound to.
std::string externalConstantName(size_t bufferIndex);

/// Emits the descriptor of `plan` into `module` and returns the name of its
/// named accessor. The module must already have its target data layout (see
/// TargetSelection::configureModule); step kernels and task counts must be
/// functions of `module` with the ABI's types, and are given internal
/// linkage since the descriptor is their only way in. Throws onnxc::Error
/// for an inconsistent plan, naming the step / buffer / tensor at fault.
std::string emitDescriptor(llvm::Module &module, const ModelPlan &plan,
                           ConstantPlacement placement = ConstantPlacement::InModule);

/// Checks that the LLVM struct types the emitter uses have the field offsets
/// and sizes of the C structs in model_abi.h under `module`'s data layout;
/// throws onnxc::Error naming the first field that differs.
void checkDescriptorLayout(const llvm::Module &module);

} // namespace onnxc
