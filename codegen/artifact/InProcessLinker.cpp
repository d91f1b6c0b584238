//===- codegen/artifact/InProcessLinker.cpp - model.so linked by lld as a library -===//
#include "codegen/artifact/InProcessLinker.h"

#include "ir/Error.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <atomic>
#include <cstring>
#include <elf.h>
#include <fstream>
#include <link.h>
#include <map>
#include <mutex>

#ifdef ONNXC_HAVE_LLD
#include "lld/Common/Driver.h"
#include "llvm/Support/CrashRecoveryContext.h"
LLD_HAS_DRIVER(elf)
#endif

namespace onnxc {

namespace {

/// The runtime's and the C++ standard library's needs: libstdc++ and the
/// unwinder (exceptions inside the runtime), libm, libc and the dynamic
/// loader (__tls_get_addr of thread_local). libpthread is empty on glibc 2.34
/// and later; on older ones it holds the thread functions. The optional ones
/// are linked when this process has them loaded (so they exist and are the
/// right architecture). Linked with --as-needed, so the library records only
/// those it uses.
constexpr const char *RequiredLibraries[] = {"libstdc++.so.6", "libm.so.6", "libgcc_s.so.1",
                                             "libc.so.6"};
constexpr const char *OptionalLibraries[] = {"libpthread.so.0", "ld-linux-x86-64.so.2",
                                             "ld-linux-aarch64.so.1"};

/// soname -> path of every shared object loaded in this process: this
/// compiler runs with the very C and C++ runtimes a model needs, so they are
/// on the machine, in the versions its code was built against.
std::map<std::string, std::string> loadedLibraries() {
  std::map<std::string, std::string> loaded;
  dl_iterate_phdr(
      [](struct dl_phdr_info *info, size_t, void *data) {
        if (info->dlpi_name && *info->dlpi_name == '/') {
          auto &map = *static_cast<std::map<std::string, std::string> *>(data);
          map.emplace(llvm::sys::path::filename(info->dlpi_name).str(), info->dlpi_name);
        }
        return 0;
      },
      &loaded);
  return loaded;
}

/// The dynamic loader's folders: /etc/ld.so.conf.d/*.conf, then the usual
/// multiarch and plain library folders.
std::vector<std::string> loaderSearchDirs() {
  std::vector<std::string> dirs;
  std::error_code error;
  for (llvm::sys::fs::directory_iterator it("/etc/ld.so.conf.d", error), end; !error && it != end;
       it.increment(error)) {
    if (!llvm::StringRef(it->path()).ends_with(".conf"))
      continue;
    llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
        llvm::MemoryBuffer::getFile(it->path());
    if (!file)
      continue;
    llvm::SmallVector<llvm::StringRef, 8> lines;
    (*file)->getBuffer().split(lines, '\n', -1, false);
    for (llvm::StringRef line : lines) {
      line = line.split('#').first.trim();
      if (line.starts_with("/"))
        dirs.push_back(line.str());
    }
  }
  for (const char *dir :
       {"/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib/aarch64-linux-gnu",
        "/usr/lib/aarch64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib"})
    dirs.push_back(dir);
  return dirs;
}

/// Whether `path` is an ELF file of this process's class and machine (the
/// loader's folders hold 32-bit libraries too: /lib32).
bool isNativeElf(const std::string &path) {
  ElfW(Ehdr) header;
  std::ifstream in(path, std::ios::binary);
  if (!in.read(reinterpret_cast<char *>(&header), sizeof header))
    return false;
#if defined(__x86_64__)
  constexpr int Machine = EM_X86_64;
#elif defined(__aarch64__)
  constexpr int Machine = EM_AARCH64;
#else
  constexpr int Machine = -1;
#endif
  constexpr unsigned char Class = sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32;
  return std::memcmp(header.e_ident, ELFMAG, SELFMAG) == 0 && header.e_ident[EI_CLASS] == Class &&
         (Machine < 0 || header.e_machine == Machine);
}

std::string findLibrary(const std::string &soname, const std::map<std::string, std::string> &loaded,
                        const std::vector<std::string> &dirs) {
  if (auto it = loaded.find(soname); it != loaded.end() && isNativeElf(it->second))
    return it->second;
  for (const std::string &dir : dirs) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, soname);
    if (isNativeElf(path.str().str()))
      return path.str().str();
  }
  return "";
}

std::mutex linkMutex;
std::atomic<bool> lldBroken{false};

} // namespace

bool inProcessLinkerBuiltIn() {
#ifdef ONNXC_HAVE_LLD
  return true;
#else
  return false;
#endif
}

bool inProcessLinkerUsable() { return inProcessLinkerBuiltIn() && !lldBroken.load(); }

std::vector<std::string> systemLinkLibraries(std::vector<std::string> &missing) {
  std::map<std::string, std::string> loaded = loadedLibraries();
  std::vector<std::string> dirs = loaderSearchDirs();
  std::vector<std::string> paths;
  for (const char *soname : RequiredLibraries) {
    std::string path = findLibrary(soname, loaded, dirs);
    if (path.empty())
      missing.push_back(soname);
    else
      paths.push_back(path);
  }
  for (const char *soname : OptionalLibraries)
    if (auto it = loaded.find(soname); it != loaded.end() && isNativeElf(it->second))
      paths.push_back(it->second);
  return paths;
}

InProcessLinkResult linkInProcess(const std::vector<std::string> &arguments) {
#ifdef ONNXC_HAVE_LLD
  std::lock_guard<std::mutex> lock(linkMutex);
  if (lldBroken)
    fail("lld cannot be called again in this process (an earlier link crashed inside it)");
  std::vector<const char *> argv{"ld.lld"};
  for (const std::string &argument : arguments)
    argv.push_back(argument.c_str());
  std::string messages;
  llvm::raw_string_ostream stream(messages);
  // lld reports a fatal error by unwinding to its crash-recovery context; a
  // context that is not enabled would make it end the whole process instead.
  // Enabled only for the link: it installs process-wide signal handlers.
  llvm::CrashRecoveryContext::Enable();
  lld::Result result = lld::lldMain(argv, stream, stream, {{lld::Gnu, &lld::elf::link}});
  llvm::CrashRecoveryContext::Disable();
  if (!result.canRunAgain)
    lldBroken = true;
  stream.flush();
  return {result.retCode == 0, messages};
#else
  (void)arguments;
  fail("this onnxc was built without lld (install liblld-19-dev and re-run cmake)");
#endif
}

} // namespace onnxc
