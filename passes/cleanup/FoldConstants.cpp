//===- passes/cleanup/FoldConstants.cpp - Evaluate what is known at compile time ---===//
//
//   const %w: f32[4, 4]                      const %w: f32[4, 4]
//   %t = Transpose(%w)            ==>        const %t: f32[4, 4] = dense<...>
//
//   %s = Shape(%x: f32[batch, 128])          %s = Shape(%x)
//   %d = Gather(%s, %one) {axis = 0}  ==>    const %d: i64[] = dense<128>
//
// Two ways to learn a value: a node whose operands are all constants with
// data is run through the reference evaluator; and a small integer value
// whose contents shape inference knows to be constant dimensions (the shape
// chains exported models use to compute Reshape targets) becomes a constant
// even though its operands are not constants. Symbolic pieces stay as they
// are. Each constant takes the name of the value it replaces (an Identity of
// a constant is forwarded to it instead of copied). Results over
// kMaxFoldedElements are left alone (counted as "skipped (too large)") so
// that folding never blows up the model size, except where it cannot
// (foldsAtAnySize: weights' DequantizeLinear, a Transpose or Reshape of a
// constant read once). The two steps alternate until
// nothing more folds, and inferShapes re-runs after each change.
//
//===----------------------------------------------------------------------===//
#include "passes/MatchSupport.h"
#include "passes/Pass.h"

#include "ir/Error.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"

#include <algorithm>
#include <cassert>

