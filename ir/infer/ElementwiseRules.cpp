//===- ir/infer/ElementwiseRules.cpp - Elementwise, norm, reduction rules -===//
//
// Shape and dtype rules of the elementwise family (arithmetic, unary math,
// comparison and logic, Where, Clip, Cast), Softmax and the norms, and the
// reductions. Broadcasting is symbolic: [batch, seq, 64] + [64] gives
// [batch, seq, 64]. When two different symbolic dims meet and both follow
// from the graph inputs' dims, they are unified (InferenceContext::unify):
// the input's symbol is replaced by the other expression and the inputs are
// checked against it at run time. Otherwise the result gets a fresh symbol.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/Node.h"
#include "ir/eval/Broadcast.h"
#include "ir/infer/ShapeRules.h"

namespace onnxc {

namespace {

// --- checks ---------------------------------------------------------------------

const Value &requireOperandValue(const Node &node, size_t i) {
  if (!node.operand(i))
    fail(node.describe(), ": operand ", i, " is required");
  return *node.operand(i);
}

/// Unknown dtypes pass: they are checked once known.
void requireDTypeIn(const Node &node, size_t i, unsigned types) {
  DType dtype = requireOperandValue(node, i).dtype();
  if (dtype != DType::Unknown && !dtypeIn(dtype, types))
    fail(node.describe(), ": op ", node.opName(), " does not support ", dtypeName(dtype),
         " (operand ", i, ")");
}

/// The dtype shared by the given operands; an error when two differ.
DType commonDType(const Node &node, const std::vector<size_t> &indices) {
  DType common = DType::Unknown;
  size_t commonIndex = 0;
  for (size_t i : indices) {
    DType dtype = requireOperandValue(node, i).dtype();
    if (dtype == DType::Unknown)
      continue;
    if (common != DType::Unknown && dtype != common)
      fail(node.describe(), ": operand ", i, " is ", dtypeName(dtype), " but operand ", commonIndex,
           " is ", dtypeName(common));
    common = dtype;
    commonIndex = i;
  }
  return common;
}

std::vector<size_t> allOperands(const Node &node) {
  std::vector<size_t> indices;
  for (size_t i = 0; i < node.numOperands(); ++i)
    indices.push_back(i);
  return indices;
}

// --- symbolic broadcasting ---------------------------------------------------------

std::string shapesString(const std::vector<const Shape *> &shapes) {
  std::string out;
  for (const Shape *s : shapes)
    out += (out.empty() ? "" : " and ") + s->str();
  return out;
}

Dim broadcastDim(const Node &node, const Dim &unresolvedA, const Dim &unresolvedB,
                 const std::vector<const Shape *> &shapes, InferenceContext &context) {
  Dim a = context.resolve(unresolvedA), b = context.resolve(unresolvedB);
  if (a.provablyEqual(b))
    return a;
  if (a.constant() == 1)
    return b;
  if (b.constant() == 1)
    return a;
  if (a.isConstant() && b.isConstant())
    fail(node.describe(), ": shapes ", shapesString(shapes), " cannot be broadcast together (",
         a.str(), " vs ", b.str(), ")");
  // A constant c > 1 against a symbol: the symbol must be 1 or c (checked at
  // run time), either way c.
  if (a.isConstant()) {
    context.assumeBroadcastsTo(node, b, a, "the broadcast dimension");
    return a;
  }
  if (b.isConstant()) {
    context.assumeBroadcastsTo(node, a, b, "the broadcast dimension");
    return b;
  }
  // Two symbolic dims: where both follow from input dims (the mask's own
  // length against past+seq), they are made one; a 1 on either side is then
  // refused at run time by the input checks, never stretched silently.
  if (std::optional<Dim> unified = context.unify(a, b))
    return *unified;
  return context.freshSymbol("b");
}

/// Unidirectional broadcast of an operand (a LayerNorm scale) to `target`,
/// the trailing dims it applies to: each dim is 1 or equal to the target's.
void requireBroadcastsTo(InferenceContext &context, const Node &node, const Shape &operand,
                         const std::vector<Dim> &target, const char *what) {
  if (!operand.isRanked())
    return;
  if (operand.rank() > target.size())
    fail(node.describe(), ": ", what, " of shape ", operand.str(), " has more dims than the ",
         target.size(), " it applies to");
  size_t shift = target.size() - operand.rank();
  for (size_t i = 0; i < operand.rank(); ++i) {
    const Dim &d = operand[i], &t = target[shift + i];
    if (d.constant() == 1 || d.provablyEqual(t) || d.isUnknown() || t.isUnknown())
      continue;
    if (d.isConstant() && t.isConstant())
      fail(node.describe(), ": ", what, " of shape ", operand.str(),
           " does not broadcast to the normalized shape ", Shape(target).str());
    // A symbolic d may also be 1 (broadcast); a constant d > 1 fixes t.
    if (d.isConstant())
      context.assumeEqual(node, t, d, std::string("the normalized dimension matching the ") + what);
    else
      context.assumeBroadcastsTo(node, d, t, std::string("the ") + what + " dimension");
  }
}

/// Numpy multidirectional broadcast of symbolic shapes; unranked if any is.
Shape broadcastSymbolicShapes(const Node &node, const std::vector<const Shape *> &shapes,
                              InferenceContext &context) {
  size_t rank = 0;
  for (const Shape *s : shapes) {
    if (!s->isRanked())
      return Shape::unranked();
    rank = std::max(rank, s->rank());
  }
  std::vector<Dim> dims(rank, Dim(1));
  for (const Shape *s : shapes) {
    size_t shift = rank - s->rank();
    for (size_t i = 0; i < s->rank(); ++i)
      dims[shift + i] = broadcastDim(node, dims[shift + i], (*s)[i], shapes, context);
  }
  return Shape(std::move(dims));
}

Shape broadcastOperandShapes(const Node &node, const std::vector<size_t> &indices,
                             InferenceContext &context) {
  std::vector<const Shape *> shapes;
  for (size_t i : indices)
    shapes.push_back(&requireOperandValue(node, i).shape());
  return broadcastSymbolicShapes(node, shapes, context);
}

// --- elementwise --------------------------------------------------------------------

/// Same-dtype n-ary ops with a result of that dtype (or bool for
/// predicates), parameterized by the dtypes they accept.
template <unsigned Types, bool BoolResult>
void inferBroadcasting(Node &node, InferenceContext &context) {
  std::vector<size_t> indices = allOperands(node);
  for (size_t i : indices)
    requireDTypeIn(node, i, Types);
  DType dtype = commonDType(node, indices);
  node.result(0)->setType(
      {BoolResult ? DType::Bool : dtype, broadcastOperandShapes(node, indices, context)});
}

template <unsigned Types, bool BoolResult> void inferUnary(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, Types);
  const Value &x = requireOperandValue(node, 0);
  node.result(0)->setType({BoolResult ? DType::Bool : x.dtype(), x.shape()});
}

void inferPow(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kNumericTypes);
  requireDTypeIn(node, 1, kNumericTypes);
  node.result(0)->setType(
      {requireOperandValue(node, 0).dtype(), broadcastOperandShapes(node, {0, 1}, context)});
}

