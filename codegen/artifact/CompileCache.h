//===- codegen/artifact/CompileCache.h - Machine code kept between compiles -===//
//
// LLVM's optimizer and code generator are most of a compile's time, and the
// same module is often compiled again: `onnxc run` of the same model, a
// library rebuilt under another name, a test suite compiling one model in
// several tests. With $ONNXC_CACHE_DIR set (for the tool, the Python module
// and any program linking the compiler alike), the object code of every
// module is kept in that folder, under a key of everything that determines
// it:
//
//   - the module as lowered (its bitcode, before -O3), which holds every
//     kernel, shape and constant the code depends on (weights bound by
//     symbol are not part of the code);
//   - the target machine: triple, CPU, features, relocation and code model,
//     optimization level and the floating-point options;
//   - the compiler: LLVM's version, onnxc's version, and the size and time
//     of the binary holding onnxc's code generator (as ccache checks a
//     compiler by default), so a rebuilt onnxc never reads another's code.
//
// A hit skips optimization and code generation; the object is the same
// bytes a miss would have made. Entries are written whole (a temporary file
// renamed into place) and carry a SHA-256 of their contents, checked on
// every read: a truncated or altered entry is a miss, never code that runs.
// The folder is pruned with LLVM's cache pruning (entries unused for a week
// go, and the oldest past 4 GiB), at most once an hour.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"

#include <memory>
#include <optional>
#include <string>

namespace llvm {
class MemoryBuffer;
class Module;
class TargetMachine;
} // namespace llvm

namespace onnxc {

class CompileCache {
public:
  /// The cache in `folder`, made on the first store if it does not exist.
  explicit CompileCache(std::string folder);

  /// The cache of $ONNXC_CACHE_DIR, or none when it is unset or empty.
  static std::optional<CompileCache> fromEnvironment();

  /// The key of `module` (as lowered, before optimization) compiled by
  /// `machine` into an object of `kind` ("object" for a file, "jit").
  static std::string key(const llvm::Module &module, const llvm::TargetMachine &machine,
                         llvm::StringRef kind);

  /// The object stored under `key`, or null (none, or not intact).
  std::unique_ptr<llvm::MemoryBuffer> find(const std::string &key) const;

  /// Stores `object` under `key`. Returns false (and leaves the cache as
  /// it was) when the folder cannot be written: a cache is an optimization,
  /// and a compile never fails for it.
  bool store(const std::string &key, llvm::StringRef object) const;

  const std::string &folder() const { return folder_; }

private:
  std::string entryPath(const std::string &key) const;

  std::string folder_;
};

} // namespace onnxc
