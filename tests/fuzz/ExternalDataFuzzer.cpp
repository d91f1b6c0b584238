//===- tests/fuzz/ExternalDataFuzzer.cpp - External-data paths from a model ===//
//
// Input: one byte giving a count P (0 to 3), P lines of relative paths, then
// the bytes of a .onnx file. Every initializer stored as external data gets
// the paths in turn as its `location`. The model folder is a temporary one
// the harness lays out at start:
//
//   ROOT/outside.bin, ROOT/outside/secret.bin   files outside the folder,
//                                               every byte 0xA5
//   ROOT/model/weights.bin, sub/w.bin, empty    data files, bytes < 0x80
//   ROOT/model/link_in -> weights.bin           a symlink that stays inside
//   ROOT/model/link_out -> ../outside.bin       symlinks that lead out
//   ROOT/model/dir_out -> ../outside
//   ROOT/model/abs_out -> ROOT/outside/secret.bin
//   ROOT/model/loop -> loop, ROOT/model/pipe    a symlink loop, a FIFO
//   ROOT/model/hard                             a hard link to outside.bin
//                                               (ONNXC_FUZZ_HARD_LINK=0: none)
//
// Each external tensor is read with readExternalData, then the whole model
// is imported from the folder. What must hold: a read that succeeds returns
// no 0xA5 byte, and the file it names resolves (realpath) to a file inside
// the folder that is none of the outside files; nothing blocks on the FIFO.
//
//===----------------------------------------------------------------------===//
#include "FuzzSupport.h"

#include "frontend/ExternalData.h"
#include "frontend/GraphImporter.h"
#include "frontend/ModelLoader.h"
#include "frontend/TensorProto.h"
#include "ir/Error.h"

#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <vector>

namespace fs = std::filesystem;
using namespace onnxc;

