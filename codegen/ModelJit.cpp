//===- codegen/ModelJit.cpp - Compile a model module in-process with ORC ---===//
#include "codegen/ModelJit.h"

#include "codegen/LlvmProgress.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/ObjectEmitter.h"
#include "ir/Error.h"

#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/ExecutionEngine/Orc/ThreadSafeModule.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

namespace onnxc {

namespace {

/// Unwraps an llvm::Expected, turning an error into onnxc::Error; the
/// llvm::Error is always consumed so none escapes unchecked.
template <typename T> T unwrap(llvm::Expected<T> value, const std::string &what) {
  if (!value)
    fail(what, ": ", llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const std::string &what) {
  if (error)
    fail(what, ": ", llvm::toString(std::move(error)));
}

} // namespace

JitModel::JitModel(std::unique_ptr<llvm::orc::LLJIT> jit, const onnxc_model_descriptor *descriptor)
    : jit_(std::move(jit)), descriptor_(descriptor) {}

// Out of line so that LLJIT is complete where the unique_ptr is destroyed.
JitModel::~JitModel() = default;

std::unique_ptr<JitModel> compileModelJit(std::unique_ptr<llvm::Module> module,
                                          std::unique_ptr<llvm::LLVMContext> context,
                                          const TargetSelection &target,
                                          const std::string &accessorName,
                                          const ProgressCallback &progress) {
  std::string modelName = module->getName().str();
  std::string what = "jit of '" + modelName + "'";
  llvm::orc::JITTargetMachineBuilder machineBuilder = target.jitTargetMachineBuilder();
  std::unique_ptr<llvm::TargetMachine> machine =
      unwrap(machineBuilder.createTargetMachine(), what + ": cannot create a target machine");
  llvm::DataLayout layout = machine->createDataLayout();
  if (module->getTargetTriple().empty()) {
    module->setTargetTriple(target.triple().str());
    module->setDataLayout(layout);
  } else if (module->getDataLayout() != layout) {
    fail(what, ": the module was configured for another target than cpu '", target.cpu(), "'");
  }
  // Optimizing here, rather than in an IR transform layer, keeps one code
  // path for JIT and AOT and reports malformed IR before ORC sees it.
  optimizeModule(*module, *machine, progress);

  // Machine code is made inside the lookup below. Holding the context here
  // keeps it alive until the watch has given the context its gate back (ORC
  // drops the module once it is compiled).
  llvm::orc::ThreadSafeContext threadSafeContext(std::move(context));
  reportProgress(progress, {CompileStage::Codegen, "", 0, 0});
  LlvmProgress watch(progress, CompileStage::Codegen, *module);
  watch.watchCodegen(*threadSafeContext.getContext());

  // Process symbols (libm, memcpy/memset the backend may call) are linked by default.
  std::unique_ptr<llvm::orc::LLJIT> jit = unwrap(
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machineBuilder)).create(),
      what + ": cannot create the jit");
  check(jit->addIRModule(llvm::orc::ThreadSafeModule(std::move(module), threadSafeContext)),
        what + ": cannot add the module");
  // The lookup triggers compilation and linking of the whole module.
  llvm::Expected<llvm::orc::ExecutorAddr> found = jit->lookup(accessorName);
  if (watch.stopped()) {
    if (!found)
      llvm::consumeError(found.takeError());
    watch.throwIfStopped();
  }
  llvm::orc::ExecutorAddr accessor =
      unwrap(std::move(found), what + ": cannot compile or find '" + accessorName + "'");
  auto *getDescriptor = accessor.toPtr<const onnxc_model_descriptor *(*)()>();
  const onnxc_model_descriptor *descriptor = getDescriptor();
  if (!descriptor || descriptor->abi_version != ONNXC_ABI_VERSION)
    fail(what, ": '", accessorName, "' did not return a descriptor of abi version ",
         ONNXC_ABI_VERSION);
  return std::make_unique<JitModel>(std::move(jit), descriptor);
}

} // namespace onnxc
