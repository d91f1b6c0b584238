//===- ir/eval/QuantizationKernels.cpp - QuantizeLinear ... QLinearConv ----===//
//
// The ONNX semantics, element by element, as the oracle for the compiled
// kernels:
//
//   QuantizeLinear     y = saturate(rint(x / scale) + zero_point)
//   DequantizeLinear   y = (x - zero_point) * scale
//   DynamicQuantize    range [min(0, min x), max(0, max x)] over 255 steps,
//                      zero point = saturate(rint(-min / scale))
//   MatMulInteger      (A - a_zp) x (B - b_zp) accumulated in i32
//   QLinearMatMul      saturate(rint(i32 product * a_scale b_scale / y_scale)
//                      + y_zp)
//   ConvInteger, QLinearConv: the same over Conv.
//
// rint rounds half to even (the default rounding mode). x / scale is computed
// in float (rounded to x's type when that is f16/bf16), as onnxruntime and
// the ONNX reference do; a NaN quantizes to the zero point (onnxruntime
// leaves that case undefined). The integer products reuse the MatMul and
// Conv kernels on operands with the zero points already subtracted, so the
// broadcasting and conv geometry are those of the float ops.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cmath>
#include <limits>

namespace onnxc {

namespace {

using Operands = std::vector<const Tensor *>;

const Tensor *optionalOperand(const Operands &operands, size_t i) {
  return i < operands.size() ? operands[i] : nullptr;
}

/// [lowest, highest] of a quantized integer type (ir/DType.h); refuses any
/// other.
std::pair<double, double> requireQuantizedRange(DType type) {
  if (std::optional<std::pair<double, double>> range = quantizedRange(type))
    return *range;
  fail("quantized type ", dtypeName(type), " is not supported");
}

/// `value` rounded to nearest even and clamped to `type`'s range (NaN: 0).
double saturateRounded(double value, DType type) {
  if (std::isnan(value))
    return 0;
  auto [lowest, highest] = requireQuantizedRange(type);
  return std::clamp(std::nearbyint(value), lowest, highest);
}

/// `value` as the nearest value of float type `type` (f16, bf16, f32).
float roundToFloatType(DType type, float value) {
  if (type == DType::F16)
    return halfToFloat(floatToHalf(value));
  if (type == DType::BF16)
    return bfloat16ToFloat(floatToBfloat16(value));
  return value;
}

/// For each element of a tensor of `dims`, which element of a per-axis or
/// blocked parameter (scale or zero point) applies: 0 for a per-tensor one.
/// Element i sits at (outer, a, inner) around `axis`; a per-axis parameter
/// is indexed by a, a blocked one (x's rank, `blocks` along the axis) by
/// (outer, a / block_size, inner).
class ParameterIndex {
public:
  ParameterIndex(const Node &node, const std::vector<int64_t> &dims, const Tensor &scale) {
    block_ = node.getInt("block_size", 0);
    if (block_ < 0)
      fail(node.describe(), ": block_size ", block_, " is negative");
    if (block_ == 0 && scale.rank() > 1)
      fail(node.describe(), ": scale ", scale.typeString(),
           " must be a scalar or 1-D (or blocked, with block_size > 0)");
    if (block_ == 0 && scale.numElements() == 1)
      return;
    if (dims.empty())
      fail(node.describe(), ": a per-axis or blocked scale needs x of rank at least 1");
    size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 1), int64_t(dims.size())));
    axisSize_ = dims[axis];
    for (size_t i = axis + 1; i < dims.size(); ++i)
      inner_ *= dims[i];
    if (block_ > 0) {
      checkBlocked(node, dims, scale, axis);
      return;
    }
    if (scale.numElements() != dims[axis])
      fail(node.describe(), ": per-axis scale has ", scale.numElements(),
           " elements but x dimension ", axis, " is ", dims[axis]);
  }
  int64_t operator()(int64_t element) const {
    int64_t a = (element / inner_) % axisSize_;
    if (block_ == 0)
      return a;
    int64_t outer = element / (inner_ * axisSize_);
    return (outer * blocks_ + a / block_) * inner_ + element % inner_;
  }

private:
  void checkBlocked(const Node &node, const std::vector<int64_t> &dims, const Tensor &scale,
                    size_t axis) {
    bool ok = scale.rank() == dims.size();
    for (size_t i = 0; ok && i < dims.size(); ++i)
      ok = i == axis ? scale.dims()[i] == (dims[i] + block_ - 1) / block_
                     : scale.dims()[i] == dims[i];
    if (!ok)
      fail(node.describe(), ": blocked scale ", scale.typeString(), " does not match x ",
           Tensor::elided(DType::F32, dims).typeString().substr(3), " in blocks of ", block_,
           " along axis ", axis);
    blocks_ = scale.dims()[axis];
  }

  int64_t inner_ = 1, axisSize_ = 1, block_ = 0, blocks_ = 1;
};

