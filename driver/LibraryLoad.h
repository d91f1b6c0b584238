//===- driver/LibraryLoad.h - dlopen that never hands back an older file ---===//
//
// The dynamic loader keeps one copy of a library per path name: dlopen of a
// path it has loaded returns that copy, even when the file at the path has
// since been replaced (`onnxc.compile(a, output="m.so")`, then again with
// another model and the same output, while the first is still in use). The
// second model would silently run the first one's code. This loads the file
// as it is now: by its path when nothing else is loaded under that name (or
// the same file is), else a private copy in memory.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <functional>
#include <string>

namespace onnxc {

/// A loaded library: the dlopen handle and, for a private copy, the memfd
/// holding it (closed with the handle).
struct LoadedLibrary {
  void *handle = nullptr;
  int copyFd = -1;
};

/// dlopens the file open as `fd`, found at `path`, after `check`ing the
/// file that will be mapped (given its descriptor). Throws onnxc::Error
/// naming `path` when the copy or the load fails.
LoadedLibrary loadLibrary(int fd, const std::string &path,
                          const std::function<void(int fd)> &check);

/// dlcloses `library` and closes its copy.
void unloadLibrary(LoadedLibrary &library);

} // namespace onnxc
