//===- serve/Server.cpp - `onnxc serve`: an OpenAI-compatible server --------===//
#include "serve/Server.h"

#include "serve/HttpServer.h"

#include <chrono>
#include <iostream>
#include <thread>

namespace onnxc::serve {

bool runServer(const ServeOptions &options, const std::vector<ModelSpec> &models,
               std::string &error) {
  ServerState state(options);
  for (const ModelSpec &spec : models) {
    if (state.find(spec.name)) {
      error = "two models are named '" + spec.name + "'; give them different file names";
      return false;
    }
    std::unique_ptr<ServedModel> model = ServedModel::create(spec, options, state.metrics, error);
    if (!model)
      return false;
    if (Scheduler *scheduler = model->scheduler())
      std::cerr << "onnxc serve: model '" << spec.name << "': decoder, "
                << (scheduler->serialReason().empty()
                        ? "continuous batching of up to " + std::to_string(scheduler->maxRows()) +
                              " rows"
                        : "one request at a time (" + scheduler->serialReason() + ")")
                << "\n";
    else
      std::cerr << "onnxc serve: model '" << spec.name << "': encoder (/v1/embeddings)\n";
    state.models.push_back(std::move(model));
  }
  bool served = listenAndServe(state, error);
  // Stopping the schedulers ends every generation under way with an error;
  // the connections waiting on them then answer and close.
  for (auto &model : state.models)
    model.reset();
  for (int wait = 0; wait < 100 && state.connections.load() > 0; ++wait)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // A connection still open (an idle keep-alive) holds a reference to the
  // state: the process ends here rather than destroy it under that thread.
  if (state.connections.load() > 0)
    std::quick_exit(served ? 0 : 1);
  return served;
}

} // namespace onnxc::serve
