//===- driver/LibraryLoad.cpp - dlopen that never hands back an older file -===//
#include "driver/LibraryLoad.h"

#include "ir/Error.h"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace onnxc {

namespace {

/// Which file a path held when it was loaded: a replaced file has another
/// inode, a file rewritten in place another size or time.
struct FileStamp {
  dev_t device = 0;
  ino_t inode = 0;
  off_t size = 0;
  int64_t modifiedNs = 0;
  bool operator==(const FileStamp &o) const {
    return device == o.device && inode == o.inode && size == o.size && modifiedNs == o.modifiedNs;
  }
};

FileStamp stampOf(int fd, const std::string &path) {
  struct stat info {};
  if (::fstat(fd, &info) != 0)
    fail(path, ": cannot stat the model library (", std::strerror(errno), ")");
  return {info.st_dev, info.st_ino, info.st_size,
          int64_t(info.st_mtim.tv_sec) * 1000000000 + info.st_mtim.tv_nsec};
}

/// What each path this process dlopened held then (guarded by loadMutex).
std::mutex loadMutex;
std::map<std::string, FileStamp> &loadedStamps() {
  static std::map<std::string, FileStamp> stamps;
  return stamps;
}

/// Whether the loader holds a library under `loadPath` other than the file
/// stamped `stamp` (or one this process did not load itself).
bool holdsAnotherFile(const std::string &loadPath, const FileStamp &stamp) {
  void *existing = dlopen(loadPath.c_str(), RTLD_NOW | RTLD_NOLOAD);
  if (!existing)
    return false;
  dlclose(existing);
  auto it = loadedStamps().find(loadPath);
  return it == loadedStamps().end() || !(it->second == stamp);
}

/// The file open as `fd` copied into a new memfd.
int copyToMemory(int fd, const std::string &path) {
  int copy = memfd_create("onnxc-model", MFD_CLOEXEC);
  if (copy < 0)
    fail(path, ": cannot make a private copy of the model library (", std::strerror(errno), ")");
  char buffer[1 << 16];
  for (off_t offset = 0;;) {
    ssize_t got = ::pread(fd, buffer, sizeof buffer, offset);
    if (got < 0 && errno == EINTR)
      continue;
    if (got == 0)
      return copy;
    if (got < 0 || ::write(copy, buffer, size_t(got)) != got) {
      int error = errno;
      ::close(copy);
      fail(path, ": cannot make a private copy of the model library (", std::strerror(error), ")");
    }
    offset += got;
  }
}

/// dlopens the copy open as `copyFd` under a name never used before in
/// this process: the loader matches names before files, and a library
/// dlclose cannot unload (one with thread-local destructors pending) keeps
/// its name, so a reused /proc/self/fd/N could hand back an old copy. The
/// name is a symlink to the copy, in a fresh folder, removed once loaded.
void *openCopy(int copyFd, const std::string &path) {
  static std::atomic<uint64_t> loads{0};
  const char *tmp = std::getenv("TMPDIR");
  std::string folder = std::string(tmp && *tmp ? tmp : "/tmp") + "/onnxc-load-XXXXXX";
  if (!::mkdtemp(folder.data()))
    fail(path, ": cannot make a folder for a private copy of the model library (",
         std::strerror(errno), ")");
  std::string base = path.substr(path.find_last_of('/') + 1);
  std::string link = folder + "/" + std::to_string(loads++) + "-" + base;
  void *handle = nullptr;
  std::string error;
  if (::symlink(("/proc/self/fd/" + std::to_string(copyFd)).c_str(), link.c_str()) != 0) {
    error = std::strerror(errno);
  } else {
    handle = dlopen(link.c_str(), RTLD_NOW | RTLD_LOCAL);
    const char *why = handle ? nullptr : dlerror();
    error = why ? why : "unknown reason";
    ::unlink(link.c_str());
  }
  ::rmdir(folder.c_str());
  if (!handle)
    fail(path, ": cannot load the model library (", error, ")");
  return handle;
}

void *openOrFail(const std::string &name, const std::string &path) {
  void *handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *why = dlerror();
    fail(path, ": cannot load the model library (", why ? why : "unknown reason", ")");
  }
  return handle;
}

} // namespace

LoadedLibrary loadLibrary(int fd, const std::string &path,
                          const std::function<void(int fd)> &check) {
  // dlopen searches the library path for names without a slash.
  std::string loadPath = path.find('/') == std::string::npos ? "./" + path : path;
  FileStamp stamp = stampOf(fd, path);
  std::lock_guard<std::mutex> lock(loadMutex);
  LoadedLibrary library;
  if (!holdsAnotherFile(loadPath, stamp)) {
    // By path, so that profilers and debuggers see the library's real
    // name. The check guards against accidents (a cut copy, a wrong
    // file); whoever can swap the file in between can as well write a
    // library that passes it, and loading a library runs its code anyway.
    check(fd);
    library.handle = openOrFail(loadPath, path);
    loadedStamps()[loadPath] = stamp;
    return library;
  }
  library.copyFd = copyToMemory(fd, path);
  try {
    check(library.copyFd);
    library.handle = openCopy(library.copyFd, path);
  } catch (...) {
    ::close(library.copyFd);
    throw;
  }
  return library;
}

void unloadLibrary(LoadedLibrary &library) {
  if (library.handle)
    dlclose(library.handle);
  if (library.copyFd >= 0)
    ::close(library.copyFd);
  library = LoadedLibrary{};
}

} // namespace onnxc
