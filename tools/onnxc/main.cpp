//===- tools/onnxc/main.cpp - The onnxc executable --------------------------===//
//
// The command line itself is tools/onnxc/ToolMain.cpp (library onnxc_cli), which
// the Python module links too.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/ToolMain.h"

#include <iostream>

int main(int argc, char **argv) {
  // Only the executable owns the process's streams; the Python module leaves them synced.
  std::ios::sync_with_stdio(false);
  return onnxc::runTool(std::vector<std::string>(argv + 1, argv + argc));
}
