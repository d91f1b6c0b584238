//===- tools/onnxc/ModelFiles.h - What a command's file arguments accept ----===//
//
// The checks every subcommand makes on the files it is given, before any
// work, so that the message says what the user did: a folder where a model
// belongs, an .npy passed as the model, a compiled model.so given options
// that only apply when compiling, an -o into a folder that does not exist
// (not, later, an internal temporary file that could not be created).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "tools/onnxc/CommandLine.h"

#include <string>

namespace onnxc {

/// The model file kinds a command reads.
enum class ModelKinds {
  /// .onnx and .ir (dump, compile).
  Graphs,
  /// .onnx, .ir and a compiled .so (run, bench).
  GraphsAndLibraries,
};

/// Throws onnxc::Error naming `path` when it does not exist, is a folder or
/// another non-regular file, or has an extension `command` does not read
/// (an .npy gets a hint that it is an input).
void checkModelFile(const std::string &path, const std::string &command, ModelKinds kinds);

/// Throws onnxc::Error when `path` cannot be created or replaced as a file:
/// it is a folder, or the folder it would go in does not exist or is not a
/// folder. `option` ("-o", "--header") starts the message.
void checkOutputFile(const std::string &option, const std::string &path);

/// For a model that is already compiled: throws UsageError listing the
/// options given that only apply when compiling (-O, --passes, --stats,
/// --mcpu, ...), since a .so cannot honour them and silence would mislead.
void refuseCompileOptions(const ParsedArgs &args, const std::string &path,
                          const std::string &command);

} // namespace onnxc
