//===- ir/infer/MovementRules.cpp - Shape rules of data movement ops ------===//
//
// Reshape, Transpose, Concat, Split, Gather, Squeeze, Unsqueeze, Flatten,
// Expand, Tile, Identity, Dropout, Trilu; Slice is in SliceRules.cpp and the
// creation ops (Shape, Range, Constant, ...) in CreationRules.cpp. Shape operands are read
// through the known contents of InferenceContext, so shapes computed at run
// time by exported models still come out symbolic. A dimension that exists
// but cannot be expressed gets a fresh symbol, so values that share it stay
// comparable.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"
#include "ir/infer/KnownContents.h"

#include <algorithm>

namespace onnxc {

// --- shared operand checks ----------------------------------------------------

const Value *requireNamedOperand(const Node &node, size_t i, const char *what) {
  const Value *value = node.operand(i);
  if (!value)
    fail(node.describe(), ": missing operand '", what, "'");
  return value;
}

const Value *requireIndexOperand(const Node &node, size_t i, const char *what, bool allowScalar) {
  const Value *value = requireNamedOperand(node, i, what);
  if (!isInteger(value->dtype()))
    fail(node.describe(), ": operand '", what, "' must be an integer tensor, not ",
         dtypeName(value->dtype()));
  const Shape &shape = value->shape();
  if (shape.isRanked() && shape.rank() != 1 && !(allowScalar && shape.rank() == 0))
    fail(node.describe(), ": operand '", what, "' must be 1-D, not of rank ", shape.rank());
  return value;
}

void setResult(Node &node, size_t i, DType dtype, Shape shape) {
  node.result(i)->setType({dtype, std::move(shape)});
}

std::vector<Dim> freshDims(InferenceContext &context, size_t count, const std::string &hint) {
  std::vector<Dim> dims;
  for (size_t i = 0; i < count; ++i)
    dims.push_back(context.freshSymbol(hint));
  return dims;
}

namespace {

/// Two dims that must be equal at run time (checked then, see
/// InferenceContext::assumeEqual): the more informative one.
Dim unifyDims(InferenceContext &context, const Node &node, const Dim &a, const Dim &b,
              size_t axis) {
  if (a.isUnknown())
    return b;
  if (b.isUnknown() || a == b)
    return a;
  if (a.isConstant() && b.isConstant())
    fail(node.describe(), ": dimension ", axis, " differs between operands (", a.str(), " vs ",
         b.str(), ")");
  // Both symbolic and both following from input dims: one dim from now on.
  if (!a.isConstant() && !b.isConstant())
    if (std::optional<Dim> unified = context.unify(a, b))
      return *unified;
  std::string what = "dimension " + std::to_string(axis) + " of each operand:";
  if (a.isConstant())
    context.assumeEqual(node, b, a, what);
  else
    context.assumeEqual(node, a, b, what);
  return b.isConstant() ? b : a;
}

Dim elementCount(const Shape &shape) {
  return shape.isRanked() ? shape.numElements() : Dim::unknown();
}

// --- Reshape ----------------------------------------------------------------

/// Target dims with 0 resolved; returns the index of the -1 entry or -1.
int64_t resolveReshapeTarget(const Node &node, InferenceContext &context, const Shape &input,
                             std::vector<Dim> &dims) {
  bool allowZero = node.getInt("allowzero", 0) != 0;
  int64_t inferred = -1;
  bool hasZero = false;
  for (size_t i = 0; i < dims.size(); ++i) {
    std::optional<int64_t> c = dims[i].constant();
    if (dims[i].isUnknown()) {
      dims[i] = context.freshSymbol("reshape");
    } else if (c && *c == -1) {
      if (inferred >= 0)
        fail(node.describe(), ": reshape target has more than one -1");
      inferred = int64_t(i);
    } else if (c && *c < -1) {
      fail(node.describe(), ": reshape target has invalid dimension ", *c);
    } else if (c && *c == 0) {
      hasZero = true;
      if (allowZero)
        continue;
      if (input.isRanked() && i >= input.rank())
        fail(node.describe(), ": reshape target copies dimension ", i, " of a rank-", input.rank(),
             " input");
      dims[i] = input.isRanked() ? input[i] : context.freshSymbol("reshape");
    }
  }
  if (allowZero && hasZero && inferred >= 0)
    fail(node.describe(), ": reshape target has both 0 and -1 with allowzero");
  return inferred;
}

void inferReshape(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *shape = requireIndexOperand(node, 1, "shape");
  std::optional<std::vector<Dim>> target = contentsOrUnknowns(context, shape);
  if (!target) {
    std::optional<int64_t> length = staticLength(shape);
    setResult(node, 0, data->dtype(),
              length ? Shape(freshDims(context, derivedRank(node, 0, *length, "the shape operand"),
                                       "reshape"))
                     : Shape());
    return;
  }
  std::vector<Dim> dims = *target;
  const Shape &input = data->shape();
  int64_t inferred = resolveReshapeTarget(node, context, input, dims);
  Dim total = elementCount(input);
  Dim others(1);
  for (size_t i = 0; i < dims.size(); ++i)
    if (int64_t(i) != inferred)
      others = others * dims[i];
  std::optional<int64_t> totalValue = total.constant(), othersValue = others.constant();
  if (inferred >= 0) {
    if (totalValue && othersValue && (*othersValue == 0 || *totalValue % *othersValue != 0))
      fail(node.describe(), ": reshape of ", *totalValue, " elements to ", Shape(*target).str(),
           " is impossible");
    std::optional<Dim> quotient = total.divideExactly(others);
    dims[size_t(inferred)] = quotient ? *quotient : context.freshSymbol("reshape");
  } else if (totalValue && othersValue && *totalValue != *othersValue) {
    fail(node.describe(), ": reshape of ", *totalValue, " elements to ", Shape(*target).str(),
         " is impossible");
  } else if (!total.provablyEqual(others)) {
    context.assumeEqual(node, total, others, "the element count");
  }
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

// --- Transpose, Concat, Split -----------------------------------------------

void inferTranspose(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Shape &input = data->shape();
  if (!input.isRanked()) {
    std::vector<int64_t> perm = node.getInts("perm");
    setResult(node, 0, data->dtype(),
              node.hasAttr("perm") ? Shape(std::vector<Dim>(perm.size())) : Shape());
    return;
  }
  std::vector<Dim> dims;
  for (int64_t p : transposePermutation(node, input.rank()))
    dims.push_back(input[size_t(p)]);
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

void inferConcat(Node &node, InferenceContext &context) {
  if (node.numOperands() == 0)
    fail(node.describe(), ": concat needs at least one operand");
  int64_t axis = node.requireInt("axis");
  const Value *first = requireNamedOperand(node, 0, "inputs");
  std::optional<size_t> rank;
  for (size_t i = 0; i < node.numOperands(); ++i) {
    const Value *v = requireNamedOperand(node, i, "inputs");
    if (v->dtype() != first->dtype())
      fail(node.describe(), ": operand ", i, " is ", dtypeName(v->dtype()), ", expected ",
           dtypeName(first->dtype()));
    if (!v->shape().isRanked())
      continue;
    if (rank && *rank != v->shape().rank())
      fail(node.describe(), ": operands have different ranks (", *rank, " and ", v->shape().rank(),
           ")");
    rank = v->shape().rank();
  }
  if (!rank) {
    setResult(node, 0, first->dtype(), Shape());
    return;
  }
  size_t a = size_t(normalizeAxisOrFail(node, axis, int64_t(*rank)));
  std::vector<Dim> dims(*rank);
  Dim sum(0);
  for (const Value *v : node.operands()) {
    if (!v->shape().isRanked()) {
      sum = Dim::unknown();
      continue;
    }
    for (size_t d = 0; d < *rank; ++d)
      if (d != a)
        dims[d] = unifyDims(context, node, dims[d], v->shape()[d], d);
    sum = sum + v->shape()[a];
  }
  dims[a] = sum.isUnknown() ? context.freshSymbol("concat") : sum;
  setResult(node, 0, first->dtype(), Shape(std::move(dims)));
}

/// Sizes of the Split parts along the axis of length `dim`.
std::vector<Dim> splitSizes(const Node &node, InferenceContext &context, const Dim &dim) {
  size_t parts = node.numResults();
  if (node.hasOperand(1)) {
    const Value *split = requireIndexOperand(node, 1, "split");
    std::optional<std::vector<Dim>> sizes = contentsOrUnknowns(context, split);
    if (!sizes)
      return freshDims(context, parts, "split");
    if (sizes->size() != parts)
      fail(node.describe(), ": split has ", sizes->size(), " sizes for ", parts, " results");
    Dim sum(0);
    for (Dim &size : *sizes) {
      if (size.isUnknown())
        size = context.freshSymbol("split");
      if (size.constant() && *size.constant() < 0)
        fail(node.describe(), ": split size ", size.str(), " is negative");
      sum = sum + size;
    }
    if (sum.isConstant() && dim.isConstant() && sum != dim)
      fail(node.describe(), ": split sizes add up to ", sum.str(), ", not to the dimension ",
           dim.str());
    if (!sum.provablyEqual(dim))
      context.assumeEqual(node, sum, dim, "the sum of the split sizes");
    return *sizes;
  }
  checkSplitNumOutputs(node, parts);
  // Equal parts; when not divisible every part but the last has ceil(dim/n).
  if (std::optional<int64_t> length = dim.constant()) {
    int64_t chunk = *length / int64_t(parts) + (*length % int64_t(parts) != 0);
    int64_t last = *length - chunk * int64_t(parts - 1);
    if (last < 0)
      fail(node.describe(), ": cannot split dimension ", *length, " into ", parts, " parts");
    std::vector<Dim> sizes(parts, Dim(chunk));
    sizes.back() = Dim(last);
    return sizes;
  }
  if (std::optional<Dim> chunk = dim.divideExactly(Dim(int64_t(parts))))
    return std::vector<Dim>(parts, *chunk);
  Dim chunk = context.freshSymbol("split");
  std::vector<Dim> sizes(parts, chunk);
  sizes.back() =
      dim.isUnknown() ? context.freshSymbol("split") : dim - chunk * Dim(int64_t(parts - 1));
  return sizes;
}

void inferSplit(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "input");
  if (!data->shape().isRanked()) {
    for (size_t i = 0; i < node.numResults(); ++i)
      setResult(node, i, data->dtype(), Shape());
    return;
  }
  const Shape &input = data->shape();
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(input.rank())));
  std::vector<Dim> sizes = splitSizes(node, context, input[axis]);
  for (size_t i = 0; i < node.numResults(); ++i) {
    Shape shape = input;
    shape[axis] = sizes[i];
    setResult(node, i, data->dtype(), std::move(shape));
  }
}

// --- Gather, Squeeze, Unsqueeze, Flatten ------------------------------------

void inferGather(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *indices = requireNamedOperand(node, 1, "indices");
  if (!isInteger(indices->dtype()))
    fail(node.describe(), ": indices must be an integer tensor, not ", dtypeName(indices->dtype()));
  if (!data->shape().isRanked() || !indices->shape().isRanked()) {
    setResult(node, 0, data->dtype(), Shape());
    return;
  }
  const Shape &input = data->shape();
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(input.rank())));
  std::optional<int64_t> size = input[axis].constant();
  std::optional<std::vector<int64_t>> values = constantContents(context, indices);
  if (size && values)
    for (int64_t index : *values)
      if (index < -*size || index >= *size)
        fail(node.describe(), ": index ", index, " is out of range for axis ", axis, " of size ",
             *size);
  std::vector<Dim> dims(input.dims().begin(), input.dims().begin() + axis);
  dims.insert(dims.end(), indices->shape().dims().begin(), indices->shape().dims().end());
  dims.insert(dims.end(), input.dims().begin() + axis + 1, input.dims().end());
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

