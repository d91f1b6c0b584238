//===- frontend/ModelLoader.cpp - Reading and checking a .onnx file ---------===//
#include "frontend/ModelLoader.h"

#include "ir/Error.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/stubs/logging.h>

#include <climits>
#include <filesystem>
#include <fstream>
#include <mutex>

namespace fs = std::filesystem;

namespace onnxc {

namespace {

/// protobuf prints its own parse diagnostics to stderr; onnxc reports one
/// line of its own instead, so the library's logging is switched off.
void silenceProtobufLogging() {
  static std::once_flag once;
  std::call_once(once, [] { google::protobuf::SetLogHandler(nullptr); });
}

/// Parses the whole stream into a model; the file and the in-memory entry
/// points share it, so both refuse the same inputs in the same words.
onnx::ModelProto parseModelStream(google::protobuf::io::ZeroCopyInputStream &stream) {
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  onnx::ModelProto model;
  if (!model.ParseFromCodedStream(&coded) || !coded.ConsumedEntireMessage())
    fail("not a valid ONNX model (protobuf parse failed)");
  return model;
}

void requireGraph(const onnx::ModelProto &model) {
  if (!model.has_graph())
    fail("not a valid ONNX model (no graph)");
}

} // namespace

std::string canonicalDomain(const std::string &domain) {
  return domain == "ai.onnx" ? std::string() : domain;
}

onnx::ModelProto loadModelProto(const std::string &path) {
  silenceProtobufLogging();
  std::error_code ec;
  if (!fs::exists(path, ec))
    fail("no such file");
  if (fs::is_directory(path, ec))
    fail("is a directory, not an ONNX model");
  uint64_t size = fs::file_size(path, ec);
  if (ec)
    fail("cannot read the file: ", ec.message());
  if (size == 0)
    fail("not a valid ONNX model (the file is empty)");
  // protobuf cannot parse messages of 2 GiB or more; exporters store large
  // weights as external data for exactly this reason.
  if (size >= uint64_t(INT_MAX))
    fail("the model file is 2 GiB or larger; save its weights as external data");

  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail("cannot open the file for reading");
  google::protobuf::io::IstreamInputStream rawStream(&in);
  onnx::ModelProto model = parseModelStream(rawStream);
  if (in.bad())
    fail("cannot read the file");
  requireGraph(model);
  return model;
}

onnx::ModelProto parseModelProto(const void *data, size_t size) {
  silenceProtobufLogging();
  if (size == 0)
    fail("not a valid ONNX model (the file is empty)");
  if (size >= uint64_t(INT_MAX))
    fail("the model file is 2 GiB or larger; save its weights as external data");
  google::protobuf::io::ArrayInputStream rawStream(data, int(size));
  onnx::ModelProto model = parseModelStream(rawStream);
  requireGraph(model);
  return model;
}

OpsetMap checkOpsets(const onnx::ModelProto &model) {
  // opset_import exists from IR version 3 on; older files name no opsets.
  if (model.ir_version() < 3)
    fail("ir_version ", model.ir_version(),
         " is not supported (onnxc reads ir_version 3 and later)");
  OpsetMap opsets;
  for (const onnx::OperatorSetIdProto &entry : model.opset_import()) {
    std::string domain = canonicalDomain(entry.domain());
    if (!opsets.emplace(domain, entry.version()).second)
      fail("opset_import lists domain '", domain.empty() ? "ai.onnx" : domain, "' twice");
  }
  auto it = opsets.find("");
  if (it == opsets.end())
    fail("the model imports no opset of the default domain ai.onnx");
  if (it->second < kOldestOnnxOpset || it->second > kMaxOnnxOpset)
    fail("opset ", it->second, " of ai.onnx is not supported (supported: ", kOldestOnnxOpset,
         " to ", kMaxOnnxOpset, ")");
  return opsets;
}

std::string modelFolder(const std::string &path) {
  fs::path parent = fs::path(path).parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

} // namespace onnxc
