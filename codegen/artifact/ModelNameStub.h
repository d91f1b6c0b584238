//===- codegen/artifact/ModelNameStub.h - A model's name apart from its code -===//
//
// A model's module names the model in two places: the descriptor's
// model_name string, and the accessor onnxc_model_<name>. Everything else
// (kernels, steps, the rest of the descriptor) is the same code under any
// name. Moving those two into a module of their own, the stub, makes the
// large module independent of the name, so the compile cache
// (CompileCache.h) serves a model compiled again under another name (a
// library built to another path, the JIT of a graph named otherwise). The
// stub is a few instructions; both objects are linked into one library, or
// into one JIT.
//
//   model module:  @onnxc.model_name declared; @onnxc.model_descriptor;
//                  onnxc_descriptor() (the generic accessor)
//   stub module:   @onnxc.model_name = "<name>";
//                  onnxc_model_<name>() { return &onnxc.model_descriptor; }
//
//===----------------------------------------------------------------------===//
#pragma once

#include <memory>
#include <string>

namespace llvm {
class Module;
} // namespace llvm

namespace onnxc {

/// The symbols the two modules share, hidden (bound within one library):
/// the model's name string (the stub's) and the descriptor (the model's).
inline constexpr const char *ModelNameSymbol = "onnxc.model_name";
inline constexpr const char *DescriptorSymbol = "onnxc.model_descriptor";

/// Moves `module`'s model name and its accessor `accessor` (emitDescriptor's
/// result) into a new stub module in the same context, which it returns, and
/// renames `module` to a fixed name. Throws onnxc::Error if `module` does
/// not hold a descriptor as emitDescriptor writes it.
std::unique_ptr<llvm::Module> splitModelName(llvm::Module &module, const std::string &accessor);

} // namespace onnxc
