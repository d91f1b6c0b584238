//===- tools/onnxc/VersionInfo.cpp - onnxc --version ------------------------===//
//
// What a bug report needs to reproduce a build: onnxc's version, the LLVM it
// generates code with, and the target a plain `onnxc compile` picks.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "llvm/Config/llvm-config.h"
#include "llvm/TargetParser/Host.h"

#include <iostream>

#ifndef ONNXC_VERSION
#error "tools/CMakeLists.txt defines ONNXC_VERSION as the project's version"
#endif

namespace onnxc {

std::string onnxcVersion() { return ONNXC_VERSION; }

void printVersion(std::ostream &out) {
  TargetSelection native = TargetSelection::select();
  out << "onnxc " << ONNXC_VERSION << "\n"
      << "  LLVM " << LLVM_VERSION_STRING << "\n"
      << "  target " << llvm::sys::getProcessTriple() << ", default CPU " << native.cpu()
      << " (--mcpu=native)\n";
}

} // namespace onnxc
