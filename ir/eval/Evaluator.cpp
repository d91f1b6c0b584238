//===- ir/eval/Evaluator.cpp - Running nodes and graphs on the kernels ----===//
#include "ir/eval/Evaluator.h"

#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <unordered_map>

namespace onnxc {

const KernelTable &referenceKernels() {
  static const KernelTable table = [] {
    KernelTable t;
    registerElementwiseKernels(t);
    registerCastKernels(t);
    registerReductionKernels(t);
    registerNormalizationKernels(t);
    registerMovementKernels(t);
    registerLinearAlgebraKernels(t);
    registerAttentionKernels(t);
    registerAdditiveAttentionKernels(t);
    registerLinearAttentionKernels(t);
    registerConvolutionKernels(t);
    registerRecurrentKernels(t);
    registerScatterGatherKernels(t);
    registerQuantizationKernels(t);
    registerQuantizedGemmKernels(t);
    registerBlockQuantizedMatMulKernels(t);
    registerPaddingKernels(t);
    registerPoolingKernels(t);
    registerResizeKernels(t);
    registerControlFlowKernels(t);
    return t;
  }();
  return table;
}

namespace {

void checkCount(const Node &node, const char *what, size_t count, int minCount, int maxCount) {
  if (int64_t(count) < minCount || (maxCount >= 0 && int64_t(count) > maxCount))
    fail(node.describe(), ": op ", node.opName(), " takes ", minCount,
         maxCount < 0 ? " or more"
                      : (maxCount == minCount ? "" : " to " + std::to_string(maxCount)),
         " ", what, ", got ", count);
}

/// Symbol bindings gathered from the graph inputs, used to check inputs
/// against each other and results against shape inference.
using Bindings = std::map<std::string, int64_t>;

std::string inputMismatch(const Value &input, const Tensor &tensor) {
  return "input '" + input.name() + "': expected " + input.type().str() + ", got " +
         tensor.typeString();
}

/// Checks one input tensor against its declared type, binding single-symbol
/// dims on first sight.
void bindInput(const Value &input, const Tensor &tensor, Bindings &bindings) {
  if (!tensor.isDefined() || !tensor.hasData())
    fail("input '", input.name(), "' has no data");
  if (input.dtype() != DType::Unknown && input.dtype() != tensor.dtype())
    fail(inputMismatch(input, tensor));
  const Shape &shape = input.shape();
  if (!shape.isRanked())
    return;
  if (shape.rank() != tensor.rank())
    fail(inputMismatch(input, tensor), " (rank ", tensor.rank(), " instead of ", shape.rank(), ")");
  for (size_t i = 0; i < shape.rank(); ++i) {
    const Dim &dim = shape[i];
    int64_t actual = tensor.dims()[i];
    if (std::optional<int64_t> c = dim.constant()) {
      if (*c != actual)
        fail(inputMismatch(input, tensor), " (dim ", i, " must be ", *c, ")");
    } else if (dim.isSymbol()) {
      auto [it, inserted] = bindings.emplace(dim.symbolName(), actual);
      if (!inserted && it->second != actual)
        fail(inputMismatch(input, tensor), " (dim ", i, " is '", dim.symbolName(),
             "', already bound to ", it->second, " by an earlier input)");
    }
  }
}

/// Dims that are expressions of symbols (seq+1) can only be checked once
/// every input has bound its plain symbols.
void checkInputExpressions(const Value &input, const Tensor &tensor, const Bindings &bindings) {
  const Shape &shape = input.shape();
  if (!shape.isRanked())
    return;
  for (size_t i = 0; i < shape.rank(); ++i) {
    const Dim &dim = shape[i];
    if (dim.isConstant() || dim.isSymbol())
      continue;
    std::optional<int64_t> expected = dim.evaluate(bindings);
    if (expected && *expected != tensor.dims()[i])
      fail(inputMismatch(input, tensor), " (dim ", i, " is ", dim.str(), " = ", *expected, ")");
  }
}

/// Compares a computed result with the type shape inference gave its value:
/// a disagreement is a bug in a shape rule or a kernel, not bad input.
void checkAgainstInferred(const Node &node, size_t index, const Tensor &result,
                          const Bindings &bindings) {
  const Value &value = *node.result(index);
  auto mismatch = [&] {
    fail("internal error: ", node.describe(), ": result ", index, " is ", result.typeString(),
         " but shape inference gave ", value.type().str());
  };
  if (value.dtype() != DType::Unknown && value.dtype() != result.dtype())
    mismatch();
  const Shape &shape = value.shape();
  if (!shape.isRanked())
    return;
  if (shape.rank() != result.rank())
    mismatch();
  for (size_t i = 0; i < shape.rank(); ++i) {
    if (shape[i].isUnknown())
      continue;
    std::optional<int64_t> expected = shape[i].evaluate(bindings);
    if (expected && *expected != result.dims()[i])
      mismatch();
  }
}

/// Shape inference relied on these (ir/shape/ShapeAssumption.h); inputs that break
/// one would make results disagree with the inferred types, so they are
/// refused before any node runs, naming the node that needed it.
void checkAssumptions(const Graph &graph, const Bindings &bindings) {
  for (const ShapeAssumption &assumption : graph.assumptions()) {
    if (assumption.holds(bindings) != false)
      continue;
    std::string bound;
    for (const std::string &symbol : assumption.expr.symbols()) {
      auto it = bindings.find(symbol);
      bound += (bound.empty() ? "" : ", ") + symbol + " = " +
               (it == bindings.end() ? std::string("?") : std::to_string(it->second));
    }
    fail(assumption.message, "; the inputs give ", bound);
  }
}

/// For each value consumed by a node, the position (in `order`) of its last use.
std::unordered_map<const Value *, size_t> lastUses(const std::vector<Node *> &order) {
  std::unordered_map<const Value *, size_t> last;
  for (size_t i = 0; i < order.size(); ++i)
    for (const Value *operand : order[i]->operands())
      if (operand)
        last[operand] = i;
  return last;
}

} // namespace

bool hasReferenceKernel(OpKind kind) {
  return referenceKernels().kernels[unsigned(kind)] != nullptr;
}

std::vector<Tensor> evaluateNode(const Node &node, const std::vector<const Tensor *> &operands) {
  Kernel kernel = referenceKernels().kernels[unsigned(node.kind())];
  if (!kernel)
    fail(node.describe(), ": op ", node.opName(), " has no reference kernel");
  const OpInfo &info = opInfo(node.kind());
  checkCount(node, "operands", operands.size(), info.minOperands, info.maxOperands);
  checkCount(node, "results", node.numResults(), info.minResults, info.maxResults);
  for (size_t i = 0; i < operands.size(); ++i)
    if (operands[i] && (!operands[i]->isDefined() || !operands[i]->hasData()))
      fail(node.describe(), ": operand ", i, " has no data");
  std::vector<Tensor> results(node.numResults());
  withSizeContext(node.describe(), [&] { kernel(node, operands, results); });
  for (size_t i = 0; i < results.size(); ++i)
    if (!results[i].isDefined() || !results[i].hasData())
      fail("internal error: ", node.describe(), ": kernel did not produce result ", i);
  return results;
}

std::vector<Tensor> evaluateGraph(const Graph &graph, const std::map<std::string, Tensor> &inputs) {
  std::unordered_map<const Value *, Tensor> env;
  Bindings bindings;
  for (const auto &[name, tensor] : inputs) {
    const Value *value = graph.findValue(name);
    if (!value || !value->isGraphInput())
      fail("unknown input '", name, "': the graph has no input of that name");
  }
  for (const Value *input : graph.inputs()) {
    auto it = inputs.find(input->name());
    if (it == inputs.end())
      fail("missing input '", input->name(), "' of type ", input->type().str());
    bindInput(*input, it->second, bindings);
    env[input] = it->second;
  }
  for (const Value *input : graph.inputs())
    checkInputExpressions(*input, env[input], bindings);
  checkAssumptions(graph, bindings);
  for (const Value *constant : graph.constants()) {
    if (!constant->constantValue().hasData())
      fail("constant '", constant->name(),
           "' has no contents (elided in the text IR) and cannot be evaluated");
    env[constant] = constant->constantValue();
  }

  std::vector<Node *> order = graph.topologicalOrder();
  std::unordered_map<const Value *, size_t> last = lastUses(order);
  for (size_t position = 0; position < order.size(); ++position) {
    const Node &node = *order[position];
    std::vector<const Tensor *> operands;
    operands.reserve(node.numOperands());
    for (const Value *operand : node.operands()) {
      if (!operand) {
        operands.push_back(nullptr);
        continue;
      }
      auto it = env.find(operand);
      if (it == env.end())
        fail(node.describe(), ": operand '", operand->name(), "' has not been computed");
      operands.push_back(&it->second);
    }
    std::vector<Tensor> results = evaluateNode(node, operands);
    for (size_t i = 0; i < results.size(); ++i) {
      checkAgainstInferred(node, i, results[i], bindings);
      const Value *value = node.result(i);
      if (value->hasUses() || graph.isOutput(value))
        env[value] = std::move(results[i]);
    }
    // Drop intermediates nothing later reads, so peak memory follows liveness.
    for (const Value *operand : node.operands())
      if (operand && operand->isNodeResult() && last[operand] == position &&
          !graph.isOutput(operand))
        env.erase(operand);
  }

  std::vector<Tensor> outputs;
  outputs.reserve(graph.outputs().size());
  for (const GraphOutput &output : graph.outputs()) {
    auto it = env.find(output.value);
    if (it == env.end())
      fail("output '", output.name, "' was not computed");
    outputs.push_back(it->second);
  }
  return outputs;
}

} // namespace onnxc
