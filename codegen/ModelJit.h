//===- codegen/ModelJit.h - Compile a model module in-process with ORC -----===//
//
// `onnxc run model.onnx` compiles without touching the file system: the
// module (kernels + descriptor) is optimized with the same -O3 pipeline as
// the AOT path, handed to an ORC LLJIT built for the same TargetSelection,
// and the descriptor accessor is looked up and called. The returned JitModel
// owns the JIT; the descriptor and every kernel it points to stay valid for
// as long as the JitModel lives.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelPlan.h"
#include "ir/Progress.h"
#include "onnxc/model_abi.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class LLVMContext;
class Module;
namespace orc {
class LLJIT;
}
} // namespace llvm

namespace onnxc {

class TargetSelection;

/// A model compiled into this process.
class JitModel {
public:
  JitModel(std::unique_ptr<llvm::orc::LLJIT> jit, const onnxc_model_descriptor *descriptor,
           std::vector<std::shared_ptr<const void>> constants = {});
  ~JitModel();
  JitModel(const JitModel &) = delete;
  JitModel &operator=(const JitModel &) = delete;

  /// Valid until this object is destroyed.
  const onnxc_model_descriptor *descriptor() const { return descriptor_; }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  const onnxc_model_descriptor *descriptor_;
  /// The bytes the constants' symbols are bound to (JitConstant).
  std::vector<std::shared_ptr<const void>> constants_;
};

/// A constant buffer emitted as a declaration (ConstantPlacement::External):
/// the JIT defines `symbol` at its bytes, in memory 64-byte aligned (a copy
/// when `bytes` are not, or are borrowed), which the JitModel keeps.
struct JitConstant {
  std::string symbol;
  ConstantBytes bytes;
};

/// JIT-compiles `module` (which lives in `context`) for `target` and returns
/// the descriptor exported by `accessorName` (see emitDescriptor). The module
/// is configured for the target if it is not already. Throws onnxc::Error
/// with a one-line reason if LLVM cannot build or link the code, and
/// Interrupted when `progress` stops it.
std::unique_ptr<JitModel>
compileModelJit(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                const TargetSelection &target, const std::string &accessorName,
                const ProgressCallback &progress = {}, std::vector<JitConstant> constants = {});

} // namespace onnxc
