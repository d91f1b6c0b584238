//===- ir/infer/QuantizationRules.cpp - QuantizeLinear ... QLinearConv -----===//
//
// Quantized values are integer tensors with a float scale and an integer
// zero point beside them. The rules check what pairs them: a scale that is a
// scalar (per tensor), 1-D along `axis` (per axis) or of x's rank with one
// entry per block of `block_size` along `axis` (blocked), a zero point of the
// scale's shape and of the quantized dtype, and for the integer products a
// per-row (A) or per-column (B) / per-output-channel (W) parameter of the
// right length. The result shapes of the products are MatMul's and Conv's.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/LinearAlgebraRulesInternal.h"
#include "ir/infer/MovementRulesInternal.h"

#include "ir/Error.h"
#include "ir/OpAttributes.h"
#include "ir/eval/Broadcast.h"

namespace onnxc {

namespace {

bool isQuantizedType(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::U16 || isFourBit(t);
}

bool isEightBit(DType t) { return t == DType::I8 || t == DType::U8; }

void requireDType(const Node &node, const Value *value, const char *what, bool ok,
                  const char *expected) {
  if (value->dtype() != DType::Unknown && !ok)
    fail(node.describe(), ": ", what, " must be ", expected, ", not ", dtypeName(value->dtype()));
}

void requireFloatScale(const Node &node, const Value *scale, const char *what) {
  requireDType(node, scale, what, isFloat(scale->dtype()), "a float tensor");
}

/// A zero point must have the dtype of the data it belongs to.
void requireZeroPointDType(const Node &node, const Value *zeroPoint, DType data, const char *what) {
  if (!zeroPoint || zeroPoint->dtype() == DType::Unknown || data == DType::Unknown)
    return;
  if (zeroPoint->dtype() != data)
    fail(node.describe(), ": ", what, " is ", dtypeName(zeroPoint->dtype()),
         " but the data it belongs to is ", dtypeName(data));
}

/// A zero point must have its scale's shape (both scalars or both [n]).
void requireZeroPointShape(InferenceContext &context, const Node &node, const Value *scale,
                           const Value *zeroPoint) {
  if (!zeroPoint || !scale->shape().isRanked() || !zeroPoint->shape().isRanked())
    return;
  const Shape &s = scale->shape(), &z = zeroPoint->shape();
  std::optional<int64_t> sCount = s.numElements().constant(), zCount = z.numElements().constant();
  if (sCount == 1 && zCount == 1 && s.rank() <= 1 && z.rank() <= 1)
    return;
  if (s.rank() != z.rank())
    fail(node.describe(), ": zero point ", z.str(), " does not match the scale's shape ", s.str());
  for (size_t i = 0; i < s.rank(); ++i)
    if (provablyDifferent(s[i], z[i]))
      fail(node.describe(), ": zero point ", z.str(), " does not match the scale's shape ",
           s.str());
    else
      requireSameDim(context, node, z[i], s[i], "zero point dimension", z, s);
}

/// Blocked quantization (`block_size` > 0): the scale has x's rank, x's dims
/// but along `axis`, where it has one entry per block (the last may be
/// short), so that dim must be known.
void checkBlockedScale(InferenceContext &context, const Node &node, const Shape &x, const Shape &s,
                       int64_t blockSize) {
  if (!x.isRanked())
    return;
  if (s.rank() != x.rank())
    fail(node.describe(), ": a blocked scale ", s.str(), " must have x's rank (x is ", x.str(),
         ")");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 1), int64_t(x.rank())));
  std::optional<int64_t> length = x[axis].constant(), blocks = s[axis].constant();
  if (!length || !blocks)
    fail(node.describe(), ": blocked quantization needs known sizes along axis ", axis, " (x ",
         x.str(), ", scale ", s.str(), ")");
  if (*blocks != (*length + blockSize - 1) / blockSize)
    fail(node.describe(), ": a scale of ", *blocks, " blocks along axis ", axis,
         " does not cover x's ", *length, " in blocks of ", blockSize);
  for (size_t i = 0; i < x.rank(); ++i)
    if (i != axis)
      requireSameDim(context, node, s[i], x[i],
                     "blocked scale dimension " + std::to_string(i) + " (against x)", s, x);
}

