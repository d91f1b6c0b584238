//===- serve/HttpServer.h - The HTTP listener and its connections ---------===//
//
// HTTP/1.1 on Boost.Beast over Asio (in Debian's Boost, which onnxc already
// builds with; no new dependency): the listener accepts on HOST:PORT and
// gives each connection a thread that reads requests (bodies past
// --max-body-bytes get 413), routes them (Router.h) and writes the answers,
// keeping the connection alive between requests unless it streamed. The
// endpoints see the connection as a ResponseWriter.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "serve/Router.h"

#include <string>

namespace onnxc::serve {

/// Listens and serves until SIGINT or SIGTERM; prints the address it bound
/// (the port chosen when --port 0) on stdout. False with `error` set when it
/// cannot listen.
bool listenAndServe(ServerState &state, std::string &error);

} // namespace onnxc::serve