void inferWhere(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kBoolType);
  DType dtype = commonDType(node, {1, 2});
  node.result(0)->setType({dtype, broadcastOperandShapes(node, {0, 1, 2}, context)});
}

void inferClip(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kNumericTypes);
  std::vector<size_t> indices = {0};
  for (size_t i = 1; i < node.numOperands(); ++i) {
    if (!node.operand(i))
      continue;
    indices.push_back(i);
    std::optional<int64_t> count = node.operand(i)->shape().numElements().constant();
    if (count && *count != 1)
      fail(node.describe(), ": Clip ", i == 1 ? "min" : "max", " must be a scalar, got ",
           node.operand(i)->type().str());
  }
  DType dtype = commonDType(node, indices);
  node.result(0)->setType({dtype, node.operand(0)->shape()});
}

void inferCast(Node &node, InferenceContext &context) {
  int64_t code = node.requireInt("to");
  std::optional<DType> target = dtypeFromOnnxCode(code);
  if (!target)
    fail(node.describe(), ": Cast to ONNX data type ", code, " is not supported");
  node.result(0)->setType({*target, requireOperandValue(node, 0).shape()});
}

/// BitCast reads the same bytes as another type: one of the same size, and
/// not bool from another type (a byte other than 0 or 1 is no bool), nor a
/// 4-bit type (onnxc holds one per byte, so the bytes are not the ONNX ones).
void inferBitCast(Node &node, InferenceContext &context) {
  int64_t code = node.requireInt("to");
  std::optional<DType> target = dtypeFromOnnxCode(code);
  if (!target)
    fail(node.describe(), ": BitCast to ONNX data type ", code, " is not supported");
  const Value &x = requireOperandValue(node, 0);
  checkBitCast(node, x.dtype(), *target);
  node.result(0)->setType({*target, x.shape()});
}

