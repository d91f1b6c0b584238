//===- codegen/artifact/RuntimeFiles.cpp - Where the runtime archive and headers are -===//
#include "codegen/artifact/RuntimeFiles.h"

#include "ir/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <dlfcn.h>

#ifndef ONNXC_RUNTIME_ARCHIVE
#error "codegen/CMakeLists.txt defines ONNXC_RUNTIME_ARCHIVE as the build tree's libonnxc_runtime.a"
#endif
#ifndef ONNXC_RUNTIME_INCLUDE_DIR
#error                                                                                             \
    "codegen/CMakeLists.txt defines ONNXC_RUNTIME_INCLUDE_DIR as the source tree's runtime/include"
#endif
#ifndef ONNXC_INSTALL_LIB_FROM_BIN
#error                                                                                             \
    "codegen/CMakeLists.txt defines ONNXC_INSTALL_LIB_FROM_BIN (the libdir relative to the bindir)"
#endif
#ifndef ONNXC_INSTALL_INCLUDE_FROM_BIN
#error                                                                                             \
    "codegen/CMakeLists.txt defines ONNXC_INSTALL_INCLUDE_FROM_BIN (includedir relative to bindir)"
#endif

namespace onnxc {

namespace {

constexpr const char *ArchiveName = "libonnxc_runtime.a";

/// One place the runtime may be: its archive and the include folder beside it.
struct Layout {
  std::string archive;
  std::string includeDir;
};

std::string joinPath(llvm::StringRef dir, llvm::StringRef relative, llvm::StringRef file = "") {
  llvm::SmallString<256> path(dir);
  llvm::sys::path::append(path, relative);
  if (!file.empty())
    llvm::sys::path::append(path, file);
  llvm::sys::path::remove_dots(path, /*remove_dot_dot=*/true);
  return path.str().str();
}

bool isSharedObject(llvm::StringRef path) {
  llvm::StringRef file = llvm::sys::path::filename(path);
  return file.ends_with(".so") || file.contains(".so.");
}

/// The installed layouts relative to the folder of this code's file, then the
/// build tree. The installed ones come first so that a moved or installed
/// compiler never picks up a stale build tree's runtime.
std::vector<Layout> candidateLayouts() {
  std::vector<Layout> layouts;
  std::string image = compilerImagePath();
  if (!image.empty()) {
    llvm::StringRef dir = llvm::sys::path::parent_path(image);
    if (isSharedObject(image))
      // The Python package: site-packages/onnxc/_onnxc*.so with lib/ and include/ beside it.
      layouts.push_back({joinPath(dir, "lib", ArchiveName), joinPath(dir, "include")});
    else
      // <prefix>/bin/onnxc: the runtime in <prefix>/lib, the headers in <prefix>/include.
      layouts.push_back({joinPath(dir, ONNXC_INSTALL_LIB_FROM_BIN, ArchiveName),
                         joinPath(dir, ONNXC_INSTALL_INCLUDE_FROM_BIN)});
  }
  layouts.push_back({ONNXC_RUNTIME_ARCHIVE, ONNXC_RUNTIME_INCLUDE_DIR});
  return layouts;
}

} // namespace

/// Any function of this file: its address tells dladdr which image we are in.
static void anchor() {}

std::string compilerImagePath() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void *>(&anchor), &info) != 0 && info.dli_fname && *info.dli_fname) {
    // dladdr names a shared object by the path it was loaded from; for the
    // main program it gives argv[0] or nothing, which the executable's own
    // path (/proc/self/exe) replaces.
    llvm::StringRef name(info.dli_fname);
    if (llvm::sys::path::is_absolute(name) && isSharedObject(name))
      return name.str();
  }
  return llvm::sys::fs::getMainExecutable(nullptr, reinterpret_cast<void *>(&anchor));
}

std::vector<std::string> runtimeArchiveCandidates() {
  std::vector<std::string> archives;
  for (const Layout &layout : candidateLayouts())
    archives.push_back(layout.archive);
  return archives;
}

RuntimeFiles findRuntimeFiles() {
  std::vector<Layout> layouts = candidateLayouts();
  for (const Layout &layout : layouts)
    if (llvm::sys::fs::is_regular_file(layout.archive))
      return {layout.archive, layout.includeDir};
  std::string tried;
  for (const Layout &layout : layouts)
    tried += (tried.empty() ? "" : ", ") + layout.archive;
  fail("the runtime archive ", ArchiveName, " is not installed next to this compiler (looked in ",
       tried, "); reinstall onnxc (cmake --install) or build the onnxc_runtime target");
}

} // namespace onnxc
