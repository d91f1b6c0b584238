//===- codegen/artifact/ObjectEmitter.cpp - Optimize a module and write it out -===//
#include "codegen/artifact/ObjectEmitter.h"

#include "codegen/LlvmProgress.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/CompileCache.h"
#include "ir/Error.h"

#include "llvm/Analysis/CGSCCPassManager.h"
#include "llvm/Analysis/LoopAnalysisManager.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassInstrumentation.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Transforms/IPO/MergeFunctions.h"

#include <filesystem>
#include <optional>

namespace onnxc {

namespace {

/// Verifies the module and turns a failure into one line (the verifier's
/// first complaint) instead of a crash later in the backend.
void verifyOrFail(const llvm::Module &module, const char *when) {
  std::string report;
  llvm::raw_string_ostream os(report);
  if (!llvm::verifyModule(module, &os))
    return;
  os.flush();
  std::string firstLine = report.substr(0, report.find('\n'));
  fail("generated code for '", module.getName().str(), "' is malformed ", when, ": ", firstLine);
}

/// Writes `bytes` to `path` whole, or throws naming the file.
void writeFile(const std::string &path, llvm::StringRef bytes) {
  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_None);
  if (error)
    fail("cannot write '", path, "': ", error.message());
  out << bytes;
  out.close();
  if (out.has_error()) {
    std::string message = out.error().message();
    out.clear_error();
    fail("cannot write '", path, "': ", message);
  }
}

/// Runs LLVM's code generation of `type` into `out`, watched for a stop:
/// on one, `onStop` (which may drop the incomplete output), then the stop
/// is thrown.
void runCodegen(llvm::Module &module, llvm::TargetMachine &machine, llvm::raw_pwrite_stream &out,
                llvm::CodeGenFileType type, const ProgressCallback &progress,
                llvm::function_ref<void()> onStop = {}) {
  llvm::legacy::PassManager codegen;
  // addPassesToEmitFile returns true when the target cannot emit this kind.
  if (machine.addPassesToEmitFile(codegen, out, nullptr, type))
    fail("LLVM target ", machine.getTargetTriple().str(), " cannot emit ",
         type == llvm::CodeGenFileType::ObjectFile ? "object files" : "assembly");
  reportProgress(progress, {CompileStage::Codegen, "", 0, 0});
  LlvmProgress watch(progress, CompileStage::Codegen, module);
  watch.watchCodegen(module.getContext());
  codegen.run(module);
  if (watch.stopped() && onStop)
    onStop();
  watch.throwIfStopped();
}

} // namespace

std::string compileToObject(llvm::Module &module, llvm::TargetMachine &machine,
                            const ProgressCallback &progress) {
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream out(object);
  runCodegen(module, machine, out, llvm::CodeGenFileType::ObjectFile, progress);
  return std::string(object.data(), object.size());
}

std::string optimizeAndCompile(llvm::Module &module, llvm::TargetMachine &machine,
                               llvm::StringRef kind, const ProgressCallback &progress,
                               bool *fromCache) {
  std::optional<CompileCache> cache = CompileCache::fromEnvironment();
  std::string key = cache ? CompileCache::key(module, machine, kind) : "";
  if (cache) {
    if (std::unique_ptr<llvm::MemoryBuffer> hit = cache->find(key)) {
      // The stages are passed as a compile would pass them, and may stop it.
      reportProgress(progress, {CompileStage::Optimize, "", 0, 0});
      reportProgress(progress, {CompileStage::Codegen, "", 0, 0});
      if (fromCache)
        *fromCache = true;
      return hit->getBuffer().str();
    }
  }
  optimizeModule(module, machine, progress);
  std::string object = compileToObject(module, machine, progress);
  if (cache)
    cache->store(key, object);
  if (fromCache)
    *fromCache = false;
  return object;
}

