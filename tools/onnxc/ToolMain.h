//===- tools/onnxc/ToolMain.h - The onnxc command line as a function --------===//
#pragma once

#include <string>
#include <vector>

namespace onnxc {

/// Runs the command line `onnxc ARGS...` (the arguments after the program
/// name) and returns its exit status: 0, 1 for an error, 2 for a usage
/// mistake, each reported in one line on stderr. Used by the executable's
/// main() and by the Python module's main(argv), so both are the same tool.
int runTool(const std::vector<std::string> &args);

} // namespace onnxc