/// Normalized, distinct axes; throws naming the node otherwise.
std::vector<int64_t> checkedAxes(const Node &node, const std::vector<int64_t> &axes, int64_t rank) {
  std::vector<int64_t> out;
  for (int64_t axis : axes) {
    int64_t a = normalizeAxisOrFail(node, axis, rank);
    if (std::find(out.begin(), out.end(), a) != out.end())
      fail(node.describe(), ": axis ", axis, " appears twice");
    out.push_back(a);
  }
  return out;
}

void inferSqueeze(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Shape &input = data->shape();
  if (node.hasOperand(1))
    requireIndexOperand(node, 1, "axes", true);
  if (!input.isRanked()) {
    setResult(node, 0, data->dtype(), Shape());
    return;
  }
  std::vector<Dim> dims;
  if (!node.hasOperand(1)) {
    // Symbols are taken to be other than 1; an unknown dim may be anything.
    for (const Dim &d : input.dims()) {
      if (d.isUnknown()) {
        setResult(node, 0, data->dtype(), Shape());
        return;
      }
      if (d != Dim(1))
        dims.push_back(d);
    }
    setResult(node, 0, data->dtype(), Shape(std::move(dims)));
    return;
  }
  std::optional<std::vector<int64_t>> axes = constantContents(context, node.operand(1));
  if (!axes) {
    std::optional<int64_t> count = staticLength(node.operand(1));
    setResult(node, 0, data->dtype(),
              count && *count <= int64_t(input.rank())
                  ? Shape(std::vector<Dim>(input.rank() - size_t(*count)))
                  : Shape());
    return;
  }
  std::vector<int64_t> removed = checkedAxes(node, *axes, int64_t(input.rank()));
  for (size_t i = 0; i < input.rank(); ++i) {
    bool squeeze = std::find(removed.begin(), removed.end(), int64_t(i)) != removed.end();
    if (squeeze && input[i].isConstant() && input[i] != Dim(1))
      fail(node.describe(), ": cannot squeeze axis ", i, " of size ", input[i].str());
    if (squeeze)
      context.assumeEqual(node, input[i], Dim(1),
                          "squeezed axis " + std::to_string(i) + " of size");
    if (!squeeze)
      dims.push_back(input[i]);
  }
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

void inferUnsqueeze(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  const Value *axesValue = requireIndexOperand(node, 1, "axes", true);
  const Shape &input = data->shape();
  std::optional<std::vector<int64_t>> axes = constantContents(context, axesValue);
  if (!input.isRanked() || !axes) {
    std::optional<int64_t> count = staticLength(axesValue);
    setResult(
        node, 0, data->dtype(),
        input.isRanked() && count
            ? Shape(std::vector<Dim>(derivedRank(node, input.rank(), *count, "the axes operand")))
            : Shape());
    return;
  }
  int64_t rank = int64_t(input.rank() + axes->size());
  std::vector<int64_t> inserted = checkedAxes(node, *axes, rank);
  std::vector<Dim> dims;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    dims.push_back(
        std::find(inserted.begin(), inserted.end(), i) != inserted.end() ? Dim(1) : input[next++]);
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

void inferFlatten(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "input");
  const Shape &input = data->shape();
  if (!input.isRanked()) {
    setResult(node, 0, data->dtype(), Shape(std::vector<Dim>(2)));
    return;
  }
  int64_t rank = int64_t(input.rank());
  int64_t axis = flattenAxis(node, rank);
  Dim outer(1), inner(1);
  for (int64_t i = 0; i < rank; ++i)
    (i < axis ? outer : inner) = (i < axis ? outer : inner) * input[size_t(i)];
  setResult(node, 0, data->dtype(), Shape({outer, inner}));
}

// --- Expand, Tile -------------------------------------------------------------

/// One axis of Expand's bidirectional broadcast: input dim `a`, target `b`.
Dim expandDim(const Node &node, InferenceContext &context, const Dim &a, const Dim &b) {
  if (a == Dim(1))
    return b.isUnknown() ? context.freshSymbol("expand") : b;
  if (b == Dim(1))
    return a;
  if (a.isConstant() && b.isConstant() && a != b)
    fail(node.describe(), ": cannot expand dimension ", a.str(), " to ", b.str());
  // Unless `a` is 1, `b` must equal it, or be 1; prefer whichever says more.
  if (a.isConstant() || b.isUnknown()) {
    context.assumeBroadcastsTo(node, b, a, "the expanded dimension");
    return a.isUnknown() ? context.freshSymbol("expand") : a;
  }
  // `a` symbolic against `b`: the result is b only if a is 1 or a is b.
  context.assume(node, (a - Dim(1)) * (a - b), ShapeAssumption::Kind::Zero,
                 "the dimension " + a.str() + " expanded to " + b.str() + " must be 1 or " +
                     b.str());
  return b;
}

void inferExpand(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "input");
  std::optional<std::vector<Dim>> target =
      contentsOrUnknowns(context, requireIndexOperand(node, 1, "shape"));
  const Shape &input = data->shape();
  if (!target || !input.isRanked()) {
    setResult(node, 0, data->dtype(), Shape());
    return;
  }
  size_t rank = std::max(input.rank(), target->size());
  std::vector<Dim> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    size_t fromEnd = rank - 1 - i;
    Dim a = fromEnd < input.rank() ? input[input.rank() - 1 - fromEnd] : Dim(1);
    Dim b = fromEnd < target->size() ? (*target)[target->size() - 1 - fromEnd] : Dim(1);
    dims[i] = expandDim(node, context, a, b);
  }
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