/// QuantizeLinear / DequantizeLinear: the scale is a scalar (or [1]), a
/// 1-D tensor as long as x's `axis`, or blocked along `axis`.
void checkScaleAlongAxis(InferenceContext &context, const Node &node, const Shape &x,
                         const Value *scale, const Value *zeroPoint) {
  requireZeroPointShape(context, node, scale, zeroPoint);
  const Shape &s = scale->shape();
  int64_t blockSize = node.getInt("block_size", 0);
  if (blockSize < 0)
    fail(node.describe(), ": block_size ", blockSize, " is negative");
  if (!s.isRanked())
    return;
  if (blockSize > 0)
    return checkBlockedScale(context, node, x, s, blockSize);
  if (s.rank() > 1)
    fail(node.describe(), ": scale ", s.str(),
         " must be a scalar or 1-D (or blocked, with block_size > 0)");
  if (s.rank() == 0 || s[0].constant() == 1 || !x.isRanked())
    return;
  if (x.rank() == 0)
    fail(node.describe(), ": a per-axis scale ", s.str(), " needs x of rank at least 1");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 1), int64_t(x.rank())));
  requireSameDim(context, node, s[0], x[axis],
                 "per-axis scale length (against x dimension " + std::to_string(axis) + ")", s, x);
}

void inferQuantizeLinear(Node &node, InferenceContext &context) {
  const Value *x = requireNamedOperand(node, 0, "x");
  const Value *scale = requireNamedOperand(node, 1, "y_scale");
  const Value *zeroPoint = node.numOperands() > 2 ? node.operand(2) : nullptr;
  requireDType(node, x, "x", isFloat(x->dtype()) || x->dtype() == DType::I32,
               "a float or i32 tensor");
  requireFloatScale(node, scale, "y_scale");
  DType result = DType::U8;
  int64_t code = node.getInt("output_dtype", 0);
  if (code != 0) {
    std::optional<DType> requested = dtypeFromOnnxCode(code);
    if (!requested || !isQuantizedType(*requested))
      fail(node.describe(), ": output_dtype ", code, " is not i4, u4, i8, u8, i16 or u16");
    result = *requested;
  }
  if (zeroPoint && zeroPoint->dtype() != DType::Unknown) {
    if (!isQuantizedType(zeroPoint->dtype()))
      fail(node.describe(), ": y_zero_point must be i4, u4, i8, u8, i16 or u16, not ",
           dtypeName(zeroPoint->dtype()));
    if (code != 0 && zeroPoint->dtype() != result)
      fail(node.describe(), ": output_dtype ", dtypeName(result),
           " does not match the zero point's ", dtypeName(zeroPoint->dtype()));
    result = zeroPoint->dtype();
  }
  checkScaleAlongAxis(context, node, x->shape(), scale, zeroPoint);
  setResult(node, 0, result, x->shape());
}

void inferDequantizeLinear(Node &node, InferenceContext &context) {
  const Value *x = requireNamedOperand(node, 0, "x");
  const Value *scale = requireNamedOperand(node, 1, "x_scale");
  const Value *zeroPoint = node.numOperands() > 2 ? node.operand(2) : nullptr;
  requireDType(node, x, "x", isQuantizedType(x->dtype()) || x->dtype() == DType::I32,
               "i4, u4, i8, u8, i16, u16 or i32");
  requireFloatScale(node, scale, "x_scale");
  requireZeroPointDType(node, zeroPoint, x->dtype(), "x_zero_point");
  checkScaleAlongAxis(context, node, x->shape(), scale, zeroPoint);
  DType result = scale->dtype();
  if (int64_t code = node.getInt("output_dtype", 0); code != 0) {
    std::optional<DType> requested = dtypeFromOnnxCode(code);
    if (!requested || !isFloat(*requested))
      fail(node.describe(), ": output_dtype ", code, " is not a float type");
    result = *requested;
  }
  setResult(node, 0, result, x->shape());
}

void inferDynamicQuantizeLinear(Node &node, InferenceContext &context) {
  const Value *x = requireNamedOperand(node, 0, "x");
  requireDType(node, x, "x", x->dtype() == DType::F32, "f32");
  setResult(node, 0, DType::U8, x->shape());
  setResult(node, 1, DType::F32, Shape::fromConstants({}));
  setResult(node, 2, DType::U8, Shape::fromConstants({}));
}

