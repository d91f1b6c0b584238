//===- frontend/ModelFolder.h - Where a model's external data lives ---------===//
#pragma once

#include <string>
#include <vector>

namespace onnxc {

/// The folder a model's external data is resolved in (and confined to),
/// and optionally a record of every file read from it: `onnxc compile`
/// checks its outputs against those files, since writing over one would
/// destroy the weights of the model it just read.
struct ModelFolder {
  ModelFolder(std::string folder, std::vector<std::string> *read = nullptr)
      : path(std::move(folder)), filesRead(read) {}
  ModelFolder(const char *folder) : path(folder) {}

  std::string path;
  /// Where each external data file read is appended (its path inside the
  /// folder, as opened), or null.
  std::vector<std::string> *filesRead = nullptr;
};

} // namespace onnxc
