//===- passes/attention/masks/MaskSymbolic.cpp - Symbolic evaluation: driver, elementwise ---===//
#include "passes/attention/masks/MaskSymbolic.h"

#include "ir/infer/KnownContents.h"
#include "passes/attention/masks/AttentionMasks.h"

#include <cassert>

namespace onnxc::mask {

namespace {

/// Stored tables larger than this are not read element by element.
constexpr int64_t kMaxTableElements = int64_t(1) << 24;
/// Shape vectors longer than this are not followed.
constexpr int64_t kMaxVectorLength = 64;

std::string opText(const Node &node) { return std::string(node.opName()); }

SymbolicTensor constantTensor(const Tensor &tensor) {
  if (!tensor.hasData())
    notProvable("a constant of the mask has no data");
  if (tensor.numElements() == 0)
    notProvable("a constant of the mask is empty");
  if (tensor.numElements() > kMaxTableElements)
    notProvable("a stored table of the mask is too large to check");
  SymbolicTensor t;
  t.dtype = tensor.dtype();
  for (int64_t d : tensor.dims())
    t.dims.emplace_back(d);
  bool uniform = true;
  for (int64_t i = 1; i < tensor.numElements() && uniform; ++i)
    uniform = isMaskInteger(tensor.dtype())
                  ? tensor.elementAsInt64(i) == tensor.elementAsInt64(0)
                  : tensor.elementAsDouble(i) == tensor.elementAsDouble(0);
  std::vector<Affine> indices;
  for (size_t k = 0; k < tensor.rank(); ++k)
    indices.push_back(uniform ? Affine::constant(0) : Affine::variable(int(k)));
  t.element = lookup(tensor, std::move(indices));
  return t;
}

/// The one element of a rank-0 or one-element operand as an integer form.
Affine scalarForm(const SymbolicTensor &t, const char *what) {
  std::vector<Dim> values = SymbolicEvaluator::contents(t);
  if (values.size() != 1)
    notProvable(std::string(what) + " is not a scalar");
  return Affine::ofDim(values[0]);
}

SymbolicTensor range(const Node &node, const SymbolicOperands &in) {
  DType dtype = node.result(0)->dtype();
  if (!isMaskInteger(dtype))
    notProvable("a floating-point Range");
  Affine start = scalarForm(*in[0], "a Range start"), limit = scalarForm(*in[1], "a Range limit");
  std::optional<int64_t> first = start.constantValue();
  std::optional<int64_t> delta = scalarForm(*in[2], "a Range step").constantValue();
  if (!first || !delta || *delta == 0)
    notProvable("a Range whose start or step is not a constant");
  Dim length;
  if (std::optional<int64_t> last = limit.constantValue()) {
    int64_t span = *delta > 0 ? *last - *first : *first - *last;
    int64_t step = *delta > 0 ? *delta : -*delta;
    length = Dim(span <= 0 ? 0 : (span - 1) / step + 1);
  } else {
    if (*delta != 1 && *delta != -1)
      notProvable("a Range over a symbolic length with a step other than 1");
    length = *delta > 0 ? subtractDims(limit.offset, Dim(*first))
                        : subtractDims(Dim(*first), limit.offset);
    if (!provablyNonNegative(length))
      notProvable("a Range whose length may be negative");
  }
  Affine element = Affine::constant(*first) + scaled(Affine::variable(0), *delta);
  return SymbolicTensor{dtype, {length}, integer(dtype, element), false};
}

SymbolicTensor constantOfShape(const Node &node, const SymbolicOperands &in) {
  SymbolicTensor t;
  t.dims = SymbolicEvaluator::contents(*in[0]);
  for (const Dim &d : t.dims)
    if (!provablyNonNegative(d))
      notProvable("a ConstantOfShape dimension may be negative");
  t.dtype = node.result(0)->dtype();
  const Attribute *value = node.findAttr("value");
  if (value && (value->kind() != Attribute::Kind::Tensor || value->asTensor().numElements() != 1 ||
                !value->asTensor().hasData()))
    notProvable("a ConstantOfShape value is not one element");
  if (!value)
    t.element = constant(t.dtype, 0.0);
  else if (isMaskInteger(t.dtype))
    t.element = integer(t.dtype, Affine::constant(value->asTensor().elementAsInt64(0)));
  else
    t.element = constant(t.dtype, value->asTensor().elementAsDouble(0));
  return t;
}

SymbolicTensor trilu(const Node &node, const SymbolicOperands &in) {
  SymbolicTensor t = *in[0];
  size_t rank = t.dims.size();
  if (rank < 2)
    notProvable("a Trilu of rank below 2");
  Affine k = in.size() > 1 && in[1] ? scalarForm(*in[1], "a Trilu k") : Affine::constant(0);
  int row = int(rank - 2), column = int(rank - 1);
  ExprPtr diagonal = integer(DType::I64, Affine::variable(column) - Affine::variable(row));
  ExprPtr offset = integer(DType::I64, k);
  bool upper = node.getInt("upper", 1) != 0;
  ExprPtr keep = upper ? binary(ExprKind::LessOrEqual, offset, diagonal)
                       : binary(ExprKind::LessOrEqual, diagonal, offset);
  t.element = select(keep, t.element, constant(t.dtype, 0.0));
  return t;
}

ExprKind binaryKind(OpKind kind, bool &swap) {
  swap = false;
  switch (kind) {
  case OpKind::Add:
    return ExprKind::Add;
  case OpKind::Sub:
    return ExprKind::Sub;
  case OpKind::Mul:
    return ExprKind::Mul;
  case OpKind::Div:
    return ExprKind::Div;
  case OpKind::Equal:
    return ExprKind::Equal;
  case OpKind::Less:
    return ExprKind::Less;
  case OpKind::LessOrEqual:
    return ExprKind::LessOrEqual;
  case OpKind::Greater:
    swap = true;
    return ExprKind::Less;
  case OpKind::GreaterOrEqual:
    swap = true;
    return ExprKind::LessOrEqual;
  case OpKind::And:
    return ExprKind::And;
  case OpKind::Or:
    return ExprKind::Or;
  case OpKind::Xor:
    return ExprKind::Xor;
  case OpKind::Min:
    return ExprKind::Min;
  case OpKind::Max:
    return ExprKind::Max;
  default:
    return ExprKind::Number;
  }
}

} // namespace

bool isUnit(const Dim &dim) { return dim.constant() == int64_t(1); }

std::vector<Dim> broadcastDims(const std::vector<Dim> &a, const std::vector<Dim> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim *x = i + a.size() >= rank ? &a[i + a.size() - rank] : nullptr;
    const Dim *y = i + b.size() >= rank ? &b[i + b.size() - rank] : nullptr;
    if (!x || isUnit(*x))
      out[i] = y ? *y : Dim(1);
    else if (!y || isUnit(*y) || *x == *y)
      out[i] = *x;
    else
      notProvable("mask operands broadcast dims " + x->str() + " and " + y->str() +
                  " that may differ");
    if (out[i].isUnknown())
      notProvable("a dimension is unknown");
  }
  return out;
}

