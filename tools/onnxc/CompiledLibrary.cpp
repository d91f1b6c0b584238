//===- tools/onnxc/CompiledLibrary.cpp - Load a model.so written by compile ===//

#include "tools/onnxc/CompiledLibrary.h"

#include "codegen/artifact/DescriptorEmitter.h"
#include "ir/Error.h"
#include "runtime/DescriptorCheck.h"
#include "tools/onnxc/LibraryFileCheck.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <filesystem>
#include <unistd.h>

namespace onnxc {

namespace {

/// Decodes one dim expression of model_abi.h into a Dim over the model's
/// symbol names.
Dim decodeDim(const onnxc_model_descriptor &model, onnxc_dim_expr words) {
  Dim result(0);
  int64_t terms = words[0];
  size_t at = 1;
  for (int64_t t = 0; t < terms; ++t) {
    Dim term(words[at]);
    int64_t degree = words[at + 1];
    at += 2;
    for (int64_t d = 0; d < degree; ++d, ++at) {
      int64_t symbol = words[at];
      if (symbol < 0 || symbol >= model.num_symbols)
        fail("model library: a dim refers to symbol ", symbol, " of ", model.num_symbols);
      term = term * Dim::symbol(model.symbol_names[symbol]);
    }
    result = result + term;
  }
  return result;
}

/// Closes a descriptor when it goes out of scope.
struct OpenFile {
  int fd = -1;
  ~OpenFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

bool isCompiledLibraryPath(const std::string &path) {
  std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".so" || extension == ".dylib";
}

CompiledLibrary::CompiledLibrary(const std::string &path) {
  OpenFile file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0) {
    if (errno == ENOENT)
      fail(path, ": no such file");
    fail(path, ": cannot open the model library (", std::strerror(errno), ")");
  }
  checkModelLibraryFile(file.fd, path, GenericDescriptorAccessor);
  // dlopen by path, not /proc/self/fd/N, so profilers and debuggers see the
  // library's real name. The check guards against accidents (a cut copy, a
  // wrong file); whoever can swap the file in between can as well write a
  // library that passes it, and loading a library runs its code anyway.
  // dlopen searches the library path for names without a slash.
  std::string loadPath = path.find('/') == std::string::npos ? "./" + path : path;
  handle_ = dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *why = dlerror();
    fail(path, ": cannot load the model library (", why ? why : "unknown reason", ")");
  }
  // From here on a failure must unload the library: the destructor does not
  // run for a constructor that throws.
  try {
    auto accessor = reinterpret_cast<const onnxc_model_descriptor *(*)()>(
        dlsym(handle_, GenericDescriptorAccessor));
    if (!accessor)
      fail(path, ": not an onnxc model library (no '", GenericDescriptorAccessor, "' symbol)");
    descriptor_ = accessor();
    if (!descriptor_ || descriptor_->abi_version != ONNXC_ABI_VERSION)
      fail(path, ": model library has abi version ", descriptor_ ? descriptor_->abi_version : 0,
           ", this onnxc runs version ", ONNXC_ABI_VERSION, " (recompile the model)");
    // signatureGraph reads the descriptor before any session checks it.
    if (std::string problem = runtime::checkDescriptor(descriptor_); !problem.empty())
      fail(path, ": the model library's descriptor is invalid: ", problem);
  } catch (...) {
    dlclose(handle_);
    throw;
  }
}

CompiledLibrary::~CompiledLibrary() {
  if (handle_)
    dlclose(handle_);
}

std::unique_ptr<Graph> signatureGraph(const onnxc_model_descriptor &model) {
  auto graph = std::make_unique<Graph>(model.model_name ? model.model_name : "model");
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    const onnxc_tensor_info &info = model.inputs[i];
    std::vector<Dim> dims;
    for (int32_t d = 0; d < info.rank; ++d)
      dims.push_back(decodeDim(model, info.dims[d]));
    graph->addInput(info.name, TensorType{DType(info.dtype), Shape(dims)});
  }
  return graph;
}

} // namespace onnxc
