//===- codegen/LlvmProgress.cpp - Following and stopping LLVM's passes ----===//
#include "codegen/LlvmProgress.h"

#include "llvm/ADT/Any.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"

namespace onnxc {

namespace {
/// Often enough for Ctrl-C to feel immediate, rarely enough that a Python
/// callback (which takes the GIL) costs nothing measurable.
constexpr std::chrono::milliseconds kReportInterval(100);
} // namespace

LlvmProgress::LlvmProgress(const ProgressCallback &callback, CompileStage stage,
                           const llvm::Module &module)
    : callback_(&callback), stage_(stage), enabled_(bool(callback)) {
  // lastReport_ starts at the clock's epoch: the first step is reported at
  // once, so a callback can stop even a short run from inside LLVM.
  for (const llvm::Function &function : module)
    if (!function.isDeclaration())
      ++functions_;
}

LlvmProgress::~LlvmProgress() {
  if (watchedContext_)
    watchedContext_->setOptPassGate(llvm::getGlobalPassGate());
}

void LlvmProgress::watchOptimizer(llvm::PassInstrumentationCallbacks &callbacks) {
  if (!enabled_)
    return;
  callbacks.registerShouldRunOptionalPassCallback([this](llvm::StringRef, llvm::Any ir) {
    // Function passes name their function; module and CGSCC passes count
    // as a step of their own.
    if (const auto *function = llvm::any_cast<const llvm::Function *>(&ir))
      return reached((*function)->getName());
    return reached("");
  });
}

void LlvmProgress::watchCodegen(llvm::LLVMContext &context) {
  if (!enabled_)
    return;
  watchedContext_ = &context;
  context.setOptPassGate(*this);
}

bool LlvmProgress::shouldRunPass(const llvm::StringRef, llvm::StringRef irDescription) {
  // Function passes describe their unit as "function (NAME)"; loop and
  // module passes count under the function last named.
  if (irDescription.consume_front("function (") && irDescription.consume_back(")"))
    return reached(irDescription);
  return reached("");
}

bool LlvmProgress::reached(llvm::StringRef unit) {
  if (stopped_)
    return false;
  if (!unit.empty() && unit != lastUnit_) {
    lastUnit_ = unit.str();
    if (seen_.insert(lastUnit_).second)
      ++reachedCount_;
  }
  auto now = std::chrono::steady_clock::now();
  if (now - lastReport_ < kReportInterval)
    return true;
  lastReport_ = now;
  // The optimizer visits functions more than once (inlining, then the
  // vector passes): its total says little, so only the code generator's
  // is given.
  ProgressEvent event{stage_, lastUnit_, reachedCount_,
                      stage_ == CompileStage::Codegen ? functions_ : 0};
  if (event.total && event.done > event.total)
    event.done = event.total;
  try {
    stopped_ = !(*callback_)(event);
  } catch (...) {
    thrown_ = std::current_exception();
    stopped_ = true;
  }
  return !stopped_;
}

void LlvmProgress::throwIfStopped() const {
  if (thrown_)
    std::rethrow_exception(thrown_);
  if (stopped_)
    throw Interrupted();
}

} // namespace onnxc
