//===- serve/Router.cpp - Which endpoint answers a request ------------------===//
#include "serve/Router.h"

#include "serve/Auth.h"
#include "serve/Sse.h"

#include <ctime>

namespace onnxc::serve {

ServedModel *ServerState::find(const std::string &name) {
  for (auto &model : models)
    if (model->name() == name)
      return model.get();
  return nullptr;
}

int sendError(ResponseWriter &writer, const ApiError &error) {
  writer.send(error.status, "application/json", error.body());
  return error.status;
}

namespace {

int listModels(ServerState &state, ResponseWriter &writer) {
  llvm::json::Array data;
  for (auto &model : state.models)
    data.push_back(llvm::json::Object{{"id", model->name()},
                                      {"object", "model"},
                                      {"created", int64_t(std::time(nullptr))},
                                      {"owned_by", "onnxc"}});
  writer.send(200, "application/json",
              jsonText(llvm::json::Object{{"object", "list"}, {"data", std::move(data)}}));
  return 200;
}

} // namespace

int route(ServerState &state, const HttpRequest &request, ResponseWriter &writer) {
  const std::string &path = request.path;
  if (path == "/health") {
    writer.send(200, "application/json", "{\"status\":\"ok\"}");
    return 200;
  }
  if (!authorized(state.options.apiKey, request.authorization))
    return sendError(writer, {401,
                              "a valid API key is required: send 'Authorization: Bearer KEY' "
                              "with the key the server was started with",
                              "authentication_error", "", "invalid_api_key"});
  bool post = request.method == "POST";
  auto wrongMethod = [&](const char *allowed) {
    return sendError(writer, {405, path + " takes " + allowed + ", not " + request.method,
                              "invalid_request_error", "", "method_not_allowed"});
  };
  if (path == "/metrics")
    return post ? wrongMethod("GET")
                : (writer.send(200, "text/plain; version=0.0.4", state.metrics.render()), 200);
  if (path == "/v1/models")
    return post ? wrongMethod("GET") : listModels(state, writer);
  if (path == "/v1/completions" || path == "/v1/chat/completions")
    return post ? completions(state, request, writer, path == "/v1/chat/completions")
                : wrongMethod("POST");
  if (path == "/v1/embeddings")
    return post ? embeddings(state, request, writer) : wrongMethod("POST");
  return sendError(writer, {404,
                            "no endpoint " + path +
                                "; see /v1/models, /v1/completions, "
                                "/v1/chat/completions, /v1/embeddings, /health, /metrics",
                            "invalid_request_error", "", "not_found"});
}

} // namespace onnxc::serve