void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    const ProgressCallback &progress) {
  verifyOrFail(module, "before optimization");
  reportProgress(progress, {CompileStage::Optimize, "", 0, 0});
  LlvmProgress watch(progress, CompileStage::Optimize, module);
  llvm::PassInstrumentationCallbacks instrumentation;
  watch.watchOptimizer(instrumentation);
  llvm::LoopAnalysisManager loopAnalyses;
  llvm::FunctionAnalysisManager functionAnalyses;
  llvm::CGSCCAnalysisManager cgsccAnalyses;
  llvm::ModuleAnalysisManager moduleAnalyses;
  // Passing the machine gives the vectorizers the target's cost model and
  // vector widths; without it they assume a scalar machine.
  llvm::PassBuilder builder(&machine, llvm::PipelineTuningOptions(), std::nullopt,
                            &instrumentation);
  builder.registerModuleAnalyses(moduleAnalyses);
  builder.registerCGSCCAnalyses(cgsccAnalyses);
  builder.registerFunctionAnalyses(functionAnalyses);
  builder.registerLoopAnalyses(loopAnalyses);
  builder.crossRegisterProxies(loopAnalyses, functionAnalyses, cgsccAnalyses, moduleAnalyses);
  // Layers repeat, so many step kernels are identical (same op, same
  // shapes; buffers arrive through the step's pointer table). Merging them
  // before -O3 optimizes and compiles each distinct kernel once.
  llvm::ModulePassManager pipeline;
  pipeline.addPass(llvm::MergeFunctionsPass());
  pipeline.addPass(builder.buildPerModuleDefaultPipeline(llvm::OptimizationLevel::O3));
  pipeline.run(module, moduleAnalyses);
  // A stopped pipeline skipped passes: its module is not worth verifying.
  watch.throwIfStopped();
  verifyOrFail(module, "after optimization");
}

EmitKind parseEmitKind(const std::string &text) {
  if (text == "obj")
    return EmitKind::Object;
  if (text == "asm")
    return EmitKind::Assembly;
  if (text == "llvm")
    return EmitKind::LlvmIr;
  if (text == "llvm-unoptimized")
    return EmitKind::LlvmIrUnoptimized;
  fail("unknown --emit kind '", text, "' (expected obj, asm, llvm or llvm-unoptimized)");
}

bool emitModule(llvm::Module &module, const TargetSelection &target, EmitKind kind,
                const std::string &path, const ProgressCallback &progress, bool cached) {
  std::unique_ptr<llvm::TargetMachine> machine = target.createTargetMachine();
  if (module.getTargetTriple().empty())
    target.configureModule(module);
  else if (module.getDataLayout() != machine->createDataLayout())
    fail("module '", module.getName().str(), "' was configured for another target than ",
         target.triple().str(), " cpu '", target.cpu(), "'");
  if (kind == EmitKind::Object) {
    bool fromCache = false;
    std::string object;
    if (cached) {
      object = optimizeAndCompile(module, *machine, "object", progress, &fromCache);
    } else {
      optimizeModule(module, *machine, progress);
      object = compileToObject(module, *machine, progress);
    }
    writeFile(path, object);
    return fromCache;
  }
  if (kind == EmitKind::LlvmIrUnoptimized)
    verifyOrFail(module, "as lowered");
  else
    optimizeModule(module, *machine, progress);

  std::error_code error;
  llvm::raw_fd_ostream out(path, error, llvm::sys::fs::OF_Text);
  if (error)
    fail("cannot write '", path, "': ", error.message());
  if (kind == EmitKind::LlvmIr || kind == EmitKind::LlvmIrUnoptimized) {
    module.print(out, nullptr);
  } else {
    runCodegen(module, *machine, out, llvm::CodeGenFileType::AssemblyFile, progress, [&] {
      out.close();
      std::filesystem::remove(path, error);
    });
  }
  out.close();
  if (out.has_error()) {
    std::string message = out.error().message();
    out.clear_error();
    fail("cannot write '", path, "': ", message);
  }
  return false;
}

} // namespace onnxc