void inferCastLike(Node &node, InferenceContext &context) {
  node.result(0)->setType(
      {requireOperandValue(node, 1).dtype(), requireOperandValue(node, 0).shape()});
}

// --- Softmax and norms -----------------------------------------------------------------

/// Checks an axis attribute against a ranked shape; nullopt when unranked.
std::optional<int64_t> checkedAxis(const Node &node, const Shape &shape, int64_t axis) {
  if (!shape.isRanked())
    return std::nullopt;
  return normalizeAxisOrFail(node, axis, int64_t(shape.rank()));
}

void inferSoftmax(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kFloatTypes);
  const Value &x = requireOperandValue(node, 0);
  checkedAxis(node, x.shape(), node.getInt("axis", -1));
  node.result(0)->setType(x.type());
}

DType stashDType(const Node &node) {
  int64_t code = node.getInt("stash_type", 1);
  std::optional<DType> type = dtypeFromOnnxCode(code);
  if (!type || !dtypeIn(*type, kFloatTypes))
    fail(node.describe(), ": stash_type ", code, " is not a supported floating-point type");
  return *type;
}

/// LayerNormalization and RMSNormalization: Y like X; LayerNorm's optional
/// Mean and InvStdDev keep the dims before `axis` and have 1s after.
void inferNormalization(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kFloatTypes);
  for (size_t i = 1; i < node.numOperands(); ++i)
    if (node.operand(i))
      requireDTypeIn(node, i, kFloatTypes);
  requireOperandValue(node, 1);
  const Value &x = requireOperandValue(node, 0);
  DType statType = stashDType(node);
  node.result(0)->setType(x.type());
  if (x.shape().isRanked() && x.shape().rank() == 0)
    fail(node.describe(), ": ", node.opName(), " needs an input of rank at least 1");
  std::optional<int64_t> axis = checkedAxis(node, x.shape(), node.getInt("axis", -1));
  if (axis && node.kind() != OpKind::SkipLayerNormalization) {
    // The kernels read scale and bias over the normalized dims of X.
    std::vector<Dim> normalized(x.shape().dims().begin() + *axis, x.shape().dims().end());
    requireBroadcastsTo(context, node, node.operand(1)->shape(), normalized, "scale");
    if (node.kind() == OpKind::LayerNormalization && node.hasOperand(2))
      requireBroadcastsTo(context, node, node.operand(2)->shape(), normalized, "bias");
  }
  Shape statShape;
  if (axis) {
    std::vector<Dim> dims = x.shape().dims();
    for (size_t i = size_t(*axis); i < dims.size(); ++i)
      dims[i] = Dim(1);
    statShape = Shape(std::move(dims));
  }
  for (size_t i = 1; i < node.numResults(); ++i)
    node.result(i)->setType({statType, statShape});
}

