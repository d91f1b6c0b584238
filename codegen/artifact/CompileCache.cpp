//===- codegen/artifact/CompileCache.cpp - Machine code kept between compiles -===//
#include "codegen/artifact/CompileCache.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/CachePruning.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SHA256.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"

#include <dlfcn.h>
#include <sys/stat.h>
#include <utime.h>

#include <chrono>
#include <cstdlib>
#include <cstring>

namespace onnxc {

namespace {

/// An entry: this magic, the SHA-256 of the object, the object.
constexpr llvm::StringLiteral kMagic("ONNXCOB1");
constexpr size_t kDigestBytes = 32;
/// LLVM's pruning only looks at files named so (CachePruning.h).
constexpr llvm::StringLiteral kEntryPrefix("llvmcache-onnxc-");

/// The binary holding this code generator (the onnxc tool, the Python
/// extension, a program linking onnxc), as its path, size and modification
/// time: a rebuilt compiler keys differently.
std::string compilerIdentity() {
  static const std::string identity = [] {
    Dl_info info{};
    if (!dladdr(reinterpret_cast<void *>(&compilerIdentity), &info) || !info.dli_fname)
      return std::string("unknown binary");
    struct stat status {};
    if (stat(info.dli_fname, &status) != 0)
      return std::string(info.dli_fname);
    return std::string(info.dli_fname) + ":" + std::to_string(status.st_size) + ":" +
           std::to_string(status.st_mtim.tv_sec) + "." + std::to_string(status.st_mtim.tv_nsec);
  }();
  return identity;
}

/// What of the machine changes the code it makes, one field a line.
std::string machineDescription(const llvm::TargetMachine &machine) {
  const llvm::TargetOptions &options = machine.Options;
  std::string text;
  llvm::raw_string_ostream os(text);
  os << machine.getTargetTriple().str() << "\n"
     << machine.getTargetCPU() << "\n"
     << machine.getTargetFeatureString() << "\n"
     << int(machine.getRelocationModel()) << " " << int(machine.getCodeModel()) << " "
     << int(machine.getOptLevel()) << "\n"
     << options.UnsafeFPMath << options.NoInfsFPMath << options.NoNaNsFPMath
     << options.NoSignedZerosFPMath << options.ApproxFuncFPMath << " "
     << int(options.AllowFPOpFusion) << " " << int(options.FloatABIType) << " "
     << options.FunctionSections << options.DataSections << "\n";
  return text;
}

std::array<uint8_t, kDigestBytes> digestOf(llvm::StringRef bytes) {
  return llvm::SHA256::hash(llvm::arrayRefFromStringRef(bytes));
}

/// Prunes `folder` at most once an hour (LLVM keeps the time in a file there).
void pruneOccasionally(const std::string &folder) {
  llvm::CachePruningPolicy policy;
  policy.Interval = std::chrono::hours(1);
  policy.Expiration = std::chrono::hours(7 * 24);
  policy.MaxSizeBytes = uint64_t(4) << 30;
  policy.MaxSizePercentageOfAvailableSpace = 50;
  llvm::pruneCache(folder, policy);
}

} // namespace

CompileCache::CompileCache(std::string folder) : folder_(std::move(folder)) {}

std::optional<CompileCache> CompileCache::fromEnvironment() {
  const char *folder = std::getenv("ONNXC_CACHE_DIR");
  if (!folder || !*folder)
    return std::nullopt;
  return CompileCache(folder);
}

std::string CompileCache::key(const llvm::Module &module, const llvm::TargetMachine &machine,
                              llvm::StringRef kind) {
  llvm::SHA256 hash;
  hash.update("onnxc compile cache 1\n");
  hash.update(LLVM_VERSION_STRING "\n" ONNXC_VERSION "\n");
  hash.update(compilerIdentity() + "\n");
  hash.update(kind);
  hash.update("\n" + machineDescription(machine));
  llvm::SmallVector<char, 0> bitcode;
  llvm::raw_svector_ostream os(bitcode);
  llvm::WriteBitcodeToFile(module, os);
  hash.update(llvm::StringRef(bitcode.data(), bitcode.size()));
  return llvm::toHex(hash.final(), /*LowerCase=*/true);
}

std::string CompileCache::entryPath(const std::string &key) const {
  llvm::SmallString<256> path(folder_);
  llvm::sys::path::append(path, kEntryPrefix + key);
  return std::string(path);
}

std::unique_ptr<llvm::MemoryBuffer> CompileCache::find(const std::string &key) const {
  llvm::ErrorOr<std::unique_ptr<llvm::MemoryBuffer>> file =
      llvm::MemoryBuffer::getFile(entryPath(key), /*IsText=*/false,
                                  /*RequiresNullTerminator=*/false);
  if (!file)
    return nullptr;
  llvm::StringRef bytes = (*file)->getBuffer();
  const size_t header = kMagic.size() + kDigestBytes;
  if (bytes.size() <= header || !bytes.starts_with(kMagic))
    return nullptr;
  llvm::StringRef object = bytes.drop_front(header);
  const std::array<uint8_t, kDigestBytes> digest = digestOf(object);
  if (std::memcmp(digest.data(), bytes.data() + kMagic.size(), kDigestBytes) != 0)
    return nullptr;
  // Pruning goes by access time, which a read-only mount may not update.
  utime(entryPath(key).c_str(), nullptr);
  return llvm::MemoryBuffer::getMemBufferCopy(object, "onnxc-cache-" + key);
}

bool CompileCache::store(const std::string &key, llvm::StringRef object) const {
  // Its objects run in whoever compiles next: a folder this makes is its owner's alone.
  if (llvm::sys::fs::create_directories(folder_, /*IgnoreExisting=*/true, llvm::sys::fs::owner_all))
    return false;
  llvm::SmallString<256> model(folder_);
  llvm::sys::path::append(model, "partial-%%%%%%%%%%%%");
  llvm::Expected<llvm::sys::fs::TempFile> temporary = llvm::sys::fs::TempFile::create(model);
  if (!temporary) {
    llvm::consumeError(temporary.takeError());
    return false;
  }
  {
    llvm::raw_fd_ostream out(temporary->FD, /*shouldClose=*/false);
    const std::array<uint8_t, kDigestBytes> digest = digestOf(object);
    out << kMagic << llvm::toStringRef(llvm::ArrayRef<uint8_t>(digest)) << object;
    out.flush();
    if (out.has_error()) {
      out.clear_error();
      llvm::consumeError(temporary->discard());
      return false;
    }
  }
  if (llvm::Error error = temporary->keep(entryPath(key))) {
    llvm::consumeError(std::move(error));
    llvm::consumeError(temporary->discard());
    return false;
  }
  pruneOccasionally(folder_);
  return true;
}

} // namespace onnxc