void requireZeroPointLike(const Node &node, const Tensor *zeroPoint, const Tensor &scale) {
  if (zeroPoint && zeroPoint->numElements() != scale.numElements())
    fail(node.describe(), ": zero point ", zeroPoint->typeString(),
         " does not match the scale's shape ", scale.typeString());
}

void quantizeLinearKernel(const Node &node, const Operands &operands,
                          std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  const Tensor &scale = requireOperand(node, operands, 1);
  const Tensor *zeroPoint = optionalOperand(operands, 2);
  requireZeroPointLike(node, zeroPoint, scale);
  DType type = DType::U8;
  if (zeroPoint)
    type = zeroPoint->dtype();
  else if (int64_t code = node.getInt("output_dtype", 0); code != 0)
    type = dtypeFromOnnxCode(code).value_or(DType::Unknown);
  requireQuantizedRange(type); // refuses a non-quantized type
  ParameterIndex parameter(node, x.dims(), scale);
  Tensor y(type, x.dims());
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    int64_t p = parameter(i);
    double quotient;
    if (x.dtype() == DType::F64)
      quotient = x.elementAsDouble(i) / scale.elementAsDouble(p);
    else
      quotient = roundToFloatType(x.dtype(),
                                  float(x.elementAsDouble(i)) / float(scale.elementAsDouble(p)));
    double zero = zeroPoint ? zeroPoint->elementAsDouble(p) : 0.0;
    double rounded = std::isnan(quotient) ? zero : std::nearbyint(quotient) + zero;
    y.setElementFromDouble(i, saturateRounded(rounded, type));
  }
  results[0] = std::move(y);
}

void dequantizeLinearKernel(const Node &node, const Operands &operands,
                            std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  const Tensor &scale = requireOperand(node, operands, 1);
  const Tensor *zeroPoint = optionalOperand(operands, 2);
  requireZeroPointLike(node, zeroPoint, scale);
  DType type = scale.dtype();
  if (int64_t code = node.getInt("output_dtype", 0); code != 0)
    type = dtypeFromOnnxCode(code).value_or(DType::Unknown);
  if (!isFloat(type))
    fail(node.describe(), ": DequantizeLinear result type must be a float type");
  ParameterIndex parameter(node, x.dims(), scale);
  Tensor y(type, x.dims());
  for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
    int64_t p = parameter(i);
    // x - zero point is exact in float for 8- and 16-bit x; i32 x rounds
    // to float first, as the ONNX reference does.
    double shifted = double(float(x.elementAsDouble(i)));
    if (zeroPoint)
      shifted -= zeroPoint->elementAsDouble(p);
    y.setElementFromDouble(i, float(shifted * scale.elementAsDouble(p)));
  }
  results[0] = std::move(y);
}

void dynamicQuantizeLinearKernel(const Node &node, const Operands &operands,
                                 std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  if (x.dtype() != DType::F32)
    fail(node.describe(), ": DynamicQuantizeLinear needs f32 input, got ", x.typeString());
  const float *data = x.data<float>();
  int64_t n = x.numElements();
  float low = 0, high = 0; // the range always includes 0
  for (int64_t i = 0; i < n; ++i) {
    low = std::min(low, data[i]);
    high = std::max(high, data[i]);
  }
  float scale = (high == low ? 1.0f : high - low) / 255.0f;
  float zero = float(saturateRounded(0.0f - low / scale, DType::U8));
  Tensor y(DType::U8, x.dims());
  uint8_t *out = y.data<uint8_t>();
  for (int64_t i = 0; i < n; ++i) {
    float quotient = data[i] / scale;
    out[i] = uint8_t(
        saturateRounded(std::isnan(quotient) ? zero : std::nearbyint(quotient) + zero, DType::U8));
  }
  results[0] = std::move(y);
  results[1] = Tensor::scalar<float>(scale);
  results[2] = Tensor::scalar<uint8_t>(uint8_t(zero));
}

// --- integer products -------------------------------------------------------

