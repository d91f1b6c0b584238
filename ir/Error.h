//===- ir/Error.h - The one error type of onnxc ---------------------------===//
//
// onnxc reports bad input (malformed models, unsupported ops, wrong shapes) by
// throwing onnxc::Error, and catches it once at the tool boundary, which prints
// "error: <message>" and exits non-zero. Internal invariants use assert.
// Messages are one lowercase line naming the file/node/value and the problem.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>
#include <utility>

namespace onnxc {

class Error : public std::runtime_error {
public:
  explicit Error(const std::string &message) : std::runtime_error(message) {}
};

/// Builds a message from its pieces with operator<< and throws it as an Error.
/// Example: fail("node '", node.name(), "': reshape of ", n, " elements to ", s, " is impossible");
template <typename... Parts> [[noreturn]] void fail(Parts &&...parts) {
  std::ostringstream os;
  (os << ... << std::forward<Parts>(parts));
  throw Error(os.str());
}

/// A size onnxc cannot hold: an int64 overflow in shape arithmetic (a
/// dimension, an element count, a byte size) or a request for more memory
/// than the configured limit. Raised where the arithmetic or allocation
/// happens, which knows no node; the drivers (shape inference, evaluator,
/// lowering) rethrow it with the node that asked, via rethrowWithNode.
class SizeError : public Error {
public:
  using Error::Error;
};

/// Throws a SizeError with `who` (e.g. "node 'Tile_3'") in front, keeping
/// the type so that an outer driver does not prefix it a second time.
template <typename Body>
auto withSizeContext(const std::string &who, Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const SizeError &e) {
    std::string message = e.what();
    if (message.rfind(who, 0) == 0)
      throw;
    throw SizeError(who + ": " + message);
  }
}

} // namespace onnxc
