//===- tools/onnxc/InspectLibrary.cpp - onnxc inspect model.so --------------===//
//
// What a deployed model.so is, read from its descriptor without running it:
// the onnxc that built it, its inputs and outputs with their symbolic dims,
// the arithmetic of its matrix products, the CPU features its code uses (and
// whether this CPU has them: the file may be meant for another machine), and
// the KV-cache pairs a generator updates in place.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "driver/ModelLibrary.h"
#include "tools/onnxc/JsonOutput.h"

#include "onnxc/model_info.h"

#include <iostream>

namespace onnxc {

namespace {

const char *dtypeText(int32_t dtype) {
  static const char *const names[] = {"?",   "f32", "f64", "f16", "bf16", "i8",  "u8",
                                      "i16", "u16", "i32", "u32", "i64",  "u64", "bool"};
  return dtype >= 1 && dtype <= ONNXC_BOOL ? names[dtype] : "?";
}

std::string text(const char *value) { return value ? value : ""; }

std::string dimText(const onnxc_model_descriptor &model, onnxc_dim_expr dim) {
  char buffer[256];
  onnxc_dim_format(&model, dim, buffer, sizeof buffer);
  return buffer;
}

std::vector<std::string> listItems(const char *list) {
  std::vector<std::string> items;
  std::string item;
  for (const char *c = list ? list : "";; ++c) {
    if (*c == ',' || *c == 0) {
      if (!item.empty())
        items.push_back(item);
      item.clear();
      if (*c == 0)
        return items;
    } else {
      item += *c;
    }
  }
}

llvm::json::Array tensorsJson(const onnxc_model_descriptor &model, int32_t count,
                              const onnxc_tensor_info *infos, bool inputs) {
  llvm::json::Array list;
  for (int32_t i = 0; i < count; ++i) {
    const onnxc_tensor_info &info = infos[i];
    llvm::json::Array dims;
    for (int32_t axis = 0; axis < info.rank; ++axis) {
      int64_t value = 0;
      if (onnxc_dim_is_constant(info.dims[axis], &value))
        dims.push_back(value);
      else
        dims.push_back(jsonText(dimText(model, info.dims[axis])));
    }
    llvm::json::Object entry{{"name", jsonText(text(info.name))},
                             {"dtype", dtypeText(info.dtype)},
                             {"dims", std::move(dims)},
                             {"type", jsonText(dtypeText(info.dtype) + text(info.shape_text))}};
    if (inputs && model.input_index_bounds && model.input_index_bounds[i] > 0)
      entry["index_bound"] = model.input_index_bounds[i];
    list.push_back(std::move(entry));
  }
  return list;
}

llvm::json::Array cachePairsJson(const onnxc_model_descriptor &model) {
  llvm::json::Array pairs;
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    pairs.push_back(llvm::json::Object{{"past", jsonText(text(model.inputs[pair.input].name))},
                                       {"present", jsonText(text(model.outputs[pair.output].name))},
                                       {"axis", pair.axis}});
  }
  return pairs;
}

void printTensors(const char *title, const onnxc_model_descriptor &model, int32_t count,
                  const onnxc_tensor_info *infos, bool inputs) {
  std::cout << title << ":" << (count ? "" : " none") << "\n";
  for (int32_t i = 0; i < count; ++i) {
    std::cout << "  " << text(infos[i].name) << ": " << dtypeText(infos[i].dtype)
              << text(infos[i].shape_text);
    if (inputs && model.input_index_bounds && model.input_index_bounds[i] > 0)
      std::cout << "  (indexes a table of " << model.input_index_bounds[i] << " rows)";
    std::cout << "\n";
  }
}

void printCachePairs(const onnxc_model_descriptor &model) {
  std::cout << "cache pairs:" << (model.num_cache_pairs ? "" : " none") << "\n";
  for (int32_t p = 0; p < model.num_cache_pairs; ++p) {
    const onnxc_cache_pair &pair = model.cache_pairs[p];
    std::cout << "  " << text(model.inputs[pair.input].name) << " -> "
              << text(model.outputs[pair.output].name) << " (axis " << pair.axis << ")\n";
  }
}

} // namespace

int inspectLibrary(const std::string &path, bool json) {
  ModelLibrary library(path);
  const onnxc_model_descriptor &model = *library.descriptor();
  const char *cpuProblem = onnxc_model_check_cpu(&model);
  std::string runsHere = cpuProblem ? cpuProblem : "";
  std::vector<std::string> features = listItems(model.cpu_features);
  if (json) {
    llvm::json::Array featureList;
    for (const std::string &feature : features)
      featureList.push_back(feature);
    llvm::json::Object document{
        {"model", jsonText(path)},
        {"name", jsonText(text(model.model_name))},
        {"onnxc_version", jsonText(text(model.onnxc_version))},
        {"abi_version", int64_t(model.abi_version)},
        {"precision", jsonText(model.precision ? model.precision : "f32")},
        {"cpu_features", std::move(featureList)},
        {"runs_on_this_cpu", runsHere.empty()},
        {"inputs", tensorsJson(model, model.num_inputs, model.inputs, true)},
        {"outputs", tensorsJson(model, model.num_outputs, model.outputs, false)},
        {"cache_pairs", cachePairsJson(model)},
        {"steps", model.num_steps}};
    if (!runsHere.empty())
      document["cpu_problem"] = jsonText(runsHere);
    printJson(std::move(document));
    return 0;
  }
  std::cout << "model: " << path << " (compiled model '" << text(model.model_name) << "')\n";
  std::cout << "built by: onnxc " << (model.onnxc_version ? model.onnxc_version : "(unknown)")
            << ", ABI v" << model.abi_version << "\n";
  std::cout << "precision: " << (model.precision ? model.precision : "f32") << "\n";
  std::cout << "cpu features: "
            << (features.empty() ? "none beyond x86-64" : text(model.cpu_features)) << "\n";
  std::cout << "runs on this CPU: " << (runsHere.empty() ? "yes" : "no, " + runsHere) << "\n";
  printTensors("inputs", model, model.num_inputs, model.inputs, true);
  printTensors("outputs", model, model.num_outputs, model.outputs, false);
  printCachePairs(model);
  std::cout << "steps: " << model.num_steps << "\n";
  return 0;
}

} // namespace onnxc
