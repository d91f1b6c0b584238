// STUB: replaced by the printer implementation.
#include "ir/Printer.h"
#include "ir/Error.h"
#include <sstream>
namespace onnxc {
void printGraph(const Graph &, std::ostream &, const PrintOptions &) { fail("printer not implemented"); }
std::string printGraphToString(const Graph &g, const PrintOptions &o) { std::ostringstream os; printGraph(g, os, o); return os.str(); }
std::string printNode(const Node &, const PrintOptions &) { fail("printer not implemented"); }
} // namespace onnxc
