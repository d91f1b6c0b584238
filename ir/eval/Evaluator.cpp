// STUB: replaced by the evaluator driver.
#include "ir/eval/Evaluator.h"
#include "ir/eval/Kernels.h"
#include "ir/Error.h"
namespace onnxc {
std::vector<Tensor> evaluateNode(const Node &node, const std::vector<const Tensor *> &) { fail(node.describe(), ": evaluator not implemented"); }
bool hasReferenceKernel(OpKind) { return false; }
std::vector<Tensor> evaluateGraph(const Graph &, const std::map<std::string, Tensor> &) { fail("evaluator not implemented"); }
} // namespace onnxc
