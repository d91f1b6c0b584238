//===- serve/Server.h - `onnxc serve`: an OpenAI-compatible server --------===//
//
// The entry point the tool calls: starts each model (its scheduler or
// encoder), serves HTTP until SIGINT/SIGTERM, then ends the requests under
// way with an error and stops the schedulers. docs/SERVE.md describes it.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "serve/ServeOptions.h"

#include <string>
#include <vector>

namespace onnxc::serve {

/// Serves `models`; false with `error` set when a model cannot start or the
/// address cannot be bound.
bool runServer(const ServeOptions &options, const std::vector<ModelSpec> &models,
               std::string &error);

} // namespace onnxc::serve
