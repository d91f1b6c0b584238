//===- serve/ServeOptions.h - What `onnxc serve` is told -----------------===//
//
// The server's settings and the models it serves, as the tool hands them
// over: each model already compiled (a descriptor the caller keeps alive),
// with its tokenizer and what a genai folder says about generation.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "onnxc/model_abi.h"

#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::serve {

/// One model to serve.
struct ModelSpec {
  std::string name;                    ///< Its id in /v1/models and the "model" field.
  const onnxc_model_descriptor *model; ///< Owned by the caller, alive while serving.
  std::string tokenizerPath;           ///< tokenizer.json, a .model, or a folder; "" none.
  /// The chat template: a folder, tokenizer_config.json or .jinja file; "" none.
  std::string chatTemplatePath;
  std::string mapping;              ///< The generator's role mapping ("" to guess).
  std::vector<int64_t> eosTokenIds; ///< Stop ids (genai_config.json, the tokenizer's EOS).
  int64_t contextLength = 0;        ///< Positions a row may use at most; 0: max_total.
};

struct ServeOptions {
  std::string host = "127.0.0.1";
  int port = 8000;    ///< 0: an ephemeral port, printed at start.
  std::string apiKey; ///< Non-empty: every endpoint but /health needs it.
  int maxBatch = 8;   ///< Rows a model's scheduler runs at once.
  int maxQueue = 64;  ///< Requests waiting per model; more get 429.
  int64_t maxPromptTokens = 1024;
  int64_t maxTotalTokens = 2048;      ///< Prompt + generated tokens of one request.
  double requestTimeoutSeconds = 300; ///< A request still running after this ends.
  size_t maxBodyBytes = 1 << 20;      ///< Larger request bodies get 413.
  int threads = 0;                    ///< Each model session's threads; 0: one per core.
  bool logPrompts = false;            ///< Write prompts and outputs to the log.
};

} // namespace onnxc::serve
