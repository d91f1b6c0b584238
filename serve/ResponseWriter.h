//===- serve/ResponseWriter.h - How an endpoint answers its connection ----===//
//
// The endpoints write through this: a whole response, or a stream of
// server-sent events; the connection (HttpServer.cpp) implements it on its
// socket and tells when the client has gone.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace onnxc::serve {

class ResponseWriter {
public:
  virtual ~ResponseWriter() = default;
  virtual void send(int status, std::string_view contentType, std::string body) = 0;
  /// Starts a text/event-stream response; false when the client has gone.
  virtual bool startEvents() = 0;
  /// Writes one event's bytes; false when the client has gone.
  virtual bool writeEvent(std::string_view event) = 0;
  /// Whether the client closed its side (checked while a request waits).
  virtual bool clientGone() = 0;
};

} // namespace onnxc::serve