/// A quantization parameter of a product: one element (per tensor) or, when
/// `perDim` is given, that many (per row of A, per column of B, per output
/// channel of W).
void requireParameterCount(InferenceContext &context, const Node &node, const Value *param,
                           const char *what, const Dim *perDim, const char *perWhat) {
  if (!param || !param->shape().isRanked())
    return;
  Dim count = param->shape().numElements();
  if (count.constant() == 1)
    return;
  if (!perDim)
    fail(node.describe(), ": ", what, " must be a scalar, got ", param->shape().str());
  size_t longAxes = 0;
  for (const Dim &d : param->shape().dims())
    longAxes += d.constant() != 1;
  if (longAxes > 1)
    fail(node.describe(), ": ", what, " ", param->shape().str(), " must be a scalar or one value ",
         perWhat);
  if (provablyDifferent(count, *perDim))
    fail(node.describe(), ": ", what, " has ", count.str(), " elements but must have 1 or ",
         perDim->str(), " (one ", perWhat, ")");
  requireSameDim(context, node, count, *perDim, std::string(what) + " length", param->shape(),
                 param->shape());
}

/// Rows of A and columns of B of a matmul of ranked shapes.
std::pair<Dim, Dim> matMulRowsAndColumns(const Shape &a, const Shape &b) {
  Dim rows = a.rank() >= 2 ? a[a.rank() - 2] : Dim(1);
  Dim columns = b.rank() >= 2 ? b.dims().back() : Dim(1);
  return {rows, columns};
}

void inferMatMulInteger(Node &node, InferenceContext &context) {
  const Value *a = requireNamedOperand(node, 0, "A");
  const Value *b = requireNamedOperand(node, 1, "B");
  const Value *aZero = node.numOperands() > 2 ? node.operand(2) : nullptr;
  const Value *bZero = node.numOperands() > 3 ? node.operand(3) : nullptr;
  requireDType(node, a, "A", isEightBit(a->dtype()), "i8 or u8");
  requireDType(node, b, "B", isEightBit(b->dtype()), "i8 or u8");
  requireZeroPointDType(node, aZero, a->dtype(), "a_zero_point");
  requireZeroPointDType(node, bZero, b->dtype(), "b_zero_point");
  if (!a->shape().isRanked() || !b->shape().isRanked())
    return setResult(node, 0, DType::I32, Shape());
  Shape shape = matMulResultShape(context, node, a->shape(), b->shape());
  auto [rows, columns] = matMulRowsAndColumns(a->shape(), b->shape());
  requireParameterCount(context, node, aZero, "a_zero_point", &rows, "per row");
  requireParameterCount(context, node, bZero, "b_zero_point", &columns, "per column");
  setResult(node, 0, DType::I32, shape);
}

void inferQLinearMatMul(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 8);
  const Value *a = node.operand(0), *b = node.operand(3);
  requireDType(node, a, "a", isEightBit(a->dtype()), "i8 or u8");
  requireDType(node, b, "b", isEightBit(b->dtype()), "i8 or u8");
  requireFloatScale(node, node.operand(1), "a_scale");
  requireFloatScale(node, node.operand(4), "b_scale");
  requireFloatScale(node, node.operand(6), "y_scale");
  requireZeroPointDType(node, node.operand(2), a->dtype(), "a_zero_point");
  requireZeroPointDType(node, node.operand(5), b->dtype(), "b_zero_point");
  const Value *yZero = node.operand(7);
  requireDType(node, yZero, "y_zero_point", isEightBit(yZero->dtype()), "i8 or u8");
  if (!a->shape().isRanked() || !b->shape().isRanked())
    return setResult(node, 0, yZero->dtype(), Shape());
  Shape shape = matMulResultShape(context, node, a->shape(), b->shape());
  auto [rows, columns] = matMulRowsAndColumns(a->shape(), b->shape());
  requireParameterCount(context, node, node.operand(1), "a_scale", &rows, "per row");
  requireParameterCount(context, node, node.operand(2), "a_zero_point", &rows, "per row");
  requireParameterCount(context, node, node.operand(4), "b_scale", &columns, "per column");
  requireParameterCount(context, node, node.operand(5), "b_zero_point", &columns, "per column");
  requireParameterCount(context, node, node.operand(6), "y_scale", nullptr, "");
  requireParameterCount(context, node, yZero, "y_zero_point", nullptr, "");
  setResult(node, 0, yZero->dtype(), shape);
}

