//===- driver/ModelLibrary.cpp - Open and check a model.so ----------------===//
#include "driver/ModelLibrary.h"

#include "codegen/artifact/DescriptorEmitter.h"
#include "driver/LibraryFileCheck.h"
#include "driver/LibraryLoad.h"
#include "ir/Error.h"
#include "onnxc/model_info.h"

#include <cerrno>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <unistd.h>

namespace onnxc {

namespace {

/// Closes a descriptor when it goes out of scope.
struct OpenFile {
  int fd = -1;
  ~OpenFile() {
    if (fd >= 0)
      ::close(fd);
  }
};

} // namespace

ModelLibrary::ModelLibrary(const std::string &path) {
  OpenFile file{::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)};
  if (file.fd < 0) {
    if (errno == ENOENT)
      fail(path, ": no such file");
    fail(path, ": cannot open the model library (", std::strerror(errno), ")");
  }
  library_ = loadLibrary(
      file.fd, path, [&](int fd) { checkModelLibraryFile(fd, path, GenericDescriptorAccessor); });
  // From here on a failure must unload the library: the destructor does not
  // run for a constructor that throws.
  try {
    auto accessor = reinterpret_cast<const onnxc_model_descriptor *(*)()>(
        dlsym(library_.handle, GenericDescriptorAccessor));
    if (!accessor)
      fail(path, ": not an onnxc model library (no '", GenericDescriptorAccessor, "' symbol)");
    descriptor_ = accessor();
    if (!descriptor_ || descriptor_->abi_version != ONNXC_ABI_VERSION)
      fail(path, ": model library has abi version ", descriptor_ ? descriptor_->abi_version : 0,
           ", this onnxc runs version ", ONNXC_ABI_VERSION, " (recompile the model)");
    // signatureGraph reads the descriptor before any session checks it.
    if (const char *problem = onnxc_model_check(descriptor_))
      fail(path, ": the model library's descriptor is invalid: ", problem);
  } catch (...) {
    unloadLibrary(library_);
    throw;
  }
}

ModelLibrary::~ModelLibrary() { unloadLibrary(library_); }

namespace {

/// One dim expression of a checked descriptor as a Dim over the model's
/// symbol names.
Dim decodeDim(const onnxc_model_descriptor &model, onnxc_dim_expr expr) {
  Dim result(0);
  for (int32_t t = 0; t < onnxc_dim_num_terms(expr); ++t) {
    onnxc_dim_term term = onnxc_dim_get_term(expr, t);
    Dim product(term.coefficient);
    for (int32_t d = 0; d < term.degree; ++d)
      product = product * Dim::symbol(model.symbol_names[term.symbols[d]]);
    result = result + product;
  }
  return result;
}

} // namespace

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
