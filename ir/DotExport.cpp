// STUB: replaced by the dot exporter.
#include "ir/DotExport.h"
#include "ir/Error.h"
namespace onnxc {
void exportDot(const Graph &, std::ostream &) { fail("dot export not implemented"); }
} // namespace onnxc
