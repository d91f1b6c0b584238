//===- tools/onnxc/CompiledLibrary.cpp - Load a model.so written by compile ===//

#include "tools/onnxc/CompiledLibrary.h"

#include "codegen/DescriptorEmitter.h"
#include "ir/Error.h"

#include <dlfcn.h>
#include <filesystem>

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

} // namespace

bool isCompiledLibraryPath(const std::string &path) {
  std::string extension = std::filesystem::path(path).extension().string();
  return extension == ".so" || extension == ".dylib";
}

CompiledLibrary::CompiledLibrary(const std::string &path) {
  if (!std::filesystem::exists(path))
    fail(path, ": no such file");
  // dlopen searches the library path for names without a slash.
  std::string loadPath = path.find('/') == std::string::npos ? "./" + path : path;
  handle_ = dlopen(loadPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle_) {
    const char *why = dlerror();
    fail(path, ": cannot load the model library (", why ? why : "unknown reason", ")");
  }
  auto accessor = reinterpret_cast<const onnxc_model_descriptor *(*)()>(
      dlsym(handle_, GenericDescriptorAccessor));
  if (!accessor)
    fail(path, ": not an onnxc model library (no '", GenericDescriptorAccessor, "' symbol)");
  descriptor_ = accessor();
  if (!descriptor_ || descriptor_->abi_version != ONNXC_ABI_VERSION)
    fail(path, ": model library has abi version ", descriptor_ ? descriptor_->abi_version : 0,
         ", this onnxc runs version ", ONNXC_ABI_VERSION, " (recompile the model)");
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