ExprPtr alignedElement(const SymbolicTensor &t, const std::vector<Dim> &dims) {
  assert(dims.size() >= t.dims.size());
  size_t shift = dims.size() - t.dims.size();
  std::vector<Affine> replacement;
  bool identity = shift == 0;
  for (size_t k = 0; k < t.dims.size(); ++k) {
    bool broadcast = isUnit(t.dims[k]) && !isUnit(dims[k + shift]);
    replacement.push_back(broadcast ? Affine::constant(0) : Affine::variable(int(k + shift)));
    identity &= !broadcast;
  }
  return identity ? t.element : substitute(t.element, replacement);
}

SymbolicTensor vectorOf(const std::vector<Dim> &values) {
  SymbolicTensor t{DType::I64, {Dim(int64_t(values.size()))}, nullptr, false};
  if (values.empty()) {
    t.element = integer(DType::I64, Affine::constant(0));
    return t;
  }
  // values[k] at x0 == k: a chain of selects that folds once x0 is known.
  ExprPtr position = integer(DType::I64, Affine::variable(0));
  t.element = integer(DType::I64, Affine::ofDim(values.back()));
  for (size_t k = values.size() - 1; k-- > 0;) {
    ExprPtr before =
        binary(ExprKind::Less, position, integer(DType::I64, Affine::constant(int64_t(k + 1))));
    t.element = select(before, integer(DType::I64, Affine::ofDim(values[k])), t.element);
  }
  return t;
}

std::vector<Dim> SymbolicEvaluator::contents(const SymbolicTensor &t) {
  if (t.assumesInTable)
    notProvable("a shape vector is read from a table slice");
  if (!isMaskInteger(t.dtype))
    notProvable("a shape vector is not integer");
  if (t.dims.empty()) {
    std::optional<Dim> d = dimValue(t.element);
    if (!d)
      notProvable("a scalar of the mask depends on positions");
    return {*d};
  }
  std::optional<int64_t> length = t.dims.size() == 1 ? t.dims[0].constant() : std::nullopt;
  if (!length || *length > kMaxVectorLength)
    notProvable("a shape vector has no static length");
  std::vector<Dim> out;
  for (int64_t k = 0; k < *length; ++k) {
    std::optional<Dim> d = dimValue(substitute(t.element, {Affine::constant(k)}));
    if (!d)
      notProvable("a shape vector's contents are not known");
    out.push_back(*d);
  }
  return out;
}

std::vector<int64_t> constantContents(const SymbolicTensor &t, const char *what) {
  std::vector<int64_t> out;
  for (const Dim &d : SymbolicEvaluator::contents(t)) {
    std::optional<int64_t> c = d.constant();
    if (!c)
      notProvable(std::string(what) + " is not constant");
    out.push_back(*c);
  }
  return out;
}

