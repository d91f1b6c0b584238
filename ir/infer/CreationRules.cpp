//===- ir/infer/CreationRules.cpp - Shape rules of tensor creation ops ----===//
//
// Shape, Size, Range, ConstantOfShape and Constant: ops whose result type
// comes from an operand's shape, an attribute, or the contents of scalar
// operands rather than from the data they read. Range and ConstantOfShape
// take their lengths from known contents, so `Range(0, seq)` and
// `ConstantOfShape(Shape(x))` stay symbolic.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/infer/KnownContents.h"

#include <algorithm>
#include <cmath>

namespace onnxc {

namespace {

void inferShapeOp(Node &node, InferenceContext &context) {
  const Shape &input = requireNamedOperand(node, 0, "data")->shape();
  if (!input.isRanked()) {
    setResult(node, 0, DType::I64, Shape({Dim::unknown()}));
    return;
  }
  auto [first, last] = shapeOpRange(node, int64_t(input.rank()));
  setResult(node, 0, DType::I64, Shape::fromConstants({last - first}));
}

void inferSize(Node &node, InferenceContext &context) {
  requireNamedOperand(node, 0, "data");
  setResult(node, 0, DType::I64, Shape::scalar());
}

/// Operand i of Range as a Dim: known contents, or a float constant when
/// its value is integral.
Dim rangeOperand(const InferenceContext &context, const Value *value) {
  if (const std::vector<Dim> *contents = context.knownContents(value))
    return contents->size() == 1 ? (*contents)[0] : Dim::unknown();
  if (const Tensor *tensor = constantTensorOf(value))
    if (tensor->numElements() == 1) {
      double v = tensor->elementAsDouble(0);
      // Within +-2^62 the conversion is exact and defined (and 1e300 is not).
      if (std::trunc(v) == v && std::fabs(v) <= 0x1p62)
        return Dim(int64_t(v));
    }
  return Dim::unknown();
}

/// The length of a Range with constant float operands (non-integral values).
std::optional<int64_t> floatRangeLength(const Node &node) {
  const Tensor *start = constantTensorOf(node.operand(0));
  const Tensor *limit = constantTensorOf(node.operand(1));
  const Tensor *delta = constantTensorOf(node.operand(2));
  if (!start || !limit || !delta || start->numElements() != 1 || limit->numElements() != 1 ||
      delta->numElements() != 1 || delta->elementAsDouble(0) == 0.0)
    return std::nullopt;
  double count = std::ceil((limit->elementAsDouble(0) - start->elementAsDouble(0)) /
                           delta->elementAsDouble(0));
  if (std::isnan(count))
    return std::nullopt;
  // Clamped before converting (a double beyond int64 does not convert); the
  // byte-size check then refuses a length that large.
  return int64_t(std::clamp(count, 0.0, 0x1p62));
}

void inferRange(Node &node, InferenceContext &context) {
  const char *names[] = {"start", "limit", "delta"};
  DType dtype = requireNamedOperand(node, 0, "start")->dtype();
  for (size_t i = 0; i < 3; ++i) {
    const Value *v = requireNamedOperand(node, i, names[i]);
    if (v->dtype() != dtype)
      fail(node.describe(), ": ", names[i], " is ", dtypeName(v->dtype()), ", expected ",
           dtypeName(dtype));
    if (v->shape().isRanked() && v->shape().numElements() != Dim(1))
      fail(node.describe(), ": ", names[i], " must be a scalar");
  }
  if (dtype == DType::Bool)
    fail(node.describe(), ": range of bool is not defined");
  Dim start = rangeOperand(context, node.operand(0));
  Dim limit = rangeOperand(context, node.operand(1));
  Dim delta = rangeOperand(context, node.operand(2));
  std::optional<int64_t> s = start.constant(), l = limit.constant(), d = delta.constant();
  if (d && *d == 0)
    fail(node.describe(), ": range delta is 0");
  Dim length;
  // As in the kernel, the count is computed in floating point, where the
  // difference of two int64 values cannot overflow.
  if (s && l && d)
    length = Dim(int64_t(
        std::clamp(std::ceil((double(*l) - double(*s)) / double(*d)), 0.0, double(1LL << 62))));
  else if (std::optional<int64_t> count = floatRangeLength(node))
    length = Dim(*count);
  else if (d && *d > 0)
    length = (limit - start).divideExactly(delta).value_or(Dim::unknown());
  if (length.isUnknown())
    length = context.freshSymbol("range");
  setResult(node, 0, dtype, Shape({length}));
}

void inferConstantOfShape(Node &node, InferenceContext &context) {
  const Value *shape = requireIndexOperand(node, 0, "input");
  DType dtype = DType::F32;
  if (const Attribute *value = node.findAttr("value")) {
    if (value->kind() != Attribute::Kind::Tensor || value->asTensor().numElements() != 1)
      fail(node.describe(), ": attribute 'value' must be a one-element tensor");
    dtype = value->asTensor().dtype();
  }
  std::optional<std::vector<Dim>> dims = contentsOrUnknowns(context, shape);
  if (!dims) {
    std::optional<int64_t> length = staticLength(shape);
    setResult(node, 0, dtype,
              length ? Shape(freshDims(context, derivedRank(node, 0, *length, "the shape operand"),
                                       "dim"))
                     : Shape());
    return;
  }
  for (Dim &d : *dims) {
    if (d.isUnknown())
      d = context.freshSymbol("dim");
    else if (d.constant() && *d.constant() < 0)
      fail(node.describe(), ": negative dimension ", *d.constant());
  }
  setResult(node, 0, dtype, Shape(std::move(*dims)));
}

void inferConstant(Node &node, InferenceContext &context) {
  for (const char *unsupported : {"sparse_value", "value_string", "value_strings"})
    if (node.hasAttr(unsupported))
      fail(node.describe(), ": constant attribute '", unsupported, "' is not supported");
  if (node.hasAttr("value")) {
    const Tensor &value = node.requireTensor("value");
    setResult(node, 0, value.dtype(), Shape::fromConstants(value.dims()));
  } else if (node.hasAttr("value_float")) {
    node.getFloat("value_float", 0);
    setResult(node, 0, DType::F32, Shape::scalar());
  } else if (node.hasAttr("value_floats")) {
    setResult(node, 0, DType::F32,
              Shape::fromConstants({int64_t(node.getFloats("value_floats").size())}));
  } else if (node.hasAttr("value_int")) {
    node.getInt("value_int", 0);
    setResult(node, 0, DType::I64, Shape::scalar());
  } else if (node.hasAttr("value_ints")) {
    setResult(node, 0, DType::I64,
              Shape::fromConstants({int64_t(node.getInts("value_ints").size())}));
  } else {
    fail(node.describe(), ": constant has no value attribute");
  }
}

} // namespace

void registerCreationShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::Shape, inferShapeOp);
  table.add(OpKind::Size, inferSize);
  table.add(OpKind::Range, inferRange);
  table.add(OpKind::ConstantOfShape, inferConstantOfShape);
  table.add(OpKind::Constant, inferConstant);
}

} // namespace onnxc