/// SkipLayerNormalization (onnxc): LayerNorm of x + skip over the last axis;
/// Y and the optional sum are typed like x, and skip must have x's type and
/// shape (the op does not broadcast).
void inferSkipLayerNormalization(Node &node, InferenceContext &context) {
  const Value &x = requireOperandValue(node, 0);
  const Value &skip = requireOperandValue(node, 1);
  inferNormalization(node, context);
  if (x.dtype() != skip.dtype())
    fail(node.describe(), ": skip of type ", skip.type().str(), " differs from the input's ",
         x.type().str());
  if (x.shape().isRanked() && skip.shape().isRanked()) {
    bool same = x.shape().rank() == skip.shape().rank();
    for (size_t i = 0; same && i < x.shape().rank(); ++i) {
      std::optional<int64_t> a = x.shape()[i].constant(), b = skip.shape()[i].constant();
      same = !(a && b && *a != *b);
    }
    if (!same)
      fail(node.describe(), ": skip of shape ", skip.shape().str(), " differs from the input's ",
           x.shape().str(), " (SkipLayerNormalization does not broadcast)");
    for (size_t i = 0; i < x.shape().rank(); ++i)
      if (!x.shape()[i].provablyEqual(skip.shape()[i]))
        context.assumeEqual(node, skip.shape()[i], x.shape()[i], "the skip dimension");
  }
  if (x.shape().isRanked() && x.shape().rank() > 0) {
    std::vector<Dim> normalized = {x.shape().dims().back()};
    for (size_t i = 2; i < std::min<size_t>(node.numOperands(), 4); ++i)
      if (node.hasOperand(i))
        requireBroadcastsTo(context, node, node.operand(i)->shape(), normalized,
                            i == 2 ? "gamma" : "beta");
  }
  int64_t axis = node.getInt("axis", -1);
  if (x.shape().isRanked() && axis != -1 && axis != int64_t(x.shape().rank()) - 1)
    fail(node.describe(), ": SkipLayerNormalization normalizes the last axis only, got axis ",
         axis);
  for (size_t i = 0; i < node.numResults(); ++i)
    node.result(i)->setType(x.type());
}

// --- reductions ----------------------------------------------------------------------

/// The reduced axes of a Reduce* node: nullopt when not known statically.
std::optional<std::vector<int64_t>> reductionAxes(const Node &node, InferenceContext &context) {
  const Value *axes = node.operand(1);
  if (!axes)
    return std::vector<int64_t>{};
  if (axes->dtype() != DType::Unknown && !dtypeIn(axes->dtype(), kIntTypes))
    fail(node.describe(), ": axes must be an integer tensor, got ", axes->type().str());
  if (std::optional<int64_t> count = axes->shape().numElements().constant(); count == 0)
    return std::vector<int64_t>{};
  const std::vector<Dim> *contents = context.knownContents(axes);
  if (!contents)
    return std::nullopt;
  std::vector<int64_t> values;
  for (const Dim &d : *contents) {
    if (!d.constant())
      return std::nullopt;
    values.push_back(*d.constant());
  }
  return values;
}

void inferReduce(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0,
                 node.kind() == OpKind::ReduceMax || node.kind() == OpKind::ReduceMin
                     ? kAllTypes
                     : kNumericTypes);
  const Value &x = requireOperandValue(node, 0);
  bool keepDims = node.getInt("keepdims", 1) != 0;
  std::optional<std::vector<int64_t>> axes = reductionAxes(node, context);
  const Shape &shape = x.shape();
  if (axes && axes->empty() && node.getInt("noop_with_empty_axes", 0) != 0)
    return node.result(0)->setType(x.type());
  if (!shape.isRanked() || (!axes && !keepDims))
    return node.result(0)->setType({x.dtype(), Shape::unranked()});
  std::vector<Dim> dims;
  if (!axes) {
    // Unknown axes, keepdims: the rank stays; any dim other than 1 may become 1.
    for (const Dim &d : shape.dims())
      dims.push_back(d.constant() == 1 ? Dim(1) : context.freshSymbol("r"));
    return node.result(0)->setType({x.dtype(), Shape(std::move(dims))});
  }
  int64_t rank = int64_t(shape.rank());
  std::vector<bool> reduced(size_t(rank), axes->empty());
  for (int64_t axis : *axes) {
    int64_t a = normalizeAxisOrFail(node, axis, rank);
    if (reduced[size_t(a)])
      fail(node.describe(), ": axis ", axis, " is listed twice");
    reduced[size_t(a)] = true;
  }
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[size_t(i)])
      dims.push_back(shape[size_t(i)]);
    else if (keepDims)
      dims.push_back(Dim(1));
  }
  node.result(0)->setType({x.dtype(), Shape(std::move(dims))});
}