void inferTile(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "input");
  std::optional<std::vector<Dim>> repeats =
      contentsOrUnknowns(context, requireIndexOperand(node, 1, "repeats"));
  const Shape &input = data->shape();
  if (!input.isRanked()) {
    setResult(node, 0, data->dtype(), Shape());
    return;
  }
  if (!repeats) {
    setResult(node, 0, data->dtype(), Shape(freshDims(context, input.rank(), "tile")));
    return;
  }
  if (repeats->size() != input.rank())
    fail(node.describe(), ": repeats has ", repeats->size(), " entries for rank ", input.rank());
  std::vector<Dim> dims;
  for (size_t i = 0; i < input.rank(); ++i) {
    if (std::optional<int64_t> c = (*repeats)[i].constant(); c && *c < 0)
      fail(node.describe(), ": repeat count ", *c, " is negative");
    Dim d = input[i] * (*repeats)[i];
    dims.push_back(d.isUnknown() ? context.freshSymbol("tile") : d);
  }
  setResult(node, 0, data->dtype(), Shape(std::move(dims)));
}

// --- Identity, Dropout, Trilu -------------------------------------------------

void inferIdentity(Node &node, InferenceContext &context) {
  node.result()->setType(requireNamedOperand(node, 0, "input")->type());
}

void inferDropout(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "data");
  if (node.hasOperand(1) && !isFloat(node.operand(1)->dtype()))
    fail(node.describe(), ": ratio must be a float scalar");
  if (node.hasOperand(2) && node.operand(2)->dtype() != DType::Bool)
    fail(node.describe(), ": training_mode must be a bool scalar");
  node.result(0)->setType(data->type());
  if (node.numResults() > 1)
    setResult(node, 1, DType::Bool, data->shape());
}