void inferConvInteger(Node &node, InferenceContext &context) {
  const Value *x = requireNamedOperand(node, 0, "x");
  const Value *w = requireNamedOperand(node, 1, "w");
  const Value *xZero = node.numOperands() > 2 ? node.operand(2) : nullptr;
  const Value *wZero = node.numOperands() > 3 ? node.operand(3) : nullptr;
  requireDType(node, x, "x", isEightBit(x->dtype()), "i8 or u8");
  requireDType(node, w, "w", isEightBit(w->dtype()), "i8 or u8");
  requireZeroPointDType(node, xZero, x->dtype(), "x_zero_point");
  requireZeroPointDType(node, wZero, w->dtype(), "w_zero_point");
  if (!x->shape().isRanked() || !w->shape().isRanked())
    return setResult(node, 0, DType::I32, Shape());
  Shape shape = convResultShape(context, node, x->shape(), w->shape());
  Dim channels = w->shape()[0];
  requireParameterCount(context, node, xZero, "x_zero_point", nullptr, "");
  requireParameterCount(context, node, wZero, "w_zero_point", &channels, "per output channel");
  setResult(node, 0, DType::I32, shape);
}

void inferQLinearConv(Node &node, InferenceContext &context) {
  requireOperandsPresent(node, 8);
  const Value *x = node.operand(0), *w = node.operand(3);
  requireDType(node, x, "x", isEightBit(x->dtype()), "i8 or u8");
  requireDType(node, w, "w", isEightBit(w->dtype()), "i8 or u8");
  requireFloatScale(node, node.operand(1), "x_scale");
  requireFloatScale(node, node.operand(4), "w_scale");
  requireFloatScale(node, node.operand(6), "y_scale");
  requireZeroPointDType(node, node.operand(2), x->dtype(), "x_zero_point");
  requireZeroPointDType(node, node.operand(5), w->dtype(), "w_zero_point");
  const Value *yZero = node.operand(7);
  requireDType(node, yZero, "y_zero_point", isEightBit(yZero->dtype()), "i8 or u8");
  const Value *bias = node.numOperands() > 8 ? node.operand(8) : nullptr;
  if (bias)
    requireDType(node, bias, "B", bias->dtype() == DType::I32, "i32");
  if (!x->shape().isRanked() || !w->shape().isRanked())
    return setResult(node, 0, yZero->dtype(), Shape());
  Shape shape = convResultShape(context, node, x->shape(), w->shape());
  Dim channels = w->shape()[0];
  requireParameterCount(context, node, node.operand(1), "x_scale", nullptr, "");
  requireParameterCount(context, node, node.operand(2), "x_zero_point", nullptr, "");
  requireParameterCount(context, node, node.operand(4), "w_scale", &channels, "per output channel");
  requireParameterCount(context, node, node.operand(5), "w_zero_point", &channels,
                        "per output channel");
  requireParameterCount(context, node, node.operand(6), "y_scale", nullptr, "");
  requireParameterCount(context, node, yZero, "y_zero_point", nullptr, "");
  if (bias && bias->shape().isRanked()) {
    if (bias->shape().rank() != 1)
      fail(node.describe(), ": bias must be 1-D, got ", bias->shape().str());
    requireSameDim(context, node, bias->shape()[0], channels, "bias length", bias->shape(),
                   w->shape());
  }
  setResult(node, 0, yZero->dtype(), shape);
}

} // namespace

void registerQuantizationShapeRules(ShapeRuleTable &table) {
  table.add(OpKind::QuantizeLinear, inferQuantizeLinear);
  table.add(OpKind::DequantizeLinear, inferDequantizeLinear);
  table.add(OpKind::DynamicQuantizeLinear, inferDynamicQuantizeLinear);
  table.add(OpKind::MatMulInteger, inferMatMulInteger);
  table.add(OpKind::QLinearMatMul, inferQLinearMatMul);
  table.add(OpKind::ConvInteger, inferConvInteger);
  table.add(OpKind::QLinearConv, inferQLinearConv);
}

} // namespace onnxc
