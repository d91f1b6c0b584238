//===- serve/HttpServer.cpp - The HTTP listener and its connections ---------===//
//
// Synchronous Beast, a thread per connection: a decode step takes
// milliseconds, the connections mostly wait on their generation, and a
// thread that blocks reads simply. A connection waiting for tokens polls its
// socket between waits (clientGone) so a client that hangs up frees its row.
//
//===----------------------------------------------------------------------===//
#include "serve/HttpServer.h"

#include <utility> // before Asio: its awaitable.hpp uses std::exchange without it

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <csignal>
#include <iostream>
#include <poll.h>
#include <sys/socket.h>
#include <thread>

namespace onnxc::serve {

namespace {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

/// The listening socket, for the stop signals' handler.
volatile sig_atomic_t gListening = -1;

/// How long a connection may wait between requests.
constexpr int kIdleSeconds = 60;

class Connection : public ResponseWriter {
public:
  explicit Connection(tcp::socket socket) : socket_(std::move(socket)) {}

  void send(int status, std::string_view contentType, std::string body) override {
    http::response<http::string_body> response{http::int_to_status(unsigned(status)), 11};
    response.set(http::field::server, "onnxc");
    response.set(http::field::content_type, std::string(contentType));
    response.keep_alive(keepAlive_);
    response.body() = std::move(body);
    response.prepare_payload();
    beast::error_code ec;
    http::write(socket_, response, ec);
    failed_ = failed_ || bool(ec);
  }

  bool startEvents() override {
    streamed_ = true;
    // No length and no chunking: the events end when the connection closes.
    return writeEvent("HTTP/1.1 200 OK\r\nServer: onnxc\r\nContent-Type: text/event-stream\r\n"
                      "Cache-Control: no-cache\r\nConnection: close\r\n\r\n");
  }

  bool writeEvent(std::string_view event) override {
    beast::error_code ec;
    asio::write(socket_, asio::buffer(event.data(), event.size()), ec);
    failed_ = failed_ || bool(ec);
    return !ec;
  }

  bool clientGone() override {
    if (failed_)
      return true;
    pollfd descriptor{socket_.native_handle(), POLLIN | POLLRDHUP, 0};
    if (::poll(&descriptor, 1, 0) <= 0)
      return false;
    if (descriptor.revents & (POLLRDHUP | POLLHUP | POLLERR))
      return true;
    // Readable: either a pipelined request (not gone) or the end of the stream.
    char byte;
    return ::recv(socket_.native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
  }

  void serve(ServerState &state);

  /// Waits for the next request's first bytes; false after `seconds` of
  /// silence, so an idle keep-alive connection does not hold its thread forever.
  bool awaitRequest(int seconds) {
    pollfd descriptor{socket_.native_handle(), POLLIN, 0};
    return ::poll(&descriptor, 1, seconds * 1000) > 0;
  }

private:
  tcp::socket socket_;
  bool keepAlive_ = true, streamed_ = false, failed_ = false;
};

/// The path for the metrics' endpoint label: known paths as they are,
/// anything else as "other" (so a scan cannot grow the label set).
std::string endpointLabel(const std::string &path) {
  for (const char *known : {"/health", "/metrics", "/v1/models", "/v1/completions",
                            "/v1/chat/completions", "/v1/embeddings"})
    if (path == known)
      return path;
  return "other";
}

void Connection::serve(ServerState &state) {
  beast::flat_buffer buffer;
  while (!streamed_ && !failed_) {
    if (buffer.size() == 0 && !awaitRequest(kIdleSeconds))
      break;
    http::request_parser<http::string_body> parser;
    parser.body_limit(state.options.maxBodyBytes);
    beast::error_code ec;
    http::read(socket_, buffer, parser, ec);
    if (ec == http::error::body_limit) {
      keepAlive_ = false;
      int status = sendError(*this, {413,
                                     "the request body is larger than " +
                                         std::to_string(state.options.maxBodyBytes) +
                                         " bytes (--max-body-bytes)",
                                     "invalid_request_error", "", "body_too_large"});
      state.metrics.countRequest("other", status);
      break;
    }
    if (ec)
      break;
    http::request<http::string_body> &message = parser.get();
    HttpRequest request;
    request.method = std::string(message.method_string());
    std::string target(message.target());
    request.path = target.substr(0, target.find('?'));
    request.authorization = std::string(message[http::field::authorization]);
    request.body = std::move(message.body());
    keepAlive_ = message.keep_alive();
    int status = route(state, request, *this);
    state.metrics.countRequest(endpointLabel(request.path), status);
    if (!keepAlive_)
      break;
  }
  beast::error_code ignored;
  socket_.shutdown(tcp::socket::shutdown_both, ignored);
}

} // namespace

bool listenAndServe(ServerState &state, std::string &error) {
  asio::io_context context;
  tcp::acceptor acceptor(context);
  beast::error_code ec;
  asio::ip::address address = asio::ip::make_address(state.options.host, ec);
  if (ec) {
    error = "--host '" + state.options.host + "' is not an IP address: " + ec.message();
    return false;
  }
  tcp::endpoint endpoint(address, uint16_t(state.options.port));
  acceptor.open(endpoint.protocol(), ec);
  if (!ec)
    acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec)
    acceptor.bind(endpoint, ec);
  if (!ec)
    acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) {
    error = "cannot listen on " + state.options.host + ":" + std::to_string(state.options.port) +
            ": " + ec.message();
    return false;
  }
  std::cout << "onnxc serve: listening on http://" << state.options.host << ":"
            << acceptor.local_endpoint().port() << std::endl;
  // SIGINT and SIGTERM, in whichever thread they land (the compiler's or a
  // session's threads started earlier may take them), shut the listening
  // socket down: accept() then fails and the server stops in order.
  // shutdown() is async-signal-safe.
  gListening = acceptor.native_handle();
  struct sigaction action = {};
  action.sa_handler = [](int) { ::shutdown(gListening, SHUT_RDWR); };
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  while (true) {
    tcp::socket socket(context);
    acceptor.accept(socket, ec);
    if (ec == asio::error::connection_aborted || ec == asio::error::no_descriptors)
      continue;
    if (ec)
      break;
    socket.set_option(tcp::no_delay(true), ec);
    state.connections.fetch_add(1);
    std::thread([&state, socket = std::move(socket)]() mutable {
      Connection(std::move(socket)).serve(state);
      state.connections.fetch_sub(1);
    }).detach();
  }
  std::cerr << "onnxc serve: stopping\n";
  return true;
}

} // namespace onnxc::serve
