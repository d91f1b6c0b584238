//===- python/staticllvm/NoPolly.cpp - Polly's entry point, without Polly ---===//
//
// Debian's LLVM is built with Polly linked into its tools, so LLVM's LTO
// library (which lld's ELF driver pulls in) names Polly's plugin entry point.
// libLLVM-19.so carries Polly; the static archives do not (libPolly.a is not
// shipped), so a module linked with them (ONNXC_STATIC_LLVM) provides the
// entry point itself: a plugin that registers nothing. onnxc never runs LTO
// (lld links object files), and with it Polly would only have been off by
// default anyway.
//
//===----------------------------------------------------------------------===//
#include "llvm/Passes/PassPlugin.h"

llvm::PassPluginLibraryInfo getPollyPluginInfo() {
  return {LLVM_PLUGIN_API_VERSION, "Polly (not linked)", "none", [](llvm::PassBuilder &) {}};
}