namespace {

constexpr char kOutsideByte = char(0xA5);

struct Layout {
  std::string root, folder, folderReal;
  std::vector<ino_t> outsideInodes;
};

void makeSymlink(const std::string &target, const std::string &link) {
  if (symlink(target.c_str(), link.c_str()) != 0) {
    std::perror(("fuzz: symlink " + link).c_str());
    std::exit(2);
  }
}

std::string realPath(const std::string &path) {
  char buffer[PATH_MAX];
  return realpath(path.c_str(), buffer) ? std::string(buffer) : std::string();
}

Layout makeLayout() {
  Layout layout;
  layout.root = fuzz::makeTempDir("onnxc-fuzz-external-");
  layout.folder = layout.root + "/model";
  fs::create_directories(layout.folder + "/sub");
  fs::create_directories(layout.root + "/outside");
  std::string secret(4096, kOutsideByte);
  fuzz::writeFile(layout.root + "/outside.bin", secret);
  fuzz::writeFile(layout.root + "/outside/secret.bin", secret);
  std::string inside(4096, '\0');
  for (size_t i = 0; i < inside.size(); ++i)
    inside[i] = char(i % 0x80);
  fuzz::writeFile(layout.folder + "/weights.bin", inside);
  fuzz::writeFile(layout.folder + "/sub/w.bin", inside.substr(0, 1024));
  fuzz::writeFile(layout.folder + "/empty", "");
  makeSymlink("weights.bin", layout.folder + "/link_in");
  makeSymlink("../outside.bin", layout.folder + "/link_out");
  makeSymlink("../outside", layout.folder + "/dir_out");
  makeSymlink(layout.root + "/outside/secret.bin", layout.folder + "/abs_out");
  makeSymlink("loop", layout.folder + "/loop");
  if (mkfifo((layout.folder + "/pipe").c_str(), 0600) != 0) {
    std::perror("fuzz: mkfifo");
    std::exit(2);
  }
  const char *hardLink = std::getenv("ONNXC_FUZZ_HARD_LINK");
  if (!hardLink || std::string(hardLink) != "0")
    fs::create_hard_link(layout.root + "/outside.bin", layout.folder + "/hard");
  for (const char *outside : {"/outside.bin", "/outside/secret.bin"}) {
    struct stat info;
    if (stat((layout.root + outside).c_str(), &info) == 0)
      layout.outsideInodes.push_back(info.st_ino);
  }
  layout.folderReal = realPath(layout.folder);
  return layout;
}

const Layout &layout() {
  static const Layout instance = makeLayout();
  return instance;
}

std::string locationOf(const onnx::TensorProto &proto) {
  for (const onnx::StringStringEntryProto &entry : proto.external_data())
    if (entry.key() == "location")
      return entry.value();
  return "";
}

void setLocation(onnx::TensorProto &proto, const std::string &location) {
  for (onnx::StringStringEntryProto &entry : *proto.mutable_external_data())
    if (entry.key() == "location") {
      entry.set_value(location);
      return;
    }
  onnx::StringStringEntryProto *entry = proto.add_external_data();
  entry->set_key("location");
  entry->set_value(location);
}

/// The byte count the dims and dtype ask for, or 0 when it is not small
/// and well defined (the importer's own checks then get the tensor).
size_t smallExpectedBytes(const onnx::TensorProto &proto) {
  size_t elements = 1;
  for (int64_t d : proto.dims()) {
    if (d < 0 || d > 4096)
      return 0;
    elements *= size_t(d);
    if (elements > 4096)
      return 0;
  }
  try {
    return elements * dtypeSize(dtypeFromOnnx(proto.data_type(), "fuzz"));
  } catch (const Error &) {
    return 0;
  }
}

/// Reads one tensor's bytes directly and checks where they came from.
void checkDirectRead(const onnx::TensorProto &proto) {
  size_t expected = smallExpectedBytes(proto);
  if (expected == 0)
    return;
  std::string bytes;
  try {
    bytes = readExternalData(proto, layout().folder, expected, "initializer");
  } catch (const Error &) {
    return;
  }
  std::string location = locationOf(proto);
  if (bytes.find(kOutsideByte) != std::string::npos)
    fuzz::finding("external data '" + location + "' read bytes of a file outside the model folder");
  std::string resolved = realPath(layout().folder + "/" + location);
  if (resolved.empty())
    fuzz::finding("external data '" + location + "' was read although realpath cannot resolve it");
  if (resolved.compare(0, layout().folderReal.size() + 1, layout().folderReal + "/") != 0)
    fuzz::finding("external data '" + location + "' was read from '" + resolved +
                  "', outside the model folder " + layout().folderReal);
  struct stat info;
  if (stat(resolved.c_str(), &info) != 0 || !S_ISREG(info.st_mode))
    fuzz::finding("external data '" + location + "' was read from something not a regular file");
  for (ino_t inode : layout().outsideInodes)
    if (info.st_ino == inode)
      fuzz::finding("external data '" + location +
                    "' was read from a link to a file outside "
                    "the model folder");
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  fuzz::limitMemory();
  layout();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz::ByteReader reader(data, size);
  std::vector<std::string> paths(reader.below(4));
  for (std::string &path : paths)
    path = reader.line(256);
  std::string_view modelBytes = reader.rest();

  onnx::ModelProto model;
  try {
    model = parseModelProto(modelBytes.data(), modelBytes.size());
  } catch (const Error &) {
    return 0;
  }
  size_t next = 0;
  for (onnx::TensorProto &init : *model.mutable_graph()->mutable_initializer()) {
    if (init.data_location() != onnx::TensorProto::EXTERNAL)
      continue;
    if (!paths.empty())
      setLocation(init, paths[next++ % paths.size()]);
    checkDirectRead(init);
  }
  try {
    OpsetMap opsets = checkOpsets(model);
    importGraph(model.graph(), opsets, layout().folder);
  } catch (const Error &) {
  }
  return 0;
}
