//===- passes/fusion/NormalizationMatch.cpp - Matching decomposed LayerNorm/RMSNorm ---===//
#include "passes/fusion/NormalizationMatch.h"

#include <cmath>

namespace onnxc::normmatch {

namespace {

bool near(std::optional<double> value, double expected) {
  return value && std::fabs(*value - expected) <= 1e-6 * std::fabs(expected);
}

/// The inverse of the standard deviation from `sqrt`'s only user, when it
/// is Reciprocal(s) or Div(1, s).
Node *reciprocalOf(const Graph &graph, const Value *root) {
  Node *user = soleUser(graph, root);
  if (!user)
    return nullptr;
  if (user->kind() == OpKind::Reciprocal)
    return user;
  if (user->kind() == OpKind::Div && user->operand(1) == root &&
      near(scalarConstant(user->operand(0)), 1.0))
    return user;
  return nullptr;
}

/// Walks from `statistic` to the node computing numerator / sqrt(v + ε),
/// or says why the chain is something else.
MatchResult<Node *> matchNormalize(const Graph &graph, const Node &statistic,
                                   const Value *numerator, NormalizationTail &tail) {
  const Value *variance = statistic.result(0);
  Node *addEpsilon = soleUser(graph, variance);
  Value *epsilon = addEpsilon ? otherOperand(*addEpsilon, OpKind::Add, variance) : nullptr;
  if (!epsilon)
    return Rejection{"the mean of squares is not followed by + epsilon alone"};
  std::optional<double> epsilonValue = scalarConstant(epsilon);
  if (!epsilonValue)
    return Rejection{"epsilon is not a scalar constant"};
  tail.epsilon = *epsilonValue;
  tail.nodes.push_back(addEpsilon);
  const Value *shifted = addEpsilon->result(0);
  Node *next = soleUser(graph, shifted);
  const Value *inverse = nullptr;
  if (next && next->kind() == OpKind::Sqrt) {
    tail.nodes.push_back(next);
    const Value *root = next->result(0);
    Node *user = soleUser(graph, root);
    if (user && user->kind() == OpKind::Div && user->operand(1) == root &&
        user->operand(0) == numerator)
      return user;
    Node *reciprocal = reciprocalOf(graph, root);
    if (!reciprocal)
      return Rejection{"the standard deviation does not divide the numerator alone"};
    tail.nodes.push_back(reciprocal);
    inverse = reciprocal->result(0);
  } else if (next && next->kind() == OpKind::Pow && next->operand(0) == shifted &&
             near(scalarConstant(next->operand(1)), -0.5)) {
    tail.nodes.push_back(next);
    inverse = next->result(0);
  } else {
    return Rejection{"variance + epsilon is not followed by Sqrt or Pow -0.5 alone"};
  }
  Node *multiply = soleUser(graph, inverse);
  if (!multiply || otherOperand(*multiply, OpKind::Mul, inverse) != numerator)
    return Rejection{"the inverse standard deviation does not multiply the numerator alone"};
  return multiply;
}

} // namespace

bool reducesLastAxisOnly(const Node &reduce) {
  const Value *input = reduce.operand(0);
  const Value *axes = reduce.operand(1);
  if (!input || !axes || !input->shape().isRanked() || input->shape().rank() == 0 ||
      !axes->isConstant() || !axes->constantValue().hasData() ||
      axes->constantValue().numElements() != 1 || reduce.getInt("keepdims", 1) != 1)
    return false;
  int64_t rank = int64_t(input->shape().rank());
  int64_t axis = axes->constantValue().elementAsInt64(0);
  return axis == -1 || axis == rank - 1;
}

bool isPerChannel(const Value *operand, const Shape &x) {
  if (!operand || !isFloat(operand->dtype()) || !x.isRanked() || x.rank() == 0)
    return false;
  const Shape &shape = operand->shape();
  if (!shape.isRanked() || shape.rank() == 0 || shape.rank() > x.rank())
    return false;
  // The fused ops want a vector; only a constant can be reshaped for free.
  if (shape.rank() > 1 && !operand->isConstant())
    return false;
  for (size_t i = 0; i + 1 < shape.rank(); ++i)
    if (shape[i].constant() != 1)
      return false;
  return shape[shape.rank() - 1].provablyEqual(x[x.rank() - 1]);
}

MatchStatus matchNormalizationTail(const Graph &graph, const Node &statistic,
                                   const Value *numerator, const Shape &x, bool allowBeta,
                                   NormalizationTail &tail) {
  tail = NormalizationTail();
  MatchResult<Node *> normalize = matchNormalize(graph, statistic, numerator, tail);
  if (!normalize)
    return normalize.rejection();
  Node *current = *normalize;
  tail.nodes.push_back(current);
  // The optional stages end the chain wherever a value has another reader:
  // what follows is then simply not part of the normalization.
  Node *user = soleUser(graph, current->result(0));
  if (user && user->kind() == OpKind::Cast && isFloat(user->result(0)->dtype())) {
    tail.castBack = user;
    tail.nodes.push_back(user);
    current = user;
    user = soleUser(graph, current->result(0));
  }
  if (user && user->kind() == OpKind::Mul) {
    Value *gamma = otherOperand(*user, OpKind::Mul, current->result(0));
    if (gamma && gamma != current->result(0) && isPerChannel(gamma, x)) {
      tail.gamma = gamma;
      tail.nodes.push_back(user);
      current = user;
      user = soleUser(graph, current->result(0));
    } else if (gamma && gamma->isConstant()) {
      return Rejection{"the scale is not a vector over the normalized axis"};
    }
  }
  if (allowBeta && user && user->kind() == OpKind::Add) {
    Value *beta = otherOperand(*user, OpKind::Add, current->result(0));
    if (beta && beta != current->result(0) && isPerChannel(beta, x)) {
      tail.beta = beta;
      tail.nodes.push_back(user);
      current = user;
    }
  }
  tail.root = current;
  return matched();
}

MatchResult<Value *> fusedInput(Value *x, const NormalizationTail &tail) {
  const Value *result = tail.root->result(0);
  Value *input = x;
  // An f32 computation of a narrower (or identical) input type: the fused op
  // reads the input itself and keeps its statistics in f32 (stash_type 1).
  Node *cast = x->definingNode();
  if (cast && cast->kind() == OpKind::Cast && cast->operand(0)->dtype() == result->dtype() &&
      x->dtype() == DType::F32)
    input = cast->operand(0);
  if (input->dtype() != result->dtype())
    return Rejection{"the result's type differs from the input's (casts that do not round-trip)"};
  if (!provablySameShape(input->shape(), result->shape()))
    return Rejection{"the chain broadcasts the input to another shape"};
  return input;
}

Value *channelVector(Graph &graph, Value *operand) {
  if (!operand || operand->shape().rank() == 1)
    return operand;
  const Tensor &t = operand->constantValue();
  int64_t channels = t.dims().back();
  return graph.addConstant(graph.uniqueName(operand->name() + ".vector"),
                           std::make_shared<const Tensor>(t.reshaped({channels})));
}

MatchResult<Value *> fusedScale(Graph &graph, const Value *input, const NormalizationTail &tail) {
  if (tail.gamma)
    return channelVector(graph, tail.gamma);
  std::optional<int64_t> channels = input->shape()[input->shape().rank() - 1].constant();
  if (!channels)
    return Rejection{"no scale, and the normalized extent is not a constant"};
  Tensor ones(input->dtype(), {*channels});
  for (int64_t i = 0; i < *channels; ++i)
    ones.setElementFromDouble(i, 1.0);
  std::string name = graph.uniqueName(tail.root->result(0)->name() + ".ones");
  return graph.addConstant(name, std::move(ones));
}

void replaceChain(Graph &graph, Node *fused, const std::vector<Node *> &chain, Node *inputCast,
                  std::unordered_set<const Node *> &erased) {
  Node *root = chain.back();
  std::string resultName = root->result(0)->name();
  fused->result(0)->setType(root->result(0)->type());
  graph.replaceAllUsesWith(root->result(0), fused->result(0));
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
    bool used = false;
    for (const Value *result : (*it)->results())
      used |= result->hasUses() || graph.isOutput(result);
    if (used || erased.count(*it))
      continue;
    erased.insert(*it);
    graph.eraseNode(*it);
  }
  graph.renameValue(fused->result(0), resultName);
  if (inputCast && !erased.count(inputCast) && !inputCast->result(0)->hasUses() &&
      !graph.isOutput(inputCast->result(0))) {
    erased.insert(inputCast);
    graph.eraseNode(inputCast);
  }
}

MatchStatus fuseNormalization(Graph &graph, OpKind kind, Value *x, const NormalizationTail &tail,
                              const std::vector<Node *> &nodes,
                              std::unordered_set<const Node *> &erased) {
  MatchResult<Value *> input = fusedInput(x, tail);
  if (!input)
    return input.rejection();
  MatchResult<Value *> scale = fusedScale(graph, *input, tail);
  if (!scale)
    return scale.rejection();
  std::vector<Value *> operands = {*input, *scale};
  if (tail.beta)
    operands.push_back(channelVector(graph, tail.beta));
  Node *root = tail.root;
  Node *fused = graph.createNode(kind, operands, 1, root->name(), {}, root);
  fused->setAttr("axis", int64_t(-1));
  fused->setAttr("epsilon", float(tail.epsilon));
  Node *inputCast = x != *input ? x->definingNode() : nullptr;
  replaceChain(graph, fused, nodes, inputCast, erased);
  return matched();
}

} // namespace onnxc::normmatch