SymbolicTensor elementwiseRule(const Node &node, const SymbolicOperands &in) {
  OpKind kind = node.kind();
  for (const SymbolicTensor *operand : in)
    if (!operand)
      notProvable("an operand of " + opText(node) + " is absent");
  SymbolicTensor t;
  t.dtype = node.result(0)->dtype();
  for (const SymbolicTensor *operand : in) {
    t.dims = broadcastDims(t.dims, operand->dims);
    t.assumesInTable |= operand->assumesInTable;
  }
  std::vector<ExprPtr> e;
  for (const SymbolicTensor *operand : in)
    e.push_back(alignedElement(*operand, t.dims));
  switch (kind) {
  case OpKind::Identity:
    t.element = e[0];
    break;
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Not:
    t.element = unary(kind == OpKind::Neg   ? ExprKind::Neg
                      : kind == OpKind::Abs ? ExprKind::Abs
                                            : ExprKind::Not,
                      e[0]);
    break;
  case OpKind::Cast:
  case OpKind::CastLike:
    t.element = cast(e[0], t.dtype);
    break;
  case OpKind::Where:
    t.element = select(e[0], e[1], e[2]);
    break;
  default: {
    bool swap;
    ExprKind op = binaryKind(kind, swap);
    if (op == ExprKind::Number)
      notProvable(opText(node) + " is not followed in masks");
    if (kind != OpKind::Min && kind != OpKind::Max && e.size() != 2)
      notProvable(opText(node) + " does not have two operands");
    t.element = swap ? binary(op, e[1], e[0]) : e[0];
    for (size_t i = 1; i < e.size() && !swap; ++i)
      t.element = binary(op, t.element, e[i]);
  }
  }
  if (t.element->dtype != t.dtype)
    notProvable("the element type of " + opText(node) + " is not followed");
  return t;
}

std::vector<Dim> SymbolicEvaluator::dimsRead(const Value *measured) {
  if (measured->isNodeResult() && dependsOnShapesOnly(measured)) {
    const SymbolicTensor &t = evaluate(measured);
    if (t.assumesInTable)
      notProvable("the mask measures a table slice");
    return t.dims;
  }
  const Shape &shape = measured->shape();
  if (!shape.isRanked())
    notProvable("the mask measures an unranked tensor");
  for (const Dim &d : shape.dims())
    if (d.isUnknown())
      notProvable("the mask measures a tensor of unknown dims");
  return shape.dims();
}

SymbolicTensor SymbolicEvaluator::evaluateNode(const Node &node) {
  if (node.numResults() != 1)
    notProvable(opText(node) + " has more than one result");
  switch (node.kind()) {
  case OpKind::Constant: {
    const Tensor *tensor = constantTensorOf(node.result(0));
    if (!tensor)
      notProvable("a Constant of the mask has no tensor value");
    return constantTensor(*tensor);
  }
  case OpKind::Shape: {
    std::vector<Dim> dims = dimsRead(node.operand(0));
    auto [first, last] = shapeOpRange(node, int64_t(dims.size()));
    return vectorOf(std::vector<Dim>(dims.begin() + first, dims.begin() + last));
  }
  case OpKind::Size: {
    Dim count(1);
    for (const Dim &d : dimsRead(node.operand(0)))
      count = multiplyDims(count, d);
    return SymbolicTensor{DType::I64, {}, integer(DType::I64, Affine::ofDim(count)), false};
  }
  default:
    break;
  }
  SymbolicOperands in;
  for (const Value *operand : node.operands())
    in.push_back(operand ? &evaluate(operand) : nullptr);
  if (node.hasOperand(0) == false && node.numOperands() > 0)
    notProvable("the first operand of " + opText(node) + " is absent");
  switch (node.kind()) {
  case OpKind::Range:
    return range(node, in);
  case OpKind::ConstantOfShape:
    return constantOfShape(node, in);
  case OpKind::Trilu:
    return trilu(node, in);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Min:
  case OpKind::Max:
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
  case OpKind::Not:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
  case OpKind::Where:
  case OpKind::Cast:
  case OpKind::Identity:
    return elementwiseRule(node, in);
  case OpKind::CastLike:
    return elementwiseRule(node, {in[0]});
  default:
    return movementRule(node, in);
  }
}

const SymbolicTensor &SymbolicEvaluator::evaluate(const Value *value) {
  auto found = results_.find(value);
  if (found != results_.end())
    return found->second;
  SymbolicTensor t;
  if (value->isConstant())
    t = constantTensor(value->constantValue());
  else if (value->isGraphInput())
    notProvable("the mask reads input data");
  else
    t = evaluateNode(*value->definingNode());
  if (t.dtype != value->dtype())
    notProvable("the mask's element types are not followed");
  return results_.emplace(value, std::move(t)).first->second;
}

} // namespace onnxc::mask
