//===- codegen/artifact/ObjectEmitter.h - Optimize a module and write it out -===//
//
// The ahead-of-time half of code generation: the module gets LLVM's -O3
// pipeline (new pass manager, tuned by the target machine's cost model), then
// is written as an object file for the linker, as assembly (--emit=asm) or as
// textual LLVM IR (--emit=llvm) for inspection. ModelJit runs the same
// optimizeModule, so JIT and AOT code are the same code.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Progress.h"

#include "llvm/ADT/StringRef.h"

#include <string>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace onnxc {

class TargetSelection;

/// What emitModule writes. LlvmIrUnoptimized: the module as lowered, verified
/// but not optimized (what onnxc's lowering wrote, before LLVM's -O3).
enum class EmitKind { Object, Assembly, LlvmIr, LlvmIrUnoptimized };

/// Runs the -O3 module pipeline for `machine` over `module`, then verifies
/// it. Throws onnxc::Error if the module is malformed (a codegen bug, but
/// reported rather than crashing the compiler). `progress` follows it
/// (CompileStage::Optimize) and may stop it: then Interrupted is thrown.
void optimizeModule(llvm::Module &module, llvm::TargetMachine &machine,
                    const ProgressCallback &progress = {});

/// Configures `module` for `target` if it is not already, optimizes it and
/// writes `kind` to `path`. Throws onnxc::Error naming the file when it
/// cannot be written. When `progress` stops it, the file is removed and
/// Interrupted thrown. An object may come from the compile cache
/// (CompileCache.h), unless `cached` is false: returns whether it did.
bool emitModule(llvm::Module &module, const TargetSelection &target, EmitKind kind,
                const std::string &path, const ProgressCallback &progress = {}, bool cached = true);

/// The object code of `module` (already optimized) for `machine`; `progress`
/// follows it (CompileStage::Codegen) and may stop it (Interrupted).
std::string compileToObject(llvm::Module &module, llvm::TargetMachine &machine,
                            const ProgressCallback &progress = {});

/// The object code of `module` as lowered: from the compile cache of
/// $ONNXC_CACHE_DIR when it holds it (key kind `kind`, "object" or "jit"),
/// else optimized, compiled and stored there. `fromCache` (if given) says
/// which.
std::string optimizeAndCompile(llvm::Module &module, llvm::TargetMachine &machine,
                               llvm::StringRef kind, const ProgressCallback &progress,
                               bool *fromCache = nullptr);

/// Parses "obj" / "asm" / "llvm" / "llvm-unoptimized" (the --emit values this
/// emitter handles).
EmitKind parseEmitKind(const std::string &text);

} // namespace onnxc
