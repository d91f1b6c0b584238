//===- serve/Embedder.h - Sentence embeddings from an encoder --------------===//
//
// /v1/embeddings as sentence-transformers computes them: the encoder's
// token states (last_hidden_state, else its one float rank-3 output),
// averaged over the attention mask (mean pooling), then L2-normalized. Each
// input runs as a batch of one, so the mask is all ones; the session is
// shared, one input at a time.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/onnxc.h"
#include "serve/ServeOptions.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace onnxc::serve {

class Embedder {
public:
  static std::unique_ptr<Embedder> create(const ModelSpec &spec, const ServeOptions &options,
                                          std::string &error);
  ~Embedder();
  /// The normalized mean-pooled embedding of `ids`; false with `error` set.
  bool embed(const std::vector<int64_t> &ids, std::vector<float> &out, std::string &error);

private:
  const onnxc_model_descriptor *model_ = nullptr;
  onnxc_session *session_ = nullptr;
  int32_t ids_ = -1, output_ = -1;
  std::mutex mutex_;
};

} // namespace onnxc::serve
