// STUB: replaced by the parser implementation.
#include "ir/Parser.h"
#include "ir/Error.h"
namespace onnxc {
std::unique_ptr<Graph> parseGraph(std::string_view, const std::string &) { fail("parser not implemented"); }
std::unique_ptr<Graph> parseGraphFile(const std::string &) { fail("parser not implemented"); }
} // namespace onnxc