namespace onnxc {

using match::matched;
using match::MatchStatus;
using match::Rejection;

namespace {

constexpr int64_t kMaxFoldedElements = int64_t(1) << 20;
constexpr unsigned kMaxRounds = 8;

/// Replaces every result of `node` with a constant holding the matching
/// tensor, under the result's name, and erases the node.
void replaceWithConstants(Graph &graph, Node *node, std::vector<Tensor> tensors) {
  std::vector<std::string> names;
  std::vector<Value *> constants;
  for (size_t i = 0; i < node->numResults(); ++i) {
    Value *result = node->result(i);
    names.push_back(result->name());
    Value *constant =
        graph.addConstant(graph.uniqueName(result->name() + ".folded"), std::move(tensors[i]));
    graph.replaceAllUsesWith(result, constant);
    constants.push_back(constant);
  }
  graph.eraseNode(node);
  for (size_t i = 0; i < constants.size(); ++i)
    graph.renameValue(constants[i], names[i]);
}

bool tooLarge(const Value *result) {
  std::optional<std::vector<int64_t>> dims = result->shape().staticDims();
  if (!dims)
    return false;
  int64_t elements = 1;
  for (int64_t d : *dims) {
    if (d > 0 && elements > kMaxFoldedElements / d)
      return true;
    elements *= d;
  }
  return elements > kMaxFoldedElements;
}

/// Whether `node`, whose operands are all constants, can be evaluated, or
/// why not.
MatchStatus evaluable(const Node &node) {
  for (const Value *operand : node.operands())
    if (operand && !operand->constantValue().hasData())
      return Rejection{"an operand is an elided constant"};
  if (!hasReferenceKernel(node.kind()))
    return Rejection{"the reference evaluator has no kernel for this op"};
  return matched();
}

/// Whether every reader of `value` takes it as a matrix product's weights
/// (directly or through a Transpose).
bool onlyWeights(const Value *value) {
  return value->hasUses() && std::all_of(value->uses().begin(), value->uses().end(), [](Use use) {
           OpKind kind = use.user->kind();
           return (use.operandIndex == 1 && (kind == OpKind::MatMul || kind == OpKind::Gemm)) ||
                  kind == OpKind::Transpose;
         });
}

/// Nodes folded whatever their size, because folding does not grow the
/// model the way the limit guards against: a DequantizeLinear of constant
/// weights read only by matrix products (the f32 weights a float model
/// would hold; an int4 MatMulNBits weight becomes one), and a Transpose or
/// Reshape of a constant nothing else reads (the same bytes, the operand
/// dies).
bool foldsAtAnySize(const Graph &graph, const Node &node) {
  if (node.kind() == OpKind::DequantizeLinear)
    return onlyWeights(node.result(0));
  if (node.kind() != OpKind::Transpose && node.kind() != OpKind::Reshape)
    return false;
  const Value *data = node.operand(0);
  return data && data->numUses() == 1 && !graph.isOutput(data);
}

bool allOperandsConstant(const Node &node) {
  return std::all_of(node.operands().begin(), node.operands().end(),
                     [](const Value *v) { return !v || v->isConstant(); });
}

/// One forward sweep: constants created early feed nodes later in the
/// order, so a chain of constant nodes folds in a single sweep.
bool foldEvaluableNodes(Graph &graph, PassContext &context) {
  bool changed = false;
  for (Node *node : graph.nodeList()) {
    // Nodes reading run-time values are not candidates, so they are not
    // explained: that would list most of the graph.
    if (!allOperandsConstant(*node))
      continue;
    // An Identity of a constant: its readers read the constant itself.
    // Folding would copy it, and torch writes a weight shared by several
    // modules (ALBERT's layers) as one Identity per use: one copy each.
    if (node->kind() == OpKind::Identity && node->operand(0) && !graph.isOutput(node->result(0))) {
      graph.replaceAllUsesWith(node->result(0), node->operand(0));
      graph.eraseNode(node);
      context.count("folded");
      changed = true;
      continue;
    }
    if (MatchStatus status = evaluable(*node); !status) {
      context.explain(*node, status.rejection().reason);
      continue;
    }
    bool anySize = foldsAtAnySize(graph, *node);
    if (!anySize && std::any_of(node->results().begin(), node->results().end(), tooLarge)) {
      context.count("skipped (too large)");
      context.explain(*node, "result has more than 1M elements");
      continue;
    }
    std::vector<const Tensor *> operands;
    for (const Value *operand : node->operands())
      operands.push_back(operand ? &operand->constantValue() : nullptr);
    std::vector<Tensor> results;
    try {
      results = evaluateNode(*node, operands);
    } catch (const Error &e) {
      // Left for run time, where the same error names the inputs that caused it.
      context.count("failed");
      context.explain(*node, std::string("evaluation failed: ") + e.what());
      continue;
    }
    assert(results.size() == node->numResults() && "evaluator returned the wrong result count");
    if (!anySize && std::any_of(results.begin(), results.end(), [](const Tensor &t) {
          return t.numElements() > kMaxFoldedElements;
        })) {
      context.count("skipped (too large)");
      context.explain(*node, "result has more than 1M elements");
      continue;
    }
    replaceWithConstants(graph, node, std::move(results));
    context.count("folded");
    changed = true;
  }
  return changed;
}

/// The tensor of an integer value whose contents inference knows to be
/// constant dimensions; nullopt when anything is not constant.
std::optional<Tensor> knownConstantTensor(const Value &value, const InferenceContext &inference) {
  if (!isInteger(value.dtype()))
    return std::nullopt;
  const std::vector<Dim> *contents = inference.knownContents(&value);
  std::optional<std::vector<int64_t>> dims = value.shape().staticDims();
  if (!contents || !dims || dims->size() > 1)
    return std::nullopt;
  if (int64_t(contents->size()) != (dims->empty() ? 1 : (*dims)[0]))
    return std::nullopt;
  Tensor tensor(value.dtype(), *dims);
  for (size_t i = 0; i < contents->size(); ++i) {
    std::optional<int64_t> c = (*contents)[i].constant();
    if (!c)
      return std::nullopt;
    if (value.dtype() == DType::I64)
      tensor.data<int64_t>()[i] = *c;
    else
      tensor.setElementFromDouble(int64_t(i), double(*c));
  }
  return tensor;
}

/// Turns node results with constant known contents into constants.
bool foldKnownContents(Graph &graph, const InferenceContext &inference, PassContext &context) {
  bool changed = false;
  for (Node *node : graph.nodeList()) {
    bool allResultsFolded = true;
    std::vector<Tensor> tensors;
    for (Value *result : node->results()) {
      std::optional<Tensor> t = knownConstantTensor(*result, inference);
      allResultsFolded &= t.has_value();
      tensors.push_back(t ? *t : Tensor());
    }
    if (allResultsFolded) {
      replaceWithConstants(graph, node, std::move(tensors));
      context.count("folded");
      changed = true;
      continue;
    }
    // A multi-result node with some results known: rebind just those.
    for (size_t i = 0; i < node->numResults(); ++i) {
      Value *result = node->result(i);
      if (!tensors[i].isDefined() || (!result->hasUses() && !graph.isOutput(result)))
        continue;
      Value *constant = graph.addConstant(graph.uniqueName(result->name() + ".folded"), tensors[i]);
      graph.replaceAllUsesWith(result, constant);
      context.count("folded");
      changed = true;
    }
  }
  return changed;
}

class FoldConstants : public Pass {
public:
  std::string_view name() const override { return "fold-constants"; }
  std::string_view description() const override {
    return "evaluate nodes with constant operands and constant shape chains";
  }

  bool run(Graph &graph, PassContext &context) override {
    context.count("folded", 0);
    bool changed = false;
    bool inferred = false;
    for (unsigned round = 0; round < kMaxRounds; ++round) {
      bool roundChanged = foldEvaluableNodes(graph, context);
      InferenceContext inference = inferShapes(graph);
      inferred = true;
      if (foldKnownContents(graph, inference, context)) {
        roundChanged = true;
        inferred = false;
      }
      changed |= roundChanged;
      if (!roundChanged)
        break;
    }
    if (!inferred)
      inferShapes(graph);
    return changed;
  }
};

} // namespace

std::unique_ptr<Pass> createFoldConstantsPass() { return std::make_unique<FoldConstants>(); }

} // namespace onnxc
