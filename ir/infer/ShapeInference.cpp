// STUB: replaced by the shape inference driver.
#include "ir/infer/ShapeRules.h"
#include "ir/Error.h"
namespace onnxc {
InferenceContext::InferenceContext(Graph &graph) : graph_(graph) {}
const std::vector<Dim> *InferenceContext::knownContents(const Value *) const { return nullptr; }
void InferenceContext::setKnownContents(const Value *, std::vector<Dim>) {}
Dim InferenceContext::freshSymbol(const std::string &) { return Dim::unknown(); }
InferenceContext inferShapes(Graph &graph) { return InferenceContext(graph); }
void inferNodeShapes(Node &, InferenceContext &) {}
} // namespace onnxc
