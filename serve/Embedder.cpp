//===- serve/Embedder.cpp - Sentence embeddings from an encoder --------------===//
#include "serve/Embedder.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>

namespace onnxc::serve {

namespace {

bool isInteger(int32_t dtype) { return dtype == ONNXC_I64 || dtype == ONNXC_I32; }

/// Writes `count` copies of `value` in an i64 or i32 buffer.
void fill(std::vector<int64_t> &wide, std::vector<int32_t> &narrow, int32_t dtype,
          const std::vector<int64_t> &values) {
  if (dtype == ONNXC_I32)
    narrow.assign(values.begin(), values.end());
  else
    wide = values;
}

} // namespace

std::unique_ptr<Embedder> Embedder::create(const ModelSpec &spec, const ServeOptions &options,
                                           std::string &error) {
  std::unique_ptr<Embedder> embedder(new Embedder());
  const onnxc_model_descriptor &model = *spec.model;
  embedder->model_ = spec.model;
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    std::string_view name = model.inputs[i].name;
    if (!isInteger(model.inputs[i].dtype) || model.inputs[i].rank != 2) {
      error = "model '" + spec.name +
              "' has no logits output, so it is served as an encoder, but " + "its input '" +
              std::string(name) + "' " + model.inputs[i].shape_text +
              " is not [batch, seq] integers (ids, mask or token types)";
      return nullptr;
    }
    if (name == "input_ids" || (embedder->ids_ < 0 && name.find("mask") == std::string_view::npos &&
                                name.find("type") == std::string_view::npos))
      embedder->ids_ = i;
  }
  for (int32_t o = 0; o < model.num_outputs; ++o) {
    const onnxc_tensor_info &info = model.outputs[o];
    if (info.dtype == ONNXC_F32 && info.rank == 3 &&
        (embedder->output_ < 0 || std::string_view(info.name) == "last_hidden_state"))
      embedder->output_ = o;
  }
  if (embedder->ids_ < 0 || embedder->output_ < 0) {
    error = "model '" + spec.name + "' has no logits output and no " +
            (embedder->ids_ < 0 ? "token ids input" : "float [batch, seq, hidden] output") +
            ": it is neither a decoder to generate with nor an encoder to embed with";
    return nullptr;
  }
  embedder->session_ = onnxc_session_create(spec.model, options.threads);
  if (!embedder->session_) {
    error = "model '" + spec.name + "': " + onnxc_last_error();
    return nullptr;
  }
  return embedder;
}

Embedder::~Embedder() { onnxc_session_destroy(session_); }

bool Embedder::embed(const std::vector<int64_t> &ids, std::vector<float> &out, std::string &error) {
  const onnxc_model_descriptor &model = *model_;
  int64_t length = int64_t(ids.size());
  std::vector<std::vector<int64_t>> wide(size_t(model.num_inputs));
  std::vector<std::vector<int32_t>> narrow(size_t(model.num_inputs));
  std::vector<onnxc_tensor> inputs(size_t(model.num_inputs));
  for (int32_t i = 0; i < model.num_inputs; ++i) {
    std::string_view name = model.inputs[i].name;
    // The ids; a mask of ones (one input, no padding); token types of 0.
    std::vector<int64_t> values =
        i == ids_ ? ids
                  : std::vector<int64_t>(size_t(length),
                                         name.find("mask") != std::string_view::npos ? 1 : 0);
    fill(wide[size_t(i)], narrow[size_t(i)], model.inputs[i].dtype, values);
    onnxc_tensor &tensor = inputs[size_t(i)];
    tensor = onnxc_tensor{};
    tensor.dtype = model.inputs[i].dtype;
    tensor.rank = 2;
    tensor.dims[0] = 1;
    tensor.dims[1] = length;
    tensor.data = tensor.dtype == ONNXC_I32 ? static_cast<void *>(narrow[size_t(i)].data())
                                            : static_cast<void *>(wide[size_t(i)].data());
  }
  std::vector<onnxc_tensor> outputs(size_t(model.num_outputs), onnxc_tensor{});
  std::lock_guard<std::mutex> lock(mutex_);
  if (onnxc_session_run(session_, inputs.data(), int32_t(inputs.size()), outputs.data(),
                        int32_t(outputs.size())) != 0) {
    error = onnxc_session_error(session_);
    return false;
  }
  const onnxc_tensor &states = outputs[size_t(output_)];
  int64_t positions = states.dims[1], hidden = states.dims[2];
  const auto *data = static_cast<const float *>(states.data);
  out.assign(size_t(hidden), 0.0f);
  // Mean pooling over the mask (all ones), then L2 normalization
  // (sentence-transformers' Pooling and Normalize modules; its epsilon 1e-12).
  for (int64_t t = 0; t < positions; ++t)
    for (int64_t h = 0; h < hidden; ++h)
      out[size_t(h)] += data[t * hidden + h];
  double norm = 0;
  for (float &value : out) {
    value /= float(positions);
    norm += double(value) * value;
  }
  float scale = float(1.0 / std::max(std::sqrt(norm), 1e-12));
  for (float &value : out)
    value *= scale;
  return true;
}

} // namespace onnxc::serve
