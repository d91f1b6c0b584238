//===- frontend/ExternalData.cpp - Tensor bytes stored beside the model -----===//
//
// A model file is untrusted input, and an external-data location is a path
// it chooses. Resolving it naively would let a model read any file the user
// can (`../../home/me/.ssh/id_rsa`, `/etc/shadow`, or a symlink to either),
// so the resolved path must stay inside the model's folder.
//
//===----------------------------------------------------------------------===//
#include "frontend/ExternalData.h"

#include "ir/Error.h"

#include <charconv>
#include <filesystem>
#include <fstream>
#include <optional>

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
  for (const onnx::StringStringEntryProto &entry : proto.external_data()) {
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

/// The file `location` names, checked to lie inside `modelDir`.
fs::path resolveInsideFolder(const std::string &location, const std::string &modelDir,
                             const std::string &context) {
  if (location.find('\0') != std::string::npos)
    fail(context, ": external data path contains a NUL byte");
  fs::path relative(location);
  if (relative.is_absolute() || relative.has_root_name() || relative.has_root_directory())
    fail(context, ": external data path '", location,
         "' is absolute; it must be relative to the model folder");
  std::error_code ec;
  fs::path folder = fs::weakly_canonical(fs::path(modelDir.empty() ? "." : modelDir), ec);
  if (ec)
    fail(context, ": cannot resolve the model folder '", modelDir, "': ", ec.message());
  // weakly_canonical follows symlinks in the existing part of the path and
  // folds `..`, so a link or a `..` leading out of the folder shows up as a
  // relative path that starts with `..`.
  fs::path target = fs::weakly_canonical(folder / relative, ec);
  if (ec)
    fail(context, ": cannot resolve external data path '", location, "': ", ec.message());
  fs::path inside = target.lexically_relative(folder);
  if (inside.empty() || *inside.begin() == ".." || inside == ".")
    fail(context, ": external data path '", location, "' escapes the model folder");
  return target;
}

} // namespace

std::string readExternalData(const onnx::TensorProto &proto, const std::string &modelDir,
                             size_t expectedBytes, const std::string &context) {
  ExternalRef ref = parseExternalRef(proto, context);
  fs::path file = resolveInsideFolder(ref.location, modelDir, context);

  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    fail(context, ": external data file '", ref.location, "' does not exist or is not a file");
  uint64_t fileSize = fs::file_size(file, ec);
  if (ec)
    fail(context, ": cannot read external data file '", ref.location, "': ", ec.message());

  uint64_t length = ref.length.value_or(expectedBytes);
  if (length != expectedBytes)
    fail(context, ": external data length ", length, " does not match the ", expectedBytes,
         " bytes the dims and dtype need");
  if (ref.offset > fileSize || length > fileSize - ref.offset)
    fail(context, ": external data range [", ref.offset, ", ", ref.offset + length,
         ") is past the end of '", ref.location, "' (", fileSize, " bytes)");

  std::ifstream in(file, std::ios::binary);
  if (!in)
    fail(context, ": cannot open external data file '", ref.location, "'");
  std::string bytes(length, '\0');
  in.seekg(std::streamoff(ref.offset));
  in.read(bytes.data(), std::streamsize(length));
  if (uint64_t(in.gcount()) != length)
    fail(context, ": short read from external data file '", ref.location, "'");
  return bytes;
}

} // namespace onnxc
