//===- codegen/LlvmProgress.h - Following and stopping LLVM's passes ------===//
//
// LLVM's optimizer and code generator are most of a compile's time, and run
// as one call each: they cannot report or stop between steps of ours. This
// watches them from inside instead: the new pass manager's instrumentation
// (optimizer) and the context's pass gate (code generator) count the
// functions reached, and tell the progress callback at most every 100 ms.
// When the callback asks to stop, every optional pass is skipped from then
// on, so the call returns soon, and throwIfStopped() throws Interrupted
// after it. Nothing is thrown through LLVM's frames (built without
// exceptions): a callback that throws is caught and its exception kept.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Progress.h"

#include "llvm/ADT/StringSet.h"
#include "llvm/IR/OptBisect.h"

#include <chrono>
#include <exception>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
class PassInstrumentationCallbacks;
} // namespace llvm

namespace onnxc {

class LlvmProgress : public llvm::OptPassGate {
public:
  /// Reports `stage` of `module` to `callback` (which may be empty: then
  /// this does nothing).
  LlvmProgress(const ProgressCallback &callback, CompileStage stage, const llvm::Module &module);
  /// Restores the context's own pass gate if watchCodegen replaced it.
  ~LlvmProgress() override;
  LlvmProgress(const LlvmProgress &) = delete;
  LlvmProgress &operator=(const LlvmProgress &) = delete;

  /// Follows the optimizer's passes (pass `callbacks` to the PassBuilder).
  void watchOptimizer(llvm::PassInstrumentationCallbacks &callbacks);
  /// Follows the code generator of `context` (the module's) until this is
  /// destroyed.
  void watchCodegen(llvm::LLVMContext &context);

  /// Whether the callback asked to stop.
  bool stopped() const { return stopped_; }
  /// Throws Interrupted (or what the callback threw) once it asked to stop.
  void throwIfStopped() const;

  // llvm::OptPassGate, for the code generator's passes.
  bool shouldRunPass(const llvm::StringRef passName, llvm::StringRef irDescription) override;
  bool isEnabled() const override { return enabled_; }

private:
  /// Counts a function reached (the first time `unit` names it) and
  /// reports at most every 100 ms. Returns whether to go on.
  bool reached(llvm::StringRef unit);

  const ProgressCallback *callback_;
  CompileStage stage_;
  /// The module's function definitions (the code generator's total).
  int64_t functions_ = 0;
  int64_t reachedCount_ = 0;
  std::string lastUnit_;
  /// The functions reached so far (each counts once).
  llvm::StringSet<> seen_;
  std::chrono::steady_clock::time_point lastReport_;
  bool stopped_ = false;
  std::exception_ptr thrown_;
  bool enabled_;
  llvm::LLVMContext *watchedContext_ = nullptr;
};

} // namespace onnxc
