//===- codegen/KernelJit.h - JIT-compile emitted kernels for this process --===//
//
// A thin wrapper over ORC's LLJIT for tests, benchmarks and `onnxc run`:
// optimize a module with ObjectEmitter's optimizeModule (the -O3 pipeline the
// AOT path runs) for the chosen CPU, hand it to the JIT, and look symbols up
// by name. Code is generated for the host CPU (its name and every feature it
// reports) unless a JITTargetMachineBuilder for another choice is given.
//
//   KernelJit jit = KernelJit::forHost();
//   llvm::Module &m = jit.newModule("kernels");    // already has triple + layout
//   emitPackedGemm(m, spec);
//   jit.compile();                                  // optimizes + adds every new module
//   auto *fn = jit.lookup<GemmFn>(spec.name);
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/LLJIT.h"
#include "llvm/IR/Module.h"
#include "llvm/Target/TargetMachine.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// Owns one LLJIT instance and the modules compiled into it.
class KernelJit {
public:
  /// A JIT for `target`; throws onnxc::Error when LLVM cannot build it.
  explicit KernelJit(llvm::orc::JITTargetMachineBuilder target);
  /// A JIT for the host CPU name and features.
  static KernelJit forHost();

  KernelJit(KernelJit &&) noexcept;
  KernelJit &operator=(KernelJit &&) noexcept;
  ~KernelJit();

  /// A fresh empty module, configured for the JIT's target (triple and data
  /// layout), in a context of its own. Emit into it, then call compile().
  llvm::Module &newModule(const std::string &name);
  /// Verifies, optimizes and adds every module made by newModule() since the
  /// last call. Throws onnxc::Error naming what failed (invalid IR included).
  void compile();

  /// Address of `name` in compiled code; throws onnxc::Error if missing.
  void *lookupAddress(const std::string &name);
  template <typename Fn> Fn *lookup(const std::string &name) {
    return reinterpret_cast<Fn *>(lookupAddress(name));
  }

  /// The CPU the code is compiled for, e.g. "znver3".
  const std::string &cpuName() const { return cpu_; }
  /// The TargetMachine that drives -O3 (the JIT's own one is identical).
  llvm::TargetMachine &targetMachine() { return *targetMachine_; }

private:
  std::unique_ptr<llvm::orc::LLJIT> jit_;
  std::unique_ptr<llvm::TargetMachine> targetMachine_;
  std::string cpu_;
  std::vector<llvm::orc::ThreadSafeModule> pending_;
};

} // namespace onnxc
