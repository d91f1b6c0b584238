//===- frontend/ExternalData.cpp - Tensor bytes stored beside the model -----===//
//
// A model file is untrusted input, and an external-data location is a path
// it chooses. Resolving it naively would let a model read any file the user
// can (`../../home/me/.ssh/id_rsa`, `/etc/shadow`, or a symlink to either),
// so the file read must lie inside the model's folder.
//
// A path check alone cannot promise that: a hard link inside the folder is
// the outside file under another name, and the path can be swapped for a
// link between the check and the open. So the path is checked (to refuse the
// obvious escapes without touching the target), then opened, and then the
// opened file itself is checked: a regular file with exactly one name, and
// that name is the inside path (same device and inode), so the bytes read
// come from a file that lives in the folder and nowhere else.
//
//===----------------------------------------------------------------------===//
#include "frontend/ExternalData.h"

#include "ir/Error.h"

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <optional>
#include <sys/stat.h>
#include <unistd.h>

namespace fs = std::filesystem;

namespace onnxc {

namespace {

struct ExternalRef {
  std::string location;
  uint64_t offset = 0;
  std::optional<uint64_t> length;
};

uint64_t parseByteCount(const std::string &text, const char *key, const std::string &context) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size() || text.empty())
    fail(context, ": external data ", key, " '", text, "' is not a non-negative integer");
  return value;
}

ExternalRef parseExternalRef(const onnx::TensorProto &proto, const std::string &context) {
  ExternalRef ref;
  // A key given twice makes the tensor ambiguous (two locations: which
  // file?), so it is refused rather than resolved by order.
  std::vector<std::string> seen;
  for (const onnx::StringStringEntryProto &entry : proto.external_data()) {
    if (std::find(seen.begin(), seen.end(), entry.key()) != seen.end())
      fail(context, ": external data key '", entry.key(), "' is given twice");
    seen.push_back(entry.key());
    if (entry.key() == "location")
      ref.location = entry.value();
    else if (entry.key() == "offset")
      ref.offset = parseByteCount(entry.value(), "offset", context);
    else if (entry.key() == "length")
      ref.length = parseByteCount(entry.value(), "length", context);
    // "checksum" and unknown keys carry nothing we need.
  }
  if (ref.location.empty())
    fail(context, ": external data has no location");
  return ref;
}

/// Whether `target` (canonical) names something strictly inside `folder`.
bool liesInside(const fs::path &target, const fs::path &folder) {
  fs::path inside = target.lexically_relative(folder);
  return !inside.empty() && *inside.begin() != ".." && inside != ".";
}

/// The model folder, canonical (the reference every resolved path is
/// compared with).
fs::path canonicalFolder(const std::string &modelDir, const std::string &context) {
  std::error_code ec;
  fs::path folder = fs::weakly_canonical(fs::path(modelDir.empty() ? "." : modelDir), ec);
  if (ec)
    fail(context, ": cannot resolve the model folder '", modelDir, "': ", ec.message());
  return folder;
}

/// The file `location` names, checked by path to lie inside `folder`.
fs::path resolveInsideFolder(const std::string &location, const fs::path &folder,
                             const std::string &context) {
  if (location.find('\0') != std::string::npos)
    fail(context, ": external data path contains a NUL byte");
  fs::path relative(location);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory())
    fail(context, ": external data path '", location,
         "' is absolute; it must be relative to the model folder");
  // weakly_canonical follows symlinks in the existing part of the path and
  // folds `..`, so a link or a `..` leading out of the folder shows up as a
  // relative path that starts with `..`.
  std::error_code ec;
  fs::path target = fs::weakly_canonical(folder / relative, ec);
  if (ec)
    fail(context, ": cannot resolve external data path '", location, "': ", ec.message());
  if (!liesInside(target, folder))
    fail(context, ": external data path '", location, "' escapes the model folder");
  return target;
}

/// Closes a descriptor when it goes out of scope.
struct FileDescriptor {
  int fd = -1;
  ~FileDescriptor() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Opens `path` for reading without blocking (a FIFO would otherwise wait
/// for a writer forever) and without making a terminal ours.
int openForReading(const fs::path &path, const std::string &location, const std::string &context) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd >= 0)
    return fd;
  int error = errno;
  if (error == ENOENT || error == ENOTDIR)
    fail(context, ": external data file '", location, "' does not exist");
  fail(context, ": cannot open external data file '", location, "': ", std::strerror(error));
}

/// Checks the opened file: a regular file whose one and only name is the
/// path inside `folder` it was opened by. Returns its size.
uint64_t checkOpenedFile(int fd, const std::string &location, const fs::path &folder,
                         const std::string &context) {
  struct stat opened {};
  if (::fstat(fd, &opened) != 0)
    fail(context, ": cannot stat external data file '", location, "': ", std::strerror(errno));
  if (!S_ISREG(opened.st_mode))
    fail(context, ": external data file '", location, "' is not a regular file");
  if (opened.st_nlink != 1)
    fail(context, ": external data file '", location, "' has ", uint64_t(opened.st_nlink),
         " hard links, so it may live outside the model folder; copy it into the folder");
  // Resolve the path again now that the file is open: if what it names
  // today is the very inode we hold, and that inode has a single name, the
  // bytes we read belong to a file inside the folder, whatever was swapped
  // in or out before the open.
  std::error_code ec;
  fs::path now = fs::canonical(folder / fs::path(location), ec);
  struct stat named {};
  if (ec || !liesInside(now, folder) || ::stat(now.c_str(), &named) != 0 ||
      named.st_dev != opened.st_dev || named.st_ino != opened.st_ino)
    fail(context, ": external data file '", location,
         "' changed while it was opened, or lies outside the model folder");
  return uint64_t(opened.st_size);
}

/// Reads `length` bytes at `offset`, retrying short reads.
std::string readRange(int fd, uint64_t offset, uint64_t length, const std::string &location,
                      const std::string &context) {
  std::string bytes(length, '\0');
  uint64_t done = 0;
  while (done < length) {
    ssize_t got = ::pread(fd, bytes.data() + done, size_t(length - done), off_t(offset + done));
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      fail(context, ": cannot read external data file '", location, "': ", std::strerror(errno));
    if (got == 0)
      fail(context, ": short read from external data file '", location, "'");
    done += uint64_t(got);
  }
  return bytes;
}

} // namespace

std::string readExternalData(const onnx::TensorProto &proto, const ModelFolder &modelDir,
                             size_t expectedBytes, const std::string &context) {
  ExternalRef ref = parseExternalRef(proto, context);
  fs::path folder = canonicalFolder(modelDir.path, context);
  fs::path path = resolveInsideFolder(ref.location, folder, context);

  FileDescriptor file{openForReading(path, ref.location, context)};
  if (modelDir.filesRead)
    modelDir.filesRead->push_back(path.string());
  uint64_t fileSize = checkOpenedFile(file.fd, ref.location, folder, context);

  uint64_t length = ref.length.value_or(expectedBytes);
  if (length != expectedBytes)
    fail(context, ": external data length ", length, " does not match the ", expectedBytes,
         " bytes the dims and dtype need");
  if (ref.offset > fileSize || length > fileSize - ref.offset)
    // Offset and length as written: their sum may not fit 64 bits.
    fail(context, ": external data at offset ", ref.offset, " of length ", length,
         " is past the end of '", ref.location, "' (", fileSize, " bytes)");

  return readRange(file.fd, ref.offset, length, ref.location, context);
}

} // namespace onnxc