void inferArgReduce(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kNumericTypes);
  const Value &x = requireOperandValue(node, 0);
  if (!x.shape().isRanked())
    return node.result(0)->setType({DType::I64, Shape::unranked()});
  if (x.shape().rank() == 0)
    fail(node.describe(), ": ", node.opName(), " needs an input of rank at least 1");
  int64_t axis = *checkedAxis(node, x.shape(), node.getInt("axis", 0));
  std::vector<Dim> dims = x.shape().dims();
  if (node.getInt("keepdims", 1) != 0)
    dims[size_t(axis)] = Dim(1);
  else
    dims.erase(dims.begin() + axis);
  node.result(0)->setType({DType::I64, Shape(std::move(dims))});
}

/// CumSum and CumProd.
void inferCumulative(Node &node, InferenceContext &context) {
  requireDTypeIn(node, 0, kNumericTypes);
  requireDTypeIn(node, 1, kIntTypes);
  const Value &x = requireOperandValue(node, 0);
  if (x.shape().isRanked() && x.shape().rank() == 0)
    fail(node.describe(), ": ", node.opName(), " needs an input of rank at least 1");
  node.result(0)->setType(x.type());
}

} // namespace

void registerElementwiseShapeRules(ShapeRuleTable &table) {
  constexpr unsigned kFloatOrSigned = kFloatTypes | kSignedTypes;
  for (OpKind kind :
       {OpKind::Add, OpKind::Sub, OpKind::Mul, OpKind::Div, OpKind::Mod, OpKind::Max, OpKind::Min})
    table.add(kind, inferBroadcasting<kNumericTypes, false>);
  for (OpKind kind : {OpKind::Sum, OpKind::Mean})
    table.add(kind, inferBroadcasting<kFloatTypes, false>);
  for (OpKind kind : {OpKind::And, OpKind::Or, OpKind::Xor})
    table.add(kind, inferBroadcasting<kBoolType, false>);
  table.add(OpKind::Equal, inferBroadcasting<kAllTypes, true>);
  for (OpKind kind : {OpKind::Less, OpKind::Greater, OpKind::LessOrEqual, OpKind::GreaterOrEqual})
    table.add(kind, inferBroadcasting<kNumericTypes, true>);
  for (OpKind kind : {OpKind::Sqrt, OpKind::Reciprocal, OpKind::Floor, OpKind::Ceil, OpKind::Exp,
                      OpKind::Log, OpKind::Erf, OpKind::Tanh, OpKind::Sigmoid, OpKind::LeakyRelu,
                      OpKind::Elu, OpKind::Gelu, OpKind::Sin, OpKind::Cos})
    table.add(kind, inferUnary<kFloatTypes, false>);
  for (OpKind kind : {OpKind::Neg, OpKind::Relu})
    table.add(kind, inferUnary<kFloatOrSigned, false>);
  for (OpKind kind : {OpKind::Abs, OpKind::Sign})
    table.add(kind, inferUnary<kNumericTypes, false>);
  table.add(OpKind::Not, inferUnary<kBoolType, false>);
  for (OpKind kind : {OpKind::IsNaN, OpKind::IsInf})
    table.add(kind, inferUnary<kFloatTypes, true>);
  table.add(OpKind::Pow, inferPow);
  table.add(OpKind::Where, inferWhere);
  table.add(OpKind::Clip, inferClip);
  table.add(OpKind::Cast, inferCast);
  table.add(OpKind::BitCast, inferBitCast);
  table.add(OpKind::CastLike, inferCastLike);
  table.add(OpKind::Softmax, inferSoftmax);
  table.add(OpKind::LogSoftmax, inferSoftmax);
  table.add(OpKind::LayerNormalization, inferNormalization);
  table.add(OpKind::RMSNormalization, inferNormalization);
  table.add(OpKind::SkipLayerNormalization, inferSkipLayerNormalization);
  for (OpKind kind : {OpKind::ReduceMean, OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMin,
                      OpKind::ReduceProd, OpKind::ReduceL1, OpKind::ReduceL2,
                      OpKind::ReduceSumSquare, OpKind::ReduceLogSumExp})
    table.add(kind, inferReduce);
  table.add(OpKind::ArgMax, inferArgReduce);
  table.add(OpKind::ArgMin, inferArgReduce);
  table.add(OpKind::CumSum, inferCumulative);
  table.add(OpKind::CumProd, inferCumulative);
}

} // namespace onnxc
