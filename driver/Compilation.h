//===- driver/Compilation.h - Options and steps of compiling a model -----===//
//
// What `onnxc dump|compile|run|bench|generate` and the Python package's
// compile, dump and explain do, written once: one options struct (the CLI
// fills it from flags, Python from keyword arguments), the pass pipeline it
// asks for, the optimized graph of a model file, and the JIT or a written
// artifact. A new compile option is added here and read by both.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/ModelCompiler.h"
#include "codegen/ModelJit.h"
#include "codegen/TargetSelection.h"
#include "ir/Graph.h"
#include "passes/PassManager.h"

#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

struct CompileOptions {
  /// The -O level, 0 to 3 (parseOptimizationLevel in passes/Pipelines.h).
  int optLevel = 3;
  /// Registered pass names run after the level's pipeline.
  std::vector<std::string> passes;
  /// Printing, verification and explanation while the passes run.
  PassManagerOptions passManager;
  /// The CPU and features to compile for.
  TargetRequest target;
  /// Told every step of the compile (ir/Progress.h: the passes, each node
  /// lowered, LLVM's functions, the link, the size written); a false answer
  /// stops the compile at its next step with Interrupted, leaving no file.
  /// buildPipeline hands it to the passes; compileJit and compileArtifact
  /// take it as an argument. The tool draws it on a terminal
  /// (tools/onnxc/ProgressLine.h), Python calls its progress= with it.
  ProgressCallback progress;
};

/// The pipeline `options` asks for: its -O level, then its passes. Printed
/// IR goes to `irStream` (stderr when null). Throws onnxc::Error for a
/// level out of range or a pass that is not registered.
std::unique_ptr<PassManager> buildPipeline(const CompileOptions &options,
                                           std::ostream *irStream = nullptr);

/// Loads `path` (driver/LoadModel.h) and runs `pipeline` on it.
/// `externalFiles` as for loadModel.
std::unique_ptr<Graph> loadOptimizedModel(const std::string &path, PassManager &pipeline,
                                          std::vector<std::string> *externalFiles = nullptr);

/// JIT-compiles `graph` into this process. Compiles take turns within a
/// process (LLVM's option and target registries are process-wide); what
/// they produce runs concurrently.
std::unique_ptr<JitModel> compileJit(const Graph &graph, const TargetSelection &target,
                                     const ProgressCallback &progress = {});

/// Writes the artifact `request` asks for (a model.so and its header, an
/// object, assembly or LLVM IR); takes turns like compileJit.
ModelPlan compileArtifact(const Graph &graph, const TargetSelection &target,
                          const ArtifactRequest &request, const ProgressCallback &progress = {});

} // namespace onnxc
