//===- codegen/ModelCompiler.h - Graph -> JIT model or model.so -------------===//
//
// The two ends of code generation behind one call each: lower a graph into
// a fresh module with its descriptor, then either JIT it into this process
// (`onnxc run`) or write an object / assembly / LLVM IR file, or a shared
// library plus its C header (`onnxc compile`).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelJit.h"
#include "codegen/ModelPlan.h"
#include "codegen/TargetSelection.h"
#include "codegen/artifact/DescriptorEmitter.h"
#include "codegen/artifact/ObjectEmitter.h"
#include "ir/Graph.h"

#include <memory>
#include <string>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace onnxc {

/// A lowered model: the module (kernels, constants, descriptor) and the plan
/// it was emitted from.
struct LoweredModel {
  std::unique_ptr<llvm::LLVMContext> context;
  std::unique_ptr<llvm::Module> module;
  ModelPlan plan;
  /// The model-specific descriptor accessor ("onnxc_model_<name>").
  std::string accessor;
};

/// Lowers `graph` for `target` and emits its descriptor under `modelName`
/// (empty: the graph's name, which the JIT uses: one process, one lookup).
/// Throws onnxc::Error naming what cannot be compiled. Each node is told
/// to `progress` (ir/Progress.h), which may stop the lowering (Interrupted).
LoweredModel lowerModel(const Graph &graph, const TargetSelection &target,
                        const std::string &modelName = "", const ProgressCallback &progress = {},
                        ConstantPlacement placement = ConstantPlacement::InModule);

/// lowerModel + ORC JIT, each step told to `progress` (which may stop it).
std::unique_ptr<JitModel> compileModelJit(const Graph &graph, const TargetSelection &target,
                                          const ProgressCallback &progress = {});

/// What `onnxc compile` writes.
struct ArtifactRequest {
  /// Output path: the shared library (EmitKind::Object means "link a .so"
  /// here), or the .o / .s / .ll file for --emit.
  std::string outputPath;
  /// --emit: Object (the default, a linked shared library), or one of the
  /// inspection forms (LlvmIrUnoptimized: before LLVM's optimizer).
  enum class Kind {
    SharedLibrary,
    Object,
    Assembly,
    LlvmIr,
    LlvmIrUnoptimized
  } kind = Kind::SharedLibrary;
  /// The C header next to a shared library; empty: outputPath with ".h".
  std::string headerPath;
  /// The model's name in the artifact: the descriptor's model_name, the
  /// accessor onnxc_model_<name>, the header's macros. Must be a C
  /// identifier (isValidModelName); empty: modelNameForOutput(outputPath).
  /// Not the graph's name, so that two exports both named "torch_jit" can be
  /// linked into one program.
  std::string modelName;
};

/// Whether `name` can name a compiled model: a C identifier ([A-Za-z_]
/// then [A-Za-z0-9_]*), at most 200 characters.
bool isValidModelName(const std::string &name);

/// The default model name of an artifact written to `outputPath`: the file
/// name without its last extension, every character that is not a letter,
/// digit or '_' replaced by '_', and '_' in front of a leading digit
/// ("out/my-gpt.so" -> "my_gpt", "2layer.so" -> "_2layer"; "model" for a
/// name with nothing left).
std::string modelNameForOutput(const std::string &outputPath);

/// Lowers `graph` and writes the artifact. Returns the lowered plan (for
/// reporting). Throws onnxc::Error naming the file or the node at fault.
/// Each step is told to `progress`; when it asks to stop (up to the link:
/// from there on the library is finished), what was written is removed and
/// Interrupted thrown. The last event is CompileStage::Done with the size
/// of the file written.
ModelPlan compileModelArtifact(const Graph &graph, const TargetSelection &target,
                               const ArtifactRequest &request,
                               const ProgressCallback &progress = {});

} // namespace onnxc
