//===- codegen/KernelJit.cpp - JIT-compile emitted kernels for this process ===//
#include "codegen/KernelJit.h"

#include "codegen/artifact/ObjectEmitter.h"
#include "ir/Error.h"

#include "llvm/IR/Verifier.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/SubtargetFeature.h"

#include <mutex>

namespace onnxc {
namespace {

void initializeHostTargetOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
}

template <typename T> T unwrap(llvm::Expected<T> value, const char *what) {
  if (!value)
    fail("kernel jit: ", what, ": ", llvm::toString(value.takeError()));
  return std::move(*value);
}

void check(llvm::Error error, const char *what) {
  if (error)
    fail("kernel jit: ", what, ": ", llvm::toString(std::move(error)));
}

} // namespace

KernelJit::KernelJit(llvm::orc::JITTargetMachineBuilder target) {
  initializeHostTargetOnce();
  target.setCodeGenOptLevel(llvm::CodeGenOptLevel::Aggressive);
  cpu_ = target.getCPU();
  targetMachine_ = unwrap(target.createTargetMachine(), "cannot create the target machine");
  jit_ = unwrap(llvm::orc::LLJITBuilder().setJITTargetMachineBuilder(std::move(target)).create(),
                "cannot create the jit");
}

KernelJit KernelJit::forHost() {
  initializeHostTargetOnce();
  llvm::orc::JITTargetMachineBuilder target{llvm::Triple(llvm::sys::getProcessTriple())};
  target.setCPU(llvm::sys::getHostCPUName().str());
  llvm::SubtargetFeatures features;
  for (const auto &[name, enabled] : llvm::sys::getHostCPUFeatures())
    features.AddFeature(name, enabled);
  target.addFeatures(features.getFeatures());
  return KernelJit(std::move(target));
}

KernelJit::KernelJit(KernelJit &&) noexcept = default;
KernelJit &KernelJit::operator=(KernelJit &&) noexcept = default;
KernelJit::~KernelJit() = default;

llvm::Module &KernelJit::newModule(const std::string &name) {
  auto context = std::make_unique<llvm::LLVMContext>();
  auto module = std::make_unique<llvm::Module>(name, *context);
  module->setTargetTriple(targetMachine_->getTargetTriple().str());
  module->setDataLayout(targetMachine_->createDataLayout());
  llvm::Module &result = *module;
  pending_.emplace_back(std::move(module), std::move(context));
  return result;
}

void KernelJit::compile() {
  for (llvm::orc::ThreadSafeModule &module : pending_) {
    module.withModuleDo([&](llvm::Module &m) {
      std::string problems;
      llvm::raw_string_ostream os(problems);
      if (llvm::verifyModule(m, &os))
        fail("kernel jit: module '", m.getName().str(), "' is invalid: ", problems);
      optimizeModule(m, *targetMachine_);
    });
    check(jit_->addIRModule(std::move(module)), "cannot add a module");
  }
  pending_.clear();
}

void *KernelJit::lookupAddress(const std::string &name) {
  auto address = jit_->lookup(name);
  if (!address)
    fail("kernel jit: symbol '", name, "' not found: ", llvm::toString(address.takeError()));
  return address->toPtr<void *>();
}

} // namespace onnxc
