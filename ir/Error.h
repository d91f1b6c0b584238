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

} // namespace onnxc