/// `data` - `zeroPoint` as i32 (or f64 for the Conv kernel), with the zero
/// point per tensor or, when it has more than one element, indexed by
/// `(element / inner) % count` (the row, column or output channel).
Tensor subtractZeroPoint(const Node &node, const Tensor &data, const Tensor *zeroPoint,
                         int64_t inner, int64_t count, const char *what, DType type) {
  if (zeroPoint && zeroPoint->dtype() != data.dtype())
    fail(node.describe(), ": ", what, " is ", dtypeName(zeroPoint->dtype()), " but its data is ",
         dtypeName(data.dtype()));
  int64_t zeros = zeroPoint ? zeroPoint->numElements() : 1;
  if (zeros != 1 && zeros != count)
    fail(node.describe(), ": ", what, " has ", zeros, " elements, not 1 or ", count);
  Tensor out(type, data.dims());
  for (int64_t i = 0, n = data.numElements(); i < n; ++i) {
    int64_t zero = zeroPoint ? zeroPoint->elementAsInt64(zeros == 1 ? 0 : (i / inner) % count) : 0;
    out.setElementFromDouble(i, double(data.elementAsInt64(i) - zero));
  }
  return out;
}

void requireEightBit(const Node &node, const Tensor &t, const char *what) {
  if (t.dtype() != DType::I8 && t.dtype() != DType::U8)
    fail(node.describe(), ": ", what, " must be i8 or u8, got ", t.typeString());
}

/// Rows (M) and columns (N) of a matmul operand pair.
int64_t matrixRows(const Tensor &a) { return a.rank() >= 2 ? a.dims()[a.rank() - 2] : 1; }
int64_t matrixColumns(const Tensor &b) { return b.rank() >= 2 ? b.dims().back() : 1; }

/// (A - a_zp) x (B - b_zp) in i32 through the MatMul kernel.
Tensor integerMatMul(const Node &node, const Tensor &a, const Tensor *aZero, const Tensor &b,
                     const Tensor *bZero) {
  requireEightBit(node, a, "A");
  requireEightBit(node, b, "B");
  int64_t rows = matrixRows(a), columns = matrixColumns(b);
  Tensor a32 = subtractZeroPoint(node, a, aZero, a.dims().empty() ? 1 : a.dims().back(), rows,
                                 "a_zero_point", DType::I32);
  Tensor b32 = subtractZeroPoint(node, b, bZero, 1, columns, "b_zero_point", DType::I32);
  std::vector<Tensor> product(1);
  referenceKernels().kernels[unsigned(OpKind::MatMul)](node, {&a32, &b32}, product);
  return product[0];
}

void matMulIntegerKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  results[0] = integerMatMul(node, requireOperand(node, operands, 0), optionalOperand(operands, 2),
                             requireOperand(node, operands, 1), optionalOperand(operands, 3));
}

/// One element of a scale or zero point: per tensor or indexed.
double parameterAt(const Tensor *t, int64_t index) {
  if (!t)
    return 0;
  return t->elementAsDouble(t->numElements() == 1 ? 0 : index);
}

/// a_scale * b_scale / y_scale in the scales' float type (the ONNX
/// reference multiplies the scales in their own type).
double requantizeMultiplier(DType type, double aScale, double bScale, double yScale) {
  float product = roundToFloatType(type, float(aScale) * float(bScale));
  return roundToFloatType(type, product / float(yScale));
}

void requireScalarParameter(const Node &node, const Tensor &t, const char *what) {
  if (t.numElements() != 1)
    fail(node.describe(), ": ", what, " must be a scalar, got ", t.typeString());
}

void qLinearMatMulKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &a = requireOperand(node, operands, 0);
  const Tensor &aScale = requireOperand(node, operands, 1);
  const Tensor &b = requireOperand(node, operands, 3);
  const Tensor &bScale = requireOperand(node, operands, 4);
  const Tensor &yScale = requireOperand(node, operands, 6);
  const Tensor &yZero = requireOperand(node, operands, 7);
  requireEightBit(node, yZero, "y_zero_point");
  requireScalarParameter(node, yScale, "y_scale");
  requireScalarParameter(node, yZero, "y_zero_point");
  Tensor product =
      integerMatMul(node, a, optionalOperand(operands, 2), b, optionalOperand(operands, 5));
  int64_t rows = matrixRows(a), columns = matrixColumns(b);
  for (auto [scale, count, what] :
       {std::tuple{&aScale, rows, "a_scale"}, std::tuple{&bScale, columns, "b_scale"}})
    if (scale->numElements() != 1 && scale->numElements() != count)
      fail(node.describe(), ": ", what, " has ", scale->numElements(), " elements, not 1 or ",
           count);
  Tensor y(yZero.dtype(), product.dims());
  const int32_t *sums = product.data<int32_t>();
  double zero = yZero.elementAsDouble(0);
  for (int64_t i = 0, n = product.numElements(); i < n; ++i) {
    int64_t row = (i / columns) % rows, column = i % columns;
    double multiplier =
        requantizeMultiplier(aScale.dtype(), parameterAt(&aScale, row),
                             parameterAt(&bScale, column), yScale.elementAsDouble(0));
    y.setElementFromDouble(i, saturateRounded(double(sums[i]) * multiplier + zero, y.dtype()));
  }
  results[0] = std::move(y);
}

