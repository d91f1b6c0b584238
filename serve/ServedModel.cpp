//===- serve/ServedModel.cpp - A model the server answers for ---------------===//
#include "serve/ServedModel.h"

#include <cstring>
#include <iostream>

namespace onnxc::serve {

namespace {

/// A decoder has a logits output (the generator's role guess starts there).
bool hasLogits(const onnxc_model_descriptor &model) {
  for (int32_t o = 0; o < model.num_outputs; ++o)
    if (std::strstr(model.outputs[o].name, "logits"))
      return true;
  return false;
}

} // namespace

std::unique_ptr<ServedModel> ServedModel::create(const ModelSpec &spec, const ServeOptions &options,
                                                 Metrics &metrics, std::string &error) {
  std::unique_ptr<ServedModel> model(new ServedModel());
  model->name_ = spec.name;
  if (!spec.tokenizerPath.empty()) {
    model->tokenizer_ = onnxc_tokenizer_create(spec.tokenizerPath.c_str());
    if (!model->tokenizer_) {
      error = "model '" + spec.name + "': " + onnxc_tokenizer_last_error();
      return nullptr;
    }
  }
  // A template that fails to load leaves the model serving completions; chat
  // requests then get the reason.
  if (spec.chatTemplatePath.empty()) {
    model->chatProblem_ = "model '" + spec.name +
                          "' has no chat template (tokenizer_config.json's " +
                          "chat_template or chat_template.jinja beside it, or --chat-template)";
  } else if (!(model->chat_ = onnxc_chat_template_load(spec.chatTemplatePath.c_str()))) {
    model->chatProblem_ = "model '" + spec.name + "': " + onnxc_chat_template_last_error();
    std::cerr << "onnxc serve: " << model->chatProblem_ << "; chat requests will be refused\n";
  }
  if (hasLogits(*spec.model))
    model->scheduler_ = Scheduler::create(spec, options, metrics, error);
  else
    model->embedder_ = Embedder::create(spec, options, error);
  if (!model->scheduler_ && !model->embedder_)
    return nullptr;
  return model;
}

ServedModel::~ServedModel() {
  scheduler_.reset();
  embedder_.reset();
  onnxc_chat_template_destroy(chat_);
  onnxc_tokenizer_destroy(tokenizer_);
}

} // namespace onnxc::serve
