//===- codegen/artifact/RuntimeFiles.h - Where the runtime archive and headers are -===//
//
// `onnxc compile` links every model.so with the runtime archive, and a C
// program that uses the model includes onnxc/onnxc.h. Both are found
// relative to the file that holds this code (the onnxc executable, or the
// Python module), so an installed prefix can be moved: first the installed
// layout (<prefix>/bin/onnxc -> <prefix>/lib/libonnxc_runtime.a and
// <prefix>/include/onnxc/onnxc.h), then the build tree this compiler was built
// in (its paths are known at build time and used only when they still exist).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace onnxc {

/// The runtime files one compiler uses.
struct RuntimeFiles {
  /// libonnxc_runtime.a (position independent).
  std::string archive;
  /// The folder holding onnxc/onnxc.h and onnxc/model_abi.h.
  std::string includeDir;
};

/// The runtime next to this compiler: the installed layout relative to the
/// executable (or module) that holds this code, else this build's tree.
/// Throws onnxc::Error naming every place looked in when none has the archive.
RuntimeFiles findRuntimeFiles();

/// The file that holds this code: the onnxc executable
/// (llvm::sys::fs::getMainExecutable), or the shared object (the Python
/// module) it is linked into. Empty when neither can be told.
std::string compilerImagePath();

/// The places findRuntimeFiles() looks for the archive, in order.
std::vector<std::string> runtimeArchiveCandidates();

} // namespace onnxc
