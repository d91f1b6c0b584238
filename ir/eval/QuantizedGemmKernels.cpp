//===- ir/eval/QuantizedGemmKernels.cpp - DynamicQuantizedMatMul ----------===//
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
// zero point's type (QuantizeLinear), then the same integer product.
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

/// Checks A and W; returns K.
int64_t checkShapes(const Node &node, const Tensor &a, const Tensor &w) {
  if (a.dtype() != DType::F32 || a.rank() < 2 || w.rank() != 2 ||
      (w.dtype() != DType::I8 && w.dtype() != DType::U8))
    fail(node.describe(), ": quantized matmul needs f32 A of rank >= 2 and i8/u8 W [K, N]");
  const int64_t k = a.dims().back();
  if (w.dims()[0] != k)
    fail(node.describe(), ": quantized matmul depth mismatch: A has K=", k, ", W has ",
         w.dims()[0]);
  return k;
}

/// MatMulInteger of the quantized A `q` (A's dims) with W, then the
/// dequantization: float(s32 sum) * (aScale * W scale[n]) + bias[n].
Tensor integerProduct(const Node &node, const Tensor &a, const std::vector<int32_t> &q,
                      int32_t aZero, float aScale, const std::vector<const Tensor *> &operands,
                      const WeightOperands &at) {
  const Tensor &w = present(node, operands[at.weights], "weights");
  const int64_t k = a.dims().back(), n = w.dims()[1];
  const int64_t rows = k == 0 ? 0 : a.numElements() / k;
  std::vector<double> scales = perColumn(node, operands[at.scale], n, 1, "weight scale");
  std::vector<double> zeros =
      perColumn(node, optionalOperand(operands, at.zero), n, 0, "weight zero point");
  const Tensor *biasTensor = optionalOperand(operands, at.bias);
  if (biasTensor && (present(node, biasTensor, "bias").numElements() != n))
    fail(node.describe(), ": quantized matmul bias has ", biasTensor->numElements(),
         " elements, expected ", n);
  std::vector<int32_t> weights(size_t(k * n));
  for (int64_t i = 0; i < k * n; ++i)
    weights[size_t(i)] = int32_t(w.elementAsInt64(i));
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

void evalQuantizedMatMul(const Node &node, const std::vector<const Tensor *> &operands,
                         std::vector<Tensor> &results) {
  const Tensor &a = present(node, operands[0], "activation");
  checkShapes(node, a, present(node, operands[3], "weights"));
  const Tensor &scaleTensor = present(node, operands[1], "activation scale");
  const Tensor &zeroTensor = present(node, operands[2], "activation zero point");
  if (scaleTensor.numElements() != 1 || zeroTensor.numElements() != 1)
    fail(node.describe(), ": quantized matmul activation scale and zero point must be one value "
                          "each");
  const float scale = float(scaleTensor.elementAsDouble(0));
  const float zero = float(zeroTensor.elementAsInt64(0));
  const bool isSigned = zeroTensor.dtype() == DType::I8;
  const float lo = isSigned ? -128.0f : 0.0f, hi = isSigned ? 127.0f : 255.0f;
  // QuantizeLinear.
  const float *x = a.data<float>();
  std::vector<int32_t> q(size_t(a.numElements()));
  for (int64_t i = 0; i < a.numElements(); ++i)
    q[size_t(i)] = int32_t(std::clamp(std::nearbyint(x[i] / scale) + zero, lo, hi));
  results[0] = integerProduct(node, a, q, int32_t(zero), scale, operands, {3, 4, 5, 6});
}

} // namespace

void registerQuantizedGemmKernels(KernelTable &table) {
  table.add(OpKind::DynamicQuantizedMatMul, evalDynamicQuantizedMatMul);
  table.add(OpKind::QuantizedMatMul, evalQuantizedMatMul);
}

} // namespace onnxc
