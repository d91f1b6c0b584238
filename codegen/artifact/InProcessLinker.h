//===- codegen/artifact/InProcessLinker.h - model.so linked by lld as a library -===//
//
// `onnxc compile` links model.so without a C++ compiler on the machine: LLVM's
// ELF linker (lld, liblld-19-dev) runs inside this process on the model object,
// the runtime archive and the system's shared C and C++ runtime libraries,
// which are the ones this compiler itself runs with (found among the loaded
// objects, else in the dynamic loader's folders). Built in when CMake finds
// lld (ONNXC_HAVE_LLD); SharedLibraryLinker falls back to the compiler driver
// otherwise.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <vector>

namespace onnxc {

/// Whether this compiler was built with lld.
bool inProcessLinkerBuiltIn();

/// The shared libraries every model.so is linked against (libstdc++, libm,
/// libgcc_s, libc, the dynamic loader), by full path. Those not found are
/// named in `missing` (by soname).
std::vector<std::string> systemLinkLibraries(std::vector<std::string> &missing);

/// What an in-process link did.
struct InProcessLinkResult {
  bool succeeded = false;
  /// The linker's messages (warnings and errors), one per line.
  std::string messages;
};

/// Runs lld's ELF driver on `arguments` (without the leading program name).
/// Links take turns (lld keeps global state); after a link that lld says left
/// it unusable, the next call throws onnxc::Error, so the caller falls back.
InProcessLinkResult linkInProcess(const std::vector<std::string> &arguments);

/// Whether lld can still be called in this process (false after a crash
/// inside it, or when it is not built in).
bool inProcessLinkerUsable();

} // namespace onnxc
