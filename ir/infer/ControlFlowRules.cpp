//===- ir/infer/ControlFlowRules.cpp - If, Loop and Scan shape rules -------===//
//
// A subgraph's inputs take the types of the operands they correspond to
// (ir/Subgraph.h), the subgraph is inferred on its own, and its output
// types come back out. A dim is only carried out of a subgraph when every
// symbol in it is one its inputs name (an outer symbol); a symbol the
// subgraph made up means nothing outside and becomes a fresh outer symbol.
//
// If: the branches' result types are merged: dims equal in both stay, dims
// that differ become fresh symbols, differing ranks an unranked shape.
// Loop and Scan: a carried value whose type the body changes is widened the
// same way (first to fresh symbols, then to unknown dims, then unranked)
// and the body inferred again, until its input and output types agree.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/ShapeRules.h"

#include "ir/Error.h"
#include "ir/Subgraph.h"

#include <cassert>
#include <optional>
#include <unordered_set>

namespace onnxc {
namespace {

/// Infers `body` with its inputs typed `inputTypes`; a captured input whose
/// operand's contents are known (a shape tensor) is known inside too.
/// Errors name the node and the region first.
void inferBody(const Node &node, const std::string &region, Graph &body,
               const std::vector<TensorType> &inputTypes, const InferenceContext &outer) {
  assert(inputTypes.size() == body.inputs().size());
  size_t firstCapture = body.inputs().size() - numCaptures(node);
  std::vector<std::pair<const Value *, std::vector<Dim>>> known;
  for (size_t i = 0; i < inputTypes.size(); ++i) {
    body.inputs()[i]->setType(inputTypes[i]);
    size_t operand = node.kind() == OpKind::If ? i + 1 : i;
    if (i >= firstCapture && node.operand(operand) &&
        inputTypes[i] == node.operand(operand)->type())
      if (const std::vector<Dim> *contents = outer.knownContents(node.operand(operand)))
        known.emplace_back(body.inputs()[i], *contents);
  }
  try {
    inferShapes(body, known);
  } catch (const SizeError &) {
    throw;
  } catch (const Error &e) {
    fail(node.describe(), ": ", region, ": ", e.what());
  }
}

std::unordered_set<std::string> inputSymbols(const Graph &body) {
  std::unordered_set<std::string> symbols;
  for (const Value *input : body.inputs())
    if (input->shape().isRanked())
      for (const Dim &dim : input->shape().dims())
        for (const std::string &symbol : dim.symbols())
          symbols.insert(symbol);
  return symbols;
}

/// A body output's type as the outer graph may see it.
TensorType exported(const TensorType &type, const std::unordered_set<std::string> &known,
                    InferenceContext &context, const std::string &hint) {
  if (!type.shape.isRanked())
    return type;
  std::vector<Dim> dims;
  for (const Dim &dim : type.shape.dims()) {
    bool meaningful = !dim.isUnknown();
    for (const std::string &symbol : dim.symbols())
      meaningful = meaningful && known.count(symbol);
    dims.push_back(meaningful ? dim : context.freshSymbol(hint));
  }
  return {type.dtype, Shape(std::move(dims))};
}

/// The type covering both `a` and `b`; `widen` makes each differing dim.
template <typename Widen>
TensorType merged(const Node &node, const TensorType &a, const TensorType &b, const char *what,
                  Widen widen) {
  DType dtype = a.dtype;
  if (a.dtype != b.dtype) {
    if (a.dtype != DType::Unknown && b.dtype != DType::Unknown)
      fail(node.describe(), ": ", what, " is ", dtypeName(a.dtype), " on one path and ",
           dtypeName(b.dtype), " on the other");
    dtype = a.dtype == DType::Unknown ? b.dtype : a.dtype;
  }
  if (!a.shape.isRanked() || !b.shape.isRanked() || a.shape.rank() != b.shape.rank())
    return {dtype, Shape::unranked()};
  std::vector<Dim> dims;
  for (size_t i = 0; i < a.shape.rank(); ++i)
    dims.push_back(a.shape[i] == b.shape[i] && !a.shape[i].isUnknown() ? a.shape[i] : widen());
  return {dtype, Shape(std::move(dims))};
}

void requireBoolCondition(const Node &node, const Value *cond, const char *what) {
  if (cond && cond->dtype() != DType::Unknown && cond->dtype() != DType::Bool)
    fail(node.describe(), ": the ", what, " must be bool, got ", dtypeName(cond->dtype()));
}

/// A condition or trip count holds one element (a scalar or [1]), which is
/// all the compiled code reads: a count that may differ is checked when the
/// inputs are bound, one that must differ is an error now.
void requireOneElement(const Node &node, const Value *value, const char *what,
                       InferenceContext &context) {
  if (!value || !value->shape().isRanked())
    return;
  Dim count = value->shape().numElements();
  if (std::optional<int64_t> known = count.constant(); known && *known != 1)
    fail(node.describe(), ": the ", what, " must hold one element, but its shape ",
         value->shape().str(), " holds ", *known);
  context.assumeEqual(node, count, Dim(1), std::string("the ") + what + "'s element count");
}

// --- If ------------------------------------------------------------------------

/// The condition's value when shape inference knows it (Equal(Size(x), 4)).
std::optional<bool> knownCondition(const Node &node, const InferenceContext &context) {
  const std::vector<Dim> *contents = context.knownContents(node.operand(0));
  if (!contents || contents->size() != 1 || !(*contents)[0].constant())
    return std::nullopt;
  return *(*contents)[0].constant() != 0;
}

// Exporters' function expansions (AffineGrid) branch on the rank of an
// input, so the branch not taken is often ill-typed for the shapes at hand:
// with a known condition only the taken branch is inferred, and otherwise a
// branch whose inference fails is taken to be the one that cannot run (the
// evaluator still reports it, naming its node, should it run after all).
void inferIf(Node &node, InferenceContext &context) {
  requireBoolCondition(node, node.operand(0), "condition");
  requireOneElement(node, node.operand(0), "condition", context);
  std::vector<TensorType> captured;
  for (size_t i = 1; i < node.numOperands(); ++i)
    captured.push_back(node.operand(i)->type());
  std::optional<bool> taken = knownCondition(node, context);
  std::vector<std::vector<TensorType>> branchTypes;
  std::optional<Error> firstFailure;
  for (const char *region : {"then_branch", "else_branch"}) {
    if (taken && *taken != (region[0] == 't'))
      continue;
    Graph &branch = *node.subgraph(region);
    try {
      inferBody(node, region, branch, captured, context);
    } catch (const SizeError &) {
      throw;
    } catch (const Error &e) {
      if (!firstFailure)
        firstFailure = e;
      continue;
    }
    std::unordered_set<std::string> known = inputSymbols(branch);
    std::vector<TensorType> types;
    for (const GraphOutput &output : branch.outputs())
      types.push_back(exported(output.value->type(), known, context, "if_dim"));
    branchTypes.push_back(std::move(types));
  }
  if (branchTypes.empty())
    throw *firstFailure;
  for (size_t i = 0; i < node.numResults(); ++i)
    node.result(i)->setType(branchTypes.size() == 1
                                ? branchTypes[0][i]
                                : merged(node, branchTypes[0][i], branchTypes[1][i], "an If result",
                                         [&] { return context.freshSymbol("if_dim"); }));
}

// --- Loop and Scan ---------------------------------------------------------------

/// Infers `body` until the carried inputs [first, first + count) take the
/// types of outputs [outFirst, outFirst + count). Returns the carried types.
std::vector<TensorType> inferToFixedPoint(Node &node, Graph &body,
                                          std::vector<TensorType> inputTypes, size_t first,
                                          size_t outFirst, size_t count, InferenceContext &context,
                                          const std::string &hint) {
  for (int round = 0;; ++round) {
    inferBody(node, "body", body, inputTypes, context);
    std::unordered_set<std::string> known = inputSymbols(body);
    bool changed = false;
    for (size_t i = 0; i < count; ++i) {
      const TensorType &in = inputTypes[first + i];
      TensorType out = exported(body.outputs()[outFirst + i].value->type(), known, context, hint);
      TensorType widened = merged(node, in, out, "a loop-carried value", [&] {
        return round == 0 ? context.freshSymbol(hint) : Dim::unknown();
      });
      if (round >= 2 && widened != in)
        widened.shape = Shape::unranked();
      if (widened != in) {
        inputTypes[first + i] = widened;
        changed = true;
      }
    }
    if (!changed)
      return {inputTypes.begin() + std::ptrdiff_t(first),
              inputTypes.begin() + std::ptrdiff_t(first + count)};
    assert(round < 4 && "widening reaches a fixed point in three rounds");
  }
}

/// Whether the body's condition output is always true: its condition input
/// passed through, or a true constant (torch.onnx's `for` loops return
/// Identity of an outer `true`, a constant once Identity is gone).
bool conditionStaysTrue(const Graph &body) {
  const Value *output = body.outputs()[0].value;
  if (output == body.inputs()[1])
    return true;
  if (!output->isConstant())
    return false;
  const Tensor &value = output->constantValue();
  return value.hasData() && value.numElements() == 1 && value.elementAsDouble(0) != 0;
}

/// The trip count of a Loop when it is known: M given as a constant (or
/// known from shapes), no initial condition or a true one, and a body
/// whose condition stays true.
Dim tripCount(const Node &node, const Graph &body, InferenceContext &context) {
  const std::vector<Dim> *m = node.operand(0) ? context.knownContents(node.operand(0)) : nullptr;
  const std::vector<Dim> *cond = node.operand(1) ? context.knownContents(node.operand(1)) : nullptr;
  bool conditionTrue = !node.operand(1) || (cond && cond->size() == 1 && (*cond)[0] == Dim(1));
  bool passThrough = conditionStaysTrue(body);
  if (m && m->size() == 1 && conditionTrue && passThrough) {
    // A trip count of 0 or less runs no iteration (ONNX): no rows.
    if (std::optional<int64_t> trips = (*m)[0].constant(); trips && *trips < 0)
      return Dim(0);
    return (*m)[0];
  }
  return context.freshSymbol("loop_trips");
}

/// Per-iteration outputs stacked along `axis` with `length` entries.
TensorType stacked(const TensorType &slice, const Dim &length, int64_t axis, const Node &node) {
  if (!slice.shape.isRanked())
    return slice;
  std::vector<Dim> dims = slice.shape.dims();
  int64_t rank = int64_t(dims.size()) + 1, given = axis;
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    fail(node.describe(), ": scan output axis ", given, " is out of range for rank ", rank);
  dims.insert(dims.begin() + axis, length);
  return {slice.dtype, Shape(std::move(dims))};
}

void inferLoop(Node &node, InferenceContext &context) {
  if (const Value *m = node.operand(0);
      m && m->dtype() != DType::Unknown && m->dtype() != DType::I64)
    fail(node.describe(), ": the trip count must be i64, got ", dtypeName(m->dtype()));
  requireBoolCondition(node, node.operand(1), "condition");
  requireOneElement(node, node.operand(0), "trip count", context);
  requireOneElement(node, node.operand(1), "condition", context);
  Graph &body = *node.subgraph("body");
  size_t carried = loopCarriedCount(node);
  std::vector<TensorType> inputTypes{{DType::I64, Shape::scalar()}, {DType::Bool, Shape::scalar()}};
  for (size_t i = 2; i < body.inputs().size(); ++i)
    inputTypes.push_back(node.operand(i)->type());
  std::vector<TensorType> carriedTypes =
      inferToFixedPoint(node, body, inputTypes, 2, 1, carried, context, "loop_dim");
  requireBoolCondition(node, body.outputs()[0].value, "body's condition output");
  requireOneElement(node, body.outputs()[0].value, "body's condition output", context);
  for (size_t i = 0; i < carried; ++i)
    node.result(i)->setType(carriedTypes[i]);
  std::unordered_set<std::string> known = inputSymbols(body);
  Dim trips = tripCount(node, body, context);
  for (size_t i = carried; i < node.numResults(); ++i) {
    TensorType slice = exported(body.outputs()[1 + i].value->type(), known, context, "loop_dim");
    node.result(i)->setType(stacked(slice, trips, 0, node));
  }
}

int64_t attributeEntry(const Node &node, const char *name, size_t i) {
  std::vector<int64_t> values = node.getInts(name);
  if (values.empty())
    return 0;
  if (i >= values.size())
    fail(node.describe(), ": attribute '", name, "' has ", values.size(),
         " entries, expected more");
  return values[i];
}

/// A Scan's per-input and per-output attribute lists: absent, or one entry
/// per scan input (output), directions 0 or 1.
void checkScanAttributes(const Node &node, size_t inputs, size_t outputs) {
  struct List {
    const char *name;
    size_t count;
    bool direction;
  };
  for (List list :
       {List{"scan_input_axes", inputs, false}, List{"scan_input_directions", inputs, true},
        List{"scan_output_axes", outputs, false}, List{"scan_output_directions", outputs, true}}) {
    if (!node.hasAttr(list.name))
      continue;
    std::vector<int64_t> values = node.getInts(list.name);
    if (values.size() != list.count)
      fail(node.describe(), ": attribute '", list.name, "' has ", values.size(), " entries for ",
           list.count, " scan ", list.name[5] == 'i' ? "inputs" : "outputs");
    if (list.direction)
      for (int64_t value : values)
        if (value != 0 && value != 1)
          fail(node.describe(), ": attribute '", list.name, "' has entry ", value,
               "; a direction is 0 (forward) or 1 (reverse)");
  }
}

void inferScan(Node &node, InferenceContext &context) {
  Graph &body = *node.subgraph("body");
  size_t states = scanStateCount(node), inputs = scanInputCount(node);
  checkScanAttributes(node, inputs, node.numResults() - states);
  std::vector<TensorType> inputTypes;
  Dim length = Dim::unknown();
  for (size_t i = 0; i < node.numOperands(); ++i) {
    TensorType type = node.operand(i)->type();
    if (i >= states && i < states + inputs && type.shape.isRanked()) {
      int64_t rank = int64_t(type.shape.rank());
      int64_t given = attributeEntry(node, "scan_input_axes", i - states);
      int64_t axis = given < 0 ? given + rank : given;
      if (axis < 0 || axis >= rank)
        fail(node.describe(), ": scan_input_axes entry ", given, " is out of range for rank ",
             rank);
      std::vector<Dim> dims = type.shape.dims();
      if (length.isUnknown())
        length = dims[size_t(axis)];
      dims.erase(dims.begin() + axis);
      type.shape = Shape(std::move(dims));
    } else if (i >= states && i < states + inputs) {
      type.shape = Shape::unranked();
    }
    inputTypes.push_back(type);
  }
  std::vector<TensorType> stateTypes =
      inferToFixedPoint(node, body, inputTypes, 0, 0, states, context, "scan_dim");
  for (size_t i = 0; i < states; ++i)
    node.result(i)->setType(stateTypes[i]);
  std::unordered_set<std::string> known = inputSymbols(body);
  for (size_t i = states; i < node.numResults(); ++i) {
    TensorType slice = exported(body.outputs()[i].value->type(), known, context, "scan_dim");
    node.result(i)->setType(
        stacked(slice, length, attributeEntry(node, "scan_output_axes", i - states), node));
  }
}

} // namespace

void registerControlFlowShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::If, inferIf);
  table.add(OpKind::Loop, inferLoop);
  table.add(OpKind::Scan, inferScan);
}

} // namespace onnxc
