//===- ir/eval/QuantizedGemmKernels.cpp - Quantized MatMuls and Conv ------===//
//
// onnxc's DynamicQuantizedMatMul, step by step as the ONNX ops it stands for
// (every float operation in f32, in this order, so the compiled kernel can
// match it bit for bit):
//
//   DynamicQuantizeLinear(A), per tensor, to u8:
//     lo = min(0, min(A)), hi = max(0, max(A))
//     scale = (hi - lo) / 255, or 1 when that is 0 (A all zeros; as
//             onnxruntime does, where ONNX would divide by zero)
//     zero  = roundeven(clamp(0 - lo / scale, 0, 255))
//     q     = clamp(roundeven(A / scale) + zero, 0, 255)
//   MatMulInteger(q, W, zero, W zero point) -> s32 (wrapping)
//   Cast to f32, times (scale * W scale[n]), plus bias[n].
//
// QuantizedMatMul is the same with the scale and zero point given:
// q = clamp(roundeven(A / scale) + zero, lo, hi), [lo, hi] the range of the
// zero point's type (QuantizeLinear), then the same integer product. With
// `transpose_w = 1` both read W as [N, K].
//
// QuantizedConv quantizes X as QuantizedMatMul does A, then ConvInteger's
// sum (the reference Conv over the zero-point-free values, exact in f64,
// wrapped to s32), then f32(sum) * (scale * W scale[m]) + bias[m].
//
// A with NaN has no defined quantization; the result is unspecified.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Kernels.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace onnxc {
namespace {

const Tensor &present(const Node &node, const Tensor *t, const char *what) {
  if (!t->hasData())
    fail(node.describe(), ": ", what, " has no data (elided constant)");
  return *t;
}

/// A per-tensor or per-column parameter as n values.
std::vector<double> perColumn(const Node &node, const Tensor *t, int64_t n, double absent,
                              const char *what) {
  if (!t)
    return std::vector<double>(size_t(n), absent);
  present(node, t, what);
  if (t->numElements() != 1 && t->numElements() != n)
    fail(node.describe(), ": quantized matmul ", what, " has ", t->numElements(),
         " elements, expected 1 or ", n);
  std::vector<double> out(static_cast<size_t>(n));
  for (int64_t j = 0; j < n; ++j)
    out[size_t(j)] = t->elementAsDouble(t->numElements() == 1 ? 0 : j);
  return out;
}

/// Where the weight operands are: DynamicQuantizedMatMul has them at 1...,
/// QuantizedMatMul at 3... (after A's scale and zero point).
struct WeightOperands {
  size_t weights, scale, zero, bias;
};

const Tensor *optionalOperand(const std::vector<const Tensor *> &operands, size_t index) {
  return index < operands.size() ? operands[index] : nullptr;
}

bool transposesWeights(const Node &node) { return node.getInt("transpose_w", 0) != 0; }

/// Checks A and W; returns K.
int64_t checkShapes(const Node &node, const Tensor &a, const Tensor &w) {
  if (a.dtype() != DType::F32 || a.rank() < 2 || w.rank() != 2 ||
      (w.dtype() != DType::I8 && w.dtype() != DType::U8))
    fail(node.describe(), ": quantized matmul needs f32 A of rank >= 2 and i8/u8 W [K, N]");
  const int64_t k = a.dims().back();
  const int64_t depth = w.dims()[transposesWeights(node) ? 1 : 0];
  if (depth != k)
    fail(node.describe(), ": quantized matmul depth mismatch: A has K=", k, ", W has ", depth);
  return k;
}

/// MatMulInteger of the quantized A `q` (A's dims) with W, then the
/// dequantization: float(s32 sum) * (aScale * W scale[n]) + bias[n].
Tensor integerProduct(const Node &node, const Tensor &a, const std::vector<int32_t> &q,
                      int32_t aZero, float aScale, const std::vector<const Tensor *> &operands,
                      const WeightOperands &at) {
  const Tensor &w = present(node, operands[at.weights], "weights");
  const bool transposed = transposesWeights(node);
  const int64_t k = a.dims().back(), n = w.dims()[transposed ? 0 : 1];
  const int64_t rows = k == 0 ? 0 : a.numElements() / k;
  std::vector<double> scales = perColumn(node, operands[at.scale], n, 1, "weight scale");
  std::vector<double> zeros =
      perColumn(node, optionalOperand(operands, at.zero), n, 0, "weight zero point");
  const Tensor *biasTensor = optionalOperand(operands, at.bias);
  if (biasTensor && (present(node, biasTensor, "bias").numElements() != n))
    fail(node.describe(), ": quantized matmul bias has ", biasTensor->numElements(),
         " elements, expected ", n);
  std::vector<int32_t> weights(size_t(k * n)); // [K, N]
  for (int64_t c = 0; c < k; ++c)
    for (int64_t j = 0; j < n; ++j)
      weights[size_t(c * n + j)] = int32_t(w.elementAsInt64(transposed ? j * k + c : c * n + j));
  std::vector<int64_t> dims = a.dims();
  dims.back() = n;
  Tensor y(DType::F32, dims);
  float *out = y.data<float>();
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < n; ++j) {
      const int32_t wZero = int32_t(zeros[size_t(j)]);
      uint32_t sum = 0; // s32 with wrap-around, without signed overflow
      for (int64_t c = 0; c < k; ++c)
        sum += uint32_t((q[size_t(r * k + c)] - aZero) * (weights[size_t(c * n + j)] - wZero));
      int32_t exact;
      std::memcpy(&exact, &sum, sizeof exact);
      float value = float(exact) * (aScale * float(scales[size_t(j)]));
      if (biasTensor)
        value += float(biasTensor->elementAsDouble(j));
      out[r * n + j] = value;
    }
  return y;
}

