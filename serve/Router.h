//===- serve/Router.h - Which endpoint answers a request ------------------===//
//
// The server's state (options, metrics, models) and the dispatch of a
// request to its endpoint after the API-key check: /health, /metrics,
// /v1/models, /v1/completions, /v1/chat/completions, /v1/embeddings; any
// other path is a 404 and a wrong method a 405, both in OpenAI's shape.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "serve/ApiError.h"
#include "serve/Metrics.h"
#include "serve/ResponseWriter.h"
#include "serve/ServeOptions.h"
#include "serve/ServedModel.h"

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace onnxc::serve {

struct HttpRequest {
  std::string method, path, authorization, body;
};

struct ServerState {
  explicit ServerState(const ServeOptions &options) : options(options) {}
  const ServeOptions &options;
  Metrics metrics;
  std::vector<std::unique_ptr<ServedModel>> models;
  std::atomic<uint64_t> nextId{1};
  std::atomic<int> connections{0}; ///< Open connection threads.

  ServedModel *find(const std::string &name);
};

/// Answers `request` through `writer`; returns the status sent (for the metrics).
int route(ServerState &state, const HttpRequest &request, ResponseWriter &writer);

/// The endpoints of Completions.cpp and Embeddings.cpp.
int completions(ServerState &state, const HttpRequest &request, ResponseWriter &writer, bool chat);
int embeddings(ServerState &state, const HttpRequest &request, ResponseWriter &writer);

/// Sends `error`'s JSON body; returns its status.
int sendError(ResponseWriter &writer, const ApiError &error);

} // namespace onnxc::serve