/// (X - x_zp) conv (W - w_zp) + bias, exact in f64 through the Conv kernel.
Tensor integerConv(const Node &node, const Tensor &x, const Tensor *xZero, const Tensor &w,
                   const Tensor *wZero, const Tensor *bias) {
  requireEightBit(node, x, "x");
  requireEightBit(node, w, "w");
  if (w.rank() < 1)
    fail(node.describe(), ": w must have rank at least 1");
  int64_t channels = w.dims()[0];
  if (xZero && xZero->numElements() != 1)
    fail(node.describe(), ": x_zero_point must be a scalar, got ", xZero->typeString());
  Tensor x64 = subtractZeroPoint(node, x, xZero, 1, 1, "x_zero_point", DType::F64);
  Tensor w64 = subtractZeroPoint(node, w, wZero, w.numElements() / std::max<int64_t>(channels, 1),
                                 channels, "w_zero_point", DType::F64);
  std::vector<const Tensor *> convOperands = {&x64, &w64};
  Tensor bias64;
  if (bias) {
    if (bias->dtype() != DType::I32)
      fail(node.describe(), ": bias must be i32, got ", bias->typeString());
    bias64 = Tensor(DType::F64, bias->dims());
    for (int64_t i = 0; i < bias->numElements(); ++i)
      bias64.setElementFromDouble(i, bias->elementAsDouble(i));
    convOperands.push_back(&bias64);
  }
  std::vector<Tensor> sums(1);
  referenceKernels().kernels[unsigned(OpKind::Conv)](node, convOperands, sums);
  return sums[0];
}

void convIntegerKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  Tensor sums =
      integerConv(node, requireOperand(node, operands, 0), optionalOperand(operands, 2),
                  requireOperand(node, operands, 1), optionalOperand(operands, 3), nullptr);
  Tensor y(DType::I32, sums.dims());
  for (int64_t i = 0, n = sums.numElements(); i < n; ++i)
    y.data<int32_t>()[i] = int32_t(narrowInteger(int64_t(sums.data<double>()[i]), DType::I32));
  results[0] = std::move(y);
}

void qLinearConvKernel(const Node &node, const Operands &operands, std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  const Tensor &xScale = requireOperand(node, operands, 1);
  const Tensor &w = requireOperand(node, operands, 3);
  const Tensor &wScale = requireOperand(node, operands, 4);
  const Tensor &yScale = requireOperand(node, operands, 6);
  const Tensor &yZero = requireOperand(node, operands, 7);
  requireEightBit(node, yZero, "y_zero_point");
  requireScalarParameter(node, xScale, "x_scale");
  requireScalarParameter(node, yScale, "y_scale");
  requireScalarParameter(node, yZero, "y_zero_point");
  Tensor sums = integerConv(node, x, optionalOperand(operands, 2), w, optionalOperand(operands, 5),
                            optionalOperand(operands, 8));
  int64_t channels = sums.dims()[1];
  if (wScale.numElements() != 1 && wScale.numElements() != channels)
    fail(node.describe(), ": w_scale has ", wScale.numElements(), " elements, not 1 or ", channels);
  int64_t spatial = 1;
  for (size_t i = 2; i < sums.rank(); ++i)
    spatial *= sums.dims()[i];
  Tensor y(yZero.dtype(), sums.dims());
  double zero = yZero.elementAsDouble(0);
  for (int64_t i = 0, n = sums.numElements(); i < n; ++i) {
    int64_t channel = (i / spatial) % channels;
    double multiplier =
        requantizeMultiplier(xScale.dtype(), xScale.elementAsDouble(0),
                             parameterAt(&wScale, channel), yScale.elementAsDouble(0));
    // The sum is an i32 accumulator (exact in f64, wrapped like i32).
    double sum = double(int32_t(narrowInteger(int64_t(sums.data<double>()[i]), DType::I32)));
    y.setElementFromDouble(i, saturateRounded(sum * multiplier + zero, y.dtype()));
  }
  results[0] = std::move(y);
}

} // namespace

void registerQuantizationKernels(KernelTable &table) {
  table.add(OpKind::QuantizeLinear, quantizeLinearKernel);
  table.add(OpKind::DequantizeLinear, dequantizeLinearKernel);
  table.add(OpKind::DynamicQuantizeLinear, dynamicQuantizeLinearKernel);
  table.add(OpKind::MatMulInteger, matMulIntegerKernel);
  table.add(OpKind::QLinearMatMul, qLinearMatMulKernel);
  table.add(OpKind::ConvInteger, convIntegerKernel);
  table.add(OpKind::QLinearConv, qLinearConvKernel);
}

} // namespace onnxc