void evalDynamicQuantizedMatMul(const Node &node, const std::vector<const Tensor *> &operands,
                                std::vector<Tensor> &results) {
  const Tensor &a = present(node, operands[0], "activation");
  checkShapes(node, a, present(node, operands[1], "weights"));
  // DynamicQuantizeLinear.
  const float *x = a.data<float>();
  float lo = 0, hi = 0;
  for (int64_t i = 0; i < a.numElements(); ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  float scale = (hi - lo) / 255.0f;
  if (scale == 0)
    scale = 1;
  const float zero = std::nearbyint(std::clamp(0.0f - lo / scale, 0.0f, 255.0f));
  std::vector<int32_t> q(size_t(a.numElements()));
  for (int64_t i = 0; i < a.numElements(); ++i)
    q[size_t(i)] = int32_t(std::clamp(std::nearbyint(x[i] / scale) + zero, 0.0f, 255.0f));
  results[0] = integerProduct(node, a, q, int32_t(zero), scale, operands, {1, 2, 3, 4});
}

/// QuantizeLinear of A by a one-value scale and zero point (u8 or i8).
std::vector<int32_t> quantizeStatically(const Node &node, const Tensor &a,
                                        const Tensor &scaleTensor, const Tensor &zeroTensor,
                                        float &scale, int32_t &zeroPoint) {
  present(node, &scaleTensor, "activation scale");
  present(node, &zeroTensor, "activation zero point");
  if (scaleTensor.numElements() != 1 || zeroTensor.numElements() != 1)
    fail(node.describe(), ": the activation scale and zero point must be one value each");
  scale = float(scaleTensor.elementAsDouble(0));
  const float zero = float(zeroTensor.elementAsInt64(0));
  zeroPoint = int32_t(zero);
  const bool isSigned = zeroTensor.dtype() == DType::I8;
  const float lo = isSigned ? -128.0f : 0.0f, hi = isSigned ? 127.0f : 255.0f;
  const float *x = a.data<float>();
  std::vector<int32_t> q(size_t(a.numElements()));
  for (int64_t i = 0; i < a.numElements(); ++i)
    q[size_t(i)] = int32_t(std::clamp(std::nearbyint(x[i] / scale) + zero, lo, hi));
  return q;
}

void evalQuantizedMatMul(const Node &node, const std::vector<const Tensor *> &operands,
                         std::vector<Tensor> &results) {
  const Tensor &a = present(node, operands[0], "activation");
  checkShapes(node, a, present(node, operands[3], "weights"));
  float scale = 1;
  int32_t zero = 0;
  std::vector<int32_t> q = quantizeStatically(node, a, *operands[1], *operands[2], scale, zero);
  results[0] = integerProduct(node, a, q, zero, scale, operands, {3, 4, 5, 6});
}

void evalQuantizedConv(const Node &node, const std::vector<const Tensor *> &operands,
                       std::vector<Tensor> &results) {
  const Tensor &x = present(node, operands[0], "input");
  const Tensor &w = present(node, operands[3], "weights");
  if (x.dtype() != DType::F32 || (w.dtype() != DType::I8 && w.dtype() != DType::U8) || w.rank() < 3)
    fail(node.describe(), ": quantized conv needs f32 X and i8/u8 W [M, C / group, kernel...]");
  float scale = 1;
  int32_t zero = 0;
  std::vector<int32_t> q = quantizeStatically(node, x, *operands[1], *operands[2], scale, zero);
  const int64_t channels = w.dims()[0], perChannel = w.numElements() / channels;
  std::vector<double> scales = perColumn(node, operands[4], channels, 1, "weight scale");
  std::vector<double> zeros =
      perColumn(node, optionalOperand(operands, 5), channels, 0, "weight zero point");
  const Tensor *bias = optionalOperand(operands, 6);
  if (bias && present(node, bias, "bias").numElements() != channels)
    fail(node.describe(), ": quantized conv bias has ", bias->numElements(), " elements, expected ",
         channels);
  // (q - zero) and (w - w zero) exactly, through the reference Conv.
  Tensor x64(DType::F64, x.dims()), w64(DType::F64, w.dims());
  for (int64_t i = 0; i < x.numElements(); ++i)
    x64.data<double>()[i] = double(q[size_t(i)] - zero);
  for (int64_t i = 0; i < w.numElements(); ++i)
    w64.data<double>()[i] = double(w.elementAsInt64(i)) - zeros[size_t(i / perChannel)];
  std::vector<Tensor> sums(1);
  referenceKernels().kernels[unsigned(OpKind::Conv)](node, {&x64, &w64}, sums);
  Tensor y(DType::F32, sums[0].dims());
  int64_t spatial = 1;
  for (size_t i = 2; i < sums[0].rank(); ++i)
    spatial *= sums[0].dims()[i];
  const double *sum = sums[0].data<double>();
  for (int64_t i = 0; i < y.numElements(); ++i) {
    const size_t m = size_t((i / spatial) % channels);
    // An s32 accumulator, wrapping as ConvInteger's.
    const int32_t exact = int32_t(uint32_t(int64_t(sum[i])));
    float value = float(exact) * (scale * float(scales[m]));
    if (bias)
      value += float(bias->elementAsDouble(int64_t(m)));
    y.data<float>()[i] = value;
  }
  results[0] = std::move(y);
}

} // namespace

void registerQuantizedGemmKernels(KernelTable &table) {
  table.add(OpKind::DynamicQuantizedMatMul, evalDynamicQuantizedMatMul);
  table.add(OpKind::QuantizedMatMul, evalQuantizedMatMul);
  table.add(OpKind::QuantizedConv, evalQuantizedConv);
}

} // namespace onnxc
