//===- codegen/ModelJit.cpp - Compile a model module in-process with ORC ---===//
#include "codegen/ModelJit.h"

#include "codegen/TargetSelection.h"
#include "codegen/artifact/ModelNameStub.h"
#include "codegen/artifact/ObjectEmitter.h"
#include "ir/Error.h"

#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdlib>
#include <cstring>

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

/// The constant's bytes where kernels may load them with aligned vector
/// loads: its own memory when that is owned and 64-byte aligned, else a copy.
/// Its own reference is dropped, so a packed copy nobody else holds is freed
/// at once (the weights are in memory about twice at most, not once per copy
/// LLVM would make).
std::shared_ptr<const void> alignedBytes(JitConstant &constant) {
  ConstantBytes bytes = std::move(constant.bytes);
  if (bytes.owner && reinterpret_cast<uintptr_t>(bytes.data) % 64 == 0)
    return std::shared_ptr<const void>(bytes.owner, bytes.data);
  const size_t size = (bytes.size + 63) / 64 * 64;
  void *copy = std::aligned_alloc(64, size);
  if (!copy)
    fail("jit: cannot allocate ", bytes.size, " bytes for the constant '", constant.symbol, "'");
  std::memcpy(copy, bytes.data, bytes.size);
  return std::shared_ptr<const void>(copy, std::free);
}

/// Defines each constant's symbol at its bytes in the JIT's main library.
std::vector<std::shared_ptr<const void>>
bindConstants(llvm::orc::LLJIT &jit, std::vector<JitConstant> &constants, const std::string &what) {
  std::vector<std::shared_ptr<const void>> kept;
  llvm::orc::SymbolMap symbols;
  for (JitConstant &constant : constants) {
    kept.push_back(alignedBytes(constant));
    symbols[jit.mangleAndIntern(constant.symbol)] = {
        llvm::orc::ExecutorAddr::fromPtr(kept.back().get()), llvm::JITSymbolFlags::Exported};
  }
  if (!symbols.empty())
    check(jit.getMainJITDylib().define(llvm::orc::absoluteSymbols(std::move(symbols))),
          what + ": cannot bind the constants");
  return kept;
}

} // namespace

JitModel::JitModel(std::unique_ptr<llvm::orc::LLJIT> jit, const onnxc_model_descriptor *descriptor,
                   std::vector<std::shared_ptr<const void>> constants)
    : jit_(std::move(jit)), descriptor_(descriptor), constants_(std::move(constants)) {}

// Out of line so that LLJIT is complete where the unique_ptr is destroyed.
JitModel::~JitModel() = default;

std::unique_ptr<JitModel>
compileModelJit(std::unique_ptr<llvm::Module> module, std::unique_ptr<llvm::LLVMContext> context,
                const TargetSelection &target, const std::string &accessorName,
                const ProgressCallback &progress, std::vector<JitConstant> constants) {
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
  // The object code is made here, as for a library (ObjectEmitter.h: the
  // same optimizer, and the compile cache), rather than in ORC's compile
  // layer; ORC links it. The name goes to a stub (ModelNameStub.h), so a
  // graph named otherwise is the same code. The modules and their context
  // go before the link.
  std::unique_ptr<llvm::Module> stub = splitModelName(*module, accessorName);
  std::string object = optimizeAndCompile(*module, *machine, "jit", progress);
  // The stub is a few instructions: compiled as it is, never cached.
  std::string nameObject = compileToObject(*stub, *machine);
  stub.reset();
  module.reset();
  context.reset();

  // Process symbols (libm, memcpy/memset the backend may call) are linked by default.
  std::unique_ptr<llvm::orc::LLJIT> jit = unwrap(
      llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(machineBuilder)).create(),
      what + ": cannot create the jit");
  std::vector<std::shared_ptr<const void>> kept = bindConstants(*jit, constants, what);
  check(jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(object, modelName)),
        what + ": cannot add the object");
  check(jit->addObjectFile(llvm::MemoryBuffer::getMemBufferCopy(nameObject, modelName + ".name")),
        what + ": cannot add the name's object");
  llvm::Expected<llvm::orc::ExecutorAddr> found = jit->lookup(accessorName);
  llvm::orc::ExecutorAddr accessor =
      unwrap(std::move(found), what + ": cannot compile or find '" + accessorName + "'");
  auto *getDescriptor = accessor.toPtr<const onnxc_model_descriptor *(*)()>();
  const onnxc_model_descriptor *descriptor = getDescriptor();
  if (!descriptor || descriptor->abi_version != ONNXC_ABI_VERSION)
    fail(what, ": '", accessorName, "' did not return a descriptor of abi version ",
         ONNXC_ABI_VERSION);
  return std::make_unique<JitModel>(std::move(jit), descriptor, std::move(kept));
}

} // namespace onnxc
