//===- serve/ServedModel.h - A model the server answers for ---------------===//
//
// One entry of /v1/models: its tokenizer and either a scheduler (a decoder:
// a logits output) for the completions endpoints, or an encoder session
// for /v1/embeddings. The kind comes from the model's outputs.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc.h"
#include "onnxc/onnxc_chat.h"
#include "onnxc/onnxc_tokenizer.h"
#include "serve/Embedder.h"
#include "serve/Scheduler.h"
#include "serve/ServeOptions.h"

#include <memory>
#include <string>

namespace onnxc::serve {

class ServedModel {
public:
  /// Loads the tokenizer and starts the scheduler or the encoder; null with `error` set.
  static std::unique_ptr<ServedModel> create(const ModelSpec &spec, const ServeOptions &options,
                                             Metrics &metrics, std::string &error);
  ~ServedModel();

  const std::string &name() const { return name_; }
  /// The tokenizer, or null when the model was given none (ids only).
  const onnxc_tokenizer *tokenizer() const { return tokenizer_; }
  Scheduler *scheduler() { return scheduler_.get(); }
  Embedder *embedder() { return embedder_.get(); }
  /// The chat template, or null with chatProblem() saying why.
  const onnxc_chat_template *chatTemplate() const { return chat_; }
  const std::string &chatProblem() const { return chatProblem_; }

private:
  std::string name_;
  onnxc_tokenizer *tokenizer_ = nullptr;
  onnxc_chat_template *chat_ = nullptr;
  std::string chatProblem_;
  std::unique_ptr<Scheduler> scheduler_;
  std::unique_ptr<Embedder> embedder_;
};

} // namespace onnxc::serve