void inferTrilu(Node &node, InferenceContext &context) {
  const Value *data = requireNamedOperand(node, 0, "input");
  if (data->shape().isRanked() && data->shape().rank() < 2)
    fail(node.describe(), ": trilu needs rank at least 2, not ", data->shape().rank());
  if (node.hasOperand(1)) {
    const Value *k = node.operand(1);
    if (!isInteger(k->dtype()) || (k->shape().isRanked() && k->shape().numElements() != Dim(1)))
      fail(node.describe(), ": k must be an integer scalar");
  }
  node.result()->setType(data->type());
}

} // namespace

void registerMovementShapeRules(ShapeRuleTable &table) {
  registerCreationShapeRules(table);
  registerSliceShapeRules(table);
  table.add(OpKind::Reshape, inferReshape);
  table.add(OpKind::Transpose, inferTranspose);
  table.add(OpKind::Concat, inferConcat);
  table.add(OpKind::Split, inferSplit);
  table.add(OpKind::Gather, inferGather);
  table.add(OpKind::Squeeze, inferSqueeze);
  table.add(OpKind::Unsqueeze, inferUnsqueeze);
  table.add(OpKind::Flatten, inferFlatten);
  table.add(OpKind::Expand, inferExpand);
  table.add(OpKind::Tile, inferTile);
  table.add(OpKind::Identity, inferIdentity);
  table.add(OpKind::Dropout, inferDropout);
  table.add(OpKind::Trilu, inferTrilu);
}

} // namespace onnxc
