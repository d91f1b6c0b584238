//===- driver/FileIdentity.cpp - Do two paths name one file? ---------------===//
#include "driver/FileIdentity.h"

#include <filesystem>
#include <sys/stat.h>

namespace fs = std::filesystem;

namespace onnxc {

FileIdentity fileIdentity(const std::string &path) {
  FileIdentity identity;
  struct stat info {};
  if (::stat(path.c_str(), &info) == 0) {
    identity.exists = true;
    identity.device = info.st_dev;
    identity.inode = info.st_ino;
    return identity;
  }
  // Nothing there yet, or a dangling symlink: writing follows the links, so
  // follow them too (bounded, like the kernel's limit on link chains).
  std::error_code ec;
  fs::path at = fs::absolute(path, ec);
  for (int hops = 0; hops < 40 && fs::is_symlink(fs::symlink_status(at, ec)); ++hops) {
    fs::path target = fs::read_symlink(at, ec);
    if (ec)
      break;
    at = target.is_absolute() ? target : at.parent_path() / target;
  }
  fs::path resolved = fs::weakly_canonical(at, ec);
  identity.path = (ec ? at.lexically_normal() : resolved).string();
  return identity;
}

} // namespace onnxc
