//===- ir/infer/ShapeInference.cpp - The shape inference driver -----------===//
//
// Visits nodes in topological order, applies each op's rule (registered per
// op family in the other files of this folder), then propagates the known
// contents of small integer tensors so later rules can see through
// exported shape computations.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/ShapeInference.h"

#include "ir/Error.h"
#include "ir/infer/KnownContents.h"
#include "ir/infer/ShapeRules.h"

#include <algorithm>

namespace onnxc {

const ShapeRuleTable &shapeRules() {
  static const ShapeRuleTable table = [] {
    ShapeRuleTable t;
    registerElementwiseShapeRules(t);
    registerMovementShapeRules(t);
    registerLinearAlgebraShapeRules(t);
    registerScatterGatherShapeRules(t);
    registerQuantizationShapeRules(t);
    registerPoolingShapeRules(t);
    registerResizeShapeRules(t);
    registerControlFlowShapeRules(t);
    return t;
  }();
  return table;
}

namespace {

void recordSymbols(const Shape &shape, std::unordered_set<std::string> &used) {
  for (const Dim &d : shape.dims())
    for (const std::string &symbol : d.symbols())
      used.insert(symbol);
}

} // namespace

InferenceContext::InferenceContext(Graph &graph) : graph_(graph) {
  for (const Value *input : graph.inputs())
    recordSymbols(input->shape(), usedSymbols_);
  inputSymbols_ = usedSymbols_;
  for (const Value *constant : graph.constants()) {
    recordSymbols(constant->shape(), usedSymbols_);
    if (std::optional<std::vector<Dim>> contents = contentsOfTensor(constant->constantValue()))
      contents_[constant] = std::move(*contents);
  }
}

const std::vector<Dim> *InferenceContext::knownContents(const Value *value) const {
  auto it = contents_.find(value);
  return it == contents_.end() ? nullptr : &it->second;
}

void InferenceContext::setKnownContents(const Value *value, std::vector<Dim> contents) {
  contents_[value] = std::move(contents);
}

void InferenceContext::assume(const Node &node, Dim expr, ShapeAssumption::Kind kind,
                              std::string requirement) {
  if (expr.isUnknown())
    return;
  ShapeAssumption assumption{std::move(expr), kind, node.describe() + ": " + requirement};
  if (assumption.provable())
    return;
  if (assumption.refuted())
    fail(assumption.message);
  for (const std::string &symbol : assumption.expr.symbols())
    if (!inputSymbols_.count(symbol))
      return; // a symbol inference made up: nothing at run time can bind it
  pending_.push_back(std::move(assumption));
}

void InferenceContext::assumeEqual(const Node &node, const Dim &a, const Dim &b,
                                   const std::string &what) {
  assume(node, a - b, ShapeAssumption::Kind::Zero, what + " " + a.str() + " must equal " + b.str());
}

void InferenceContext::assumeAtMost(const Node &node, const Dim &a, const Dim &b,
                                    const std::string &what) {
  assume(node, b - a, ShapeAssumption::Kind::NonNegative,
         what + " " + a.str() + " must be at most " + b.str());
}

void InferenceContext::assumeBroadcastsTo(const Node &node, const Dim &a, const Dim &c,
                                          const std::string &what) {
  // (a - 1)(a - c) is zero exactly when a is 1 or c.
  assume(node, (a - Dim(1)) * (a - c), ShapeAssumption::Kind::Zero,
         what + " " + a.str() + " must be 1 or " + c.str());
}

size_t derivedRank(const Node &node, size_t base, int64_t length, const char *what) {
  if (length < 0)
    fail(node.describe(), ": ", what, " has a negative length ", length);
  if (length > kMaxDerivedRank - int64_t(base))
    fail(node.describe(), ": ", what, " has ", length, " elements, so the result would have rank ",
         uint64_t(base) + uint64_t(length), "; onnxc supports ranks up to ", kMaxDerivedRank);
  return base + size_t(length);
}

bool InferenceContext::canReplace(const Dim &symbol, const Dim &replacement) const {
  if (!symbol.isSymbol() || replacement.isUnknown() || !inputSymbols_.count(symbol.symbolName()))
    return false;
  // The replacement's symbols must stay bound by some input axis: input
  // symbols are, since only a replaced symbol ever loses its axes.
  for (const std::string &name : replacement.symbols())
    if (name == symbol.symbolName() || !inputSymbols_.count(name))
      return false;
  return true;
}

Dim InferenceContext::resolve(const Dim &dim) const {
  Dim resolved = dim;
  for (const auto &[symbol, replacement] : unified_)
    resolved = resolved.substitute(symbol, replacement);
  for (const auto &[symbol, replacement] : pendingUnifications_)
    resolved = resolved.substitute(symbol, replacement);
  return resolved;
}

std::optional<Dim> InferenceContext::unify(const Dim &a, const Dim &b) {
  Dim left = resolve(a), right = resolve(b);
  if (left.provablyEqual(right))
    return left;
  // Keep the derived expression (past+seq) and drop the input's own name
  // for it; between two plain symbols, keep the first operand's.
  const Dim *replaced = nullptr, *kept = nullptr;
  if (canReplace(right, left)) {
    replaced = &right;
    kept = &left;
  } else if (canReplace(left, right)) {
    replaced = &left;
    kept = &right;
  } else {
    return std::nullopt;
  }
  for (auto &[symbol, replacement] : pendingUnifications_)
    replacement = replacement.substitute(replaced->symbolName(), *kept);
  pendingUnifications_.emplace_back(replaced->symbolName(), *kept);
  return *kept;
}

namespace {
Shape substituteShape(const Shape &shape, const std::string &symbol, const Dim &replacement) {
  if (!shape.isRanked())
    return shape;
  std::vector<Dim> dims;
  for (const Dim &d : shape.dims())
    dims.push_back(d.substitute(symbol, replacement));
  return Shape(std::move(dims));
}

void substituteValueType(Value &value, const std::string &symbol, const Dim &replacement) {
  value.setType({value.dtype(), substituteShape(value.shape(), symbol, replacement)});
}
} // namespace

void InferenceContext::applyUnification(const std::string &symbol, const Dim &replacement) {
  for (Value *input : graph_.inputs())
    substituteValueType(*input, symbol, replacement);
  for (Node *node : graph_.nodeList())
    for (Value *result : node->results())
      if (result)
        substituteValueType(*result, symbol, replacement);
  for (auto &[value, contents] : contents_)
    for (Dim &d : contents)
      d = d.substitute(symbol, replacement);
  for (ShapeAssumption &assumption : pending_)
    assumption.expr = assumption.expr.substitute(symbol, replacement);
  // The graph's assumptions in the new terms: some now hold trivially.
  std::vector<ShapeAssumption> kept;
  for (ShapeAssumption assumption : graph_.assumptions()) {
    assumption.expr = assumption.expr.substitute(symbol, replacement);
    if (assumption.refuted())
      fail(assumption.message, " (with ", symbol, " = ", replacement.str(), ")");
    if (!assumption.provable())
      kept.push_back(std::move(assumption));
  }
  graph_.eraseAssumptionsIf([](const ShapeAssumption &) { return true; });
  for (ShapeAssumption &assumption : kept)
    graph_.addAssumption(std::move(assumption));
  for (auto &[done, by] : unified_)
    by = by.substitute(symbol, replacement);
  unified_.emplace_back(symbol, replacement);
}

void InferenceContext::commitAssumptions() {
  std::vector<std::pair<std::string, Dim>> unifications = std::move(pendingUnifications_);
  pendingUnifications_.clear();
  for (const auto &[symbol, replacement] : unifications)
    applyUnification(symbol, replacement);
  for (ShapeAssumption &assumption : pending_) {
    if (assumption.provable())
      continue;
    if (assumption.refuted())
      fail(assumption.message);
    graph_.addAssumption(std::move(assumption));
  }
  pending_.clear();
}

Dim InferenceContext::freshSymbol(const std::string &hint) {
  std::string base = hint.empty() ? "dim" : hint;
  std::string name = base;
  unsigned &suffix = nextSuffix_[base];
  while (usedSymbols_.count(name))
    name = base + "_" + std::to_string(++suffix);
  usedSymbols_.insert(name);
  return Dim::symbol(name);
}

namespace {
/// Rules index operands and results freely, so counts are checked first.
void checkCounts(const Node &node) {
  const OpInfo &info = opInfo(node.kind());
  auto outside = [](size_t count, int low, int high) {
    return int64_t(count) < low || (high >= 0 && int64_t(count) > high);
  };
  if (outside(node.numOperands(), info.minOperands, info.maxOperands))
    fail(node.describe(), ": op ", node.opName(), " cannot take ", node.numOperands(), " operands");
  if (outside(node.numResults(), info.minResults, info.maxResults))
    fail(node.describe(), ": op ", node.opName(), " cannot have ", node.numResults(), " results");
}
/// Every result's element count and byte size must be an int64 (symbolic
/// ones coefficient by coefficient): later stages size buffers from them.
void checkResultSizes(const Node &node) {
  for (const Value *result : node.results()) {
    const Shape &shape = result->shape();
    if (!shape.isRanked())
      continue;
    for (size_t axis = 0; axis < shape.rank(); ++axis)
      if (std::optional<int64_t> d = shape[axis].constant(); d && *d < 0)
        fail(node.describe(), ": result '%", result->name(), "' has the negative dimension ", *d,
             " (shape ", shape.str(), ")");
    std::optional<Dim> bytes = Dim(int64_t(dtypeSize(result->dtype())));
    bool tooLarge = false;
    for (size_t axis = 0; bytes && axis < shape.rank(); ++axis)
      bytes = Dim::tryMultiply(*bytes, shape[axis], &tooLarge);
    if (!bytes)
      throw SizeError(node.describe() + ": result '%" + result->name() + "' (" +
                      result->type().str() + ") has " +
                      (tooLarge ? "a byte count expression past " + std::to_string(Dim::kMaxTerms) +
                                      " terms or degree " + std::to_string(Dim::kMaxDegree)
                                : std::string("more bytes than int64 can count")));
  }
}
/// i4/u4 values are computed as 8-bit integers, which only data movement,
/// Cast and the quantization ops (whose rules know the 4-bit range) get
/// right; ONNX allows them no other op either. Anything else is refused
/// here rather than computed in 8 bits.
bool takesFourBitOperands(OpKind kind) {
  switch (kind) {
  case OpKind::Identity:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Transpose:
  case OpKind::Gather:
  case OpKind::Slice:
  case OpKind::Concat:
  case OpKind::Split:
  case OpKind::Expand:
  case OpKind::TensorScatter:
  case OpKind::Shape:
  case OpKind::Size:
  case OpKind::Cast:
  case OpKind::CastLike:
  case OpKind::QuantizeLinear:
  case OpKind::DequantizeLinear:
  case OpKind::BlockQuantizedMatMul:
  case OpKind::If:
  case OpKind::Loop:
  case OpKind::Scan:
    return true;
  default:
    return false;
  }
}

void checkFourBitOperands(const Node &node) {
  if (takesFourBitOperands(node.kind()))
    return;
  for (const Value *operand : node.operands())
    if (operand && isFourBit(operand->dtype()))
      fail(node.describe(), ": op ", node.opName(), " does not take ", dtypeName(operand->dtype()),
           " values ('%", operand->name(),
           "'); 4-bit integers only go through data movement, Cast and the quantization ops");
}
} // namespace

void inferNodeShapes(Node &node, InferenceContext &context) {
  checkCounts(node);
  checkFourBitOperands(node);
  ShapeRule rule = shapeRules().rules[unsigned(node.kind())];
  if (!rule)
    fail(node.describe(), ": op ", node.opName(), " has no shape rule");
  // Constants added by a pass after the context was made are picked up here.
  for (const Value *operand : node.operands())
    if (operand && operand->isConstant() && !context.knownContents(operand))
      if (std::optional<std::vector<Dim>> contents = contentsOfTensor(operand->constantValue()))
        context.setKnownContents(operand, std::move(*contents));
  context.discardAssumptions();
  withSizeContext(node.describe(), [&] {
    rule(node, context);
    checkResultSizes(node);
    propagateKnownContents(node, context);
  });
  context.commitAssumptions();
}

InferenceContext
inferShapes(Graph &graph,
            const std::vector<std::pair<const Value *, std::vector<Dim>>> &knownInputs) {
  InferenceContext context(graph);
  for (const auto &[input, contents] : knownInputs)
    context.setKnownContents(input, contents);
  for (Node *node : graph.topologicalOrder()) {
    for (size_t i = 0; i < node->numOperands(); ++i) {
      const Value *operand = node->operand(i);
      if (operand && operand->dtype() == DType::Unknown)
        fail(node->describe(), ": operand ", i, " ('%", operand->name(), "') has unknown dtype");
    }
    inferNodeShapes(*node, context);
  }
  return context;
}

} // namespace onnxc
