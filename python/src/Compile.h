//===- python/src/Compile.h - onnxc.compile, dump and explain -------------===//
//
// The compiler half of the Python package, on the driver the onnxc tool
// stands on too (driver/Compilation.h): load a .onnx or .ir model, run an -O
// pipeline (plus named passes), then print the IR, report what the passes
// did, or compile (JIT into this process, or a model.so on disk).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Progress.h"

#include <memory>
#include <string>
#include <vector>

namespace onnxc {

class JitModel;

namespace python {

struct PipelineRequest {
  std::string modelPath;
  int optLevel = 3;
  /// Registered pass names run after the -O pipeline.
  std::vector<std::string> passes;
  /// Compiled for generation: an Optimum merged decoder's use_cache_branch
  /// is built in as true (driver/MergedDecoder.h).
  bool generation = false;
  /// The logits output at the last position only (driver/LastPositionLogits.h).
  bool lastLogits = false;
};

struct TargetOptions {
  std::string cpu = "native";
  std::string attributes;
  /// "f32", "bf16" or "auto" (TargetRequest::precision).
  std::string precision = "f32";
};

/// The IR text after the pipeline (`onnxc dump -On --passes=...`).
std::string dumpModel(const PipelineRequest &request);

/// What the pipeline did and why it left candidates alone: the lines of
/// `onnxc dump --stats` followed by those of `--explain`.
std::string explainModel(const PipelineRequest &request);

/// Optimizes and JIT-compiles the model into this process, each step told
/// to `progress` (which may stop it: Interrupted).
std::unique_ptr<JitModel> compileJit(const PipelineRequest &request, const TargetOptions &target,
                                     const ProgressCallback &progress = {});

/// Optimizes and writes `libraryPath` (a shared library) and its C header
/// (`headerPath`, or the library path with ".h"). When `progress` stops it,
/// nothing is left written and Interrupted is thrown.
void compileLibrary(const PipelineRequest &request, const TargetOptions &target,
                    const std::string &libraryPath, const std::string &headerPath,
                    const ProgressCallback &progress = {});

} // namespace python
} // namespace onnxc
