//===- driver/FileIdentity.h - Do two paths name one file? -----------------===//
//
// `compile m.onnx -o ./m.onnx`, a --header that is a symlink to the library,
// a hard link: the spellings differ, the file is one, and writing both would
// silently destroy one of them. Paths are compared by what they name.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <sys/types.h>

namespace onnxc {

/// What writing to a path would write to: the device and inode of an
/// existing file (any spelling, symlink or hard link of it matches), else
/// the absolute normalized path after following symlinks as far as they go
/// (so a dangling link matches the file it will create).
struct FileIdentity {
  bool exists = false;
  dev_t device = 0;
  ino_t inode = 0;
  std::string path;

  bool operator==(const FileIdentity &other) const {
    if (exists != other.exists)
      return false;
    return exists ? device == other.device && inode == other.inode : path == other.path;
  }
};

FileIdentity fileIdentity(const std::string &path);

} // namespace onnxc
