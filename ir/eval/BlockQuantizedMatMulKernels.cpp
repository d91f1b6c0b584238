//===- ir/eval/BlockQuantizedMatMulKernels.cpp - Weight-only quantized MatMul ---===//
//
// onnxc's BlockQuantizedMatMul, as the two ONNX ops it stands for:
//
//   W' = DequantizeLinear(W, scale, zero point){axis = 0, block_size}
//        w'[k, n] = f32((w[k, n] - zp[k / block, n]) * scale[k / block, n])
//   Y  = MatMul(A, W')
//
// each computed by the same reference kernel the unfused graph runs, so the
// fused op and the graph it replaced evaluate to the same bits.
//
// With `activation_int8 = 1` (MatMulNBits at accuracy_level 4) A is first
// read as onnxruntime's CPU kernel quantizes it: each row in blocks of
// `block_size` along K, per block m = max|a| (f32), inverse = 127 / m (0
// when m is 0), code = saturate(round_half_even(a * inverse)) in int8, and
// a' = f32(code * (m / 127)): the steps the importer wrote as IR ops before
// this op existed, and the ops' kernels' arithmetic.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Kernels.h"

#include <algorithm>
#include <cmath>

namespace onnxc {
namespace {

const Tensor &present(const Node &node, const std::vector<const Tensor *> &operands, size_t index,
                      const char *what) {
  const Tensor *t = index < operands.size() ? operands[index] : nullptr;
  if (!t)
    fail(node.describe(), ": block-quantized matmul ", what, " is missing");
  if (!t->hasData())
    fail(node.describe(), ": block-quantized matmul ", what, " has no data (elided constant)");
  return *t;
}

/// DequantizeLinear of [K, N] weights in blocks of `block` rows.
Tensor dequantizeWeights(const Node &node, const Tensor &w, const Tensor &scale, const Tensor *zero,
                         int64_t block) {
  if (w.rank() != 2)
    fail(node.describe(), ": block-quantized matmul weights must be 2-D, got ", w.typeString());
  const int64_t k = w.dims()[0], n = w.dims()[1], blocks = (k + block - 1) / block;
  const std::vector<int64_t> parameterDims = {blocks, n};
  if (scale.dims() != parameterDims || (zero && zero->dims() != parameterDims))
    fail(node.describe(), ": block-quantized matmul scale ", scale.typeString(),
         " (and zero point) must be [", blocks, ", ", n, "] for weights ", w.typeString(),
         " in blocks of ", block);
  Tensor result(DType::F32, {k, n});
  float *out = result.data<float>();
  for (int64_t row = 0; row < k; ++row)
    for (int64_t column = 0; column < n; ++column) {
      const int64_t p = (row / block) * n + column;
      // As the DequantizeLinear kernel: exact in double, then one rounding.
      double shifted = double(w.elementAsInt64(row * n + column));
      if (zero)
        shifted -= double(zero->elementAsInt64(p));
      out[row * n + column] = float(shifted * scale.elementAsDouble(p));
    }
  return result;
}

/// A with each row's blocks quantized to int8 and read back (see above).
Tensor int8Activations(const Tensor &a, int64_t block) {
  if (a.dtype() != DType::F32 || a.rank() < 1)
    fail("block-quantized matmul: int8 activations need f32 A, got ", a.typeString());
  const int64_t k = a.dims().back(), rows = k == 0 ? 0 : a.numElements() / k;
  Tensor result(DType::F32, a.dims());
  const float *in = a.data<float>();
  float *out = result.data<float>();
  for (int64_t row = 0; row < rows; ++row)
    for (int64_t begin = 0; begin < k; begin += block) {
      const int64_t end = std::min(k, begin + block);
      float absMax = 0;
      for (int64_t i = begin; i < end; ++i)
        absMax = std::max(absMax, std::fabs(in[row * k + i]));
      const float inverse = absMax == 0.0f ? 0.0f : 127.0f / absMax;
      const float scale = absMax / 127.0f;
      for (int64_t i = begin; i < end; ++i) {
        const float scaled = in[row * k + i] * inverse;
        const float code =
            std::isnan(scaled) ? 0.0f : std::clamp(std::nearbyint(scaled), -128.0f, 127.0f);
        out[row * k + i] = float(double(code) * double(scale));
      }
    }
  return result;
}

void evalBlockQuantizedMatMul(const Node &node, const std::vector<const Tensor *> &operands,
                              std::vector<Tensor> &results) {
  const int64_t block = node.getInt("block_size", 0);
  if (block < 2)
    fail(node.describe(), ": block-quantized matmul block_size must be at least 2, got ", block);
  const Tensor &a = present(node, operands, 0, "activation");
  const Tensor &w = present(node, operands, 1, "weights");
  const Tensor &scale = present(node, operands, 2, "weight scale");
  const Tensor *zero = operands.size() > 3 && operands[3]
                           ? &present(node, operands, 3, "weight zero point")
                           : nullptr;
  if (!isFourBit(w.dtype()))
    fail(node.describe(), ": block-quantized matmul weights must be i4 or u4, got ",
         w.typeString());
  Tensor dequantized = dequantizeWeights(node, w, scale, zero, block);
  Kernel matMul = referenceKernels().kernels[unsigned(OpKind::MatMul)];
  if (node.getInt("activation_int8", 0) != 0) {
    Tensor quantized = int8Activations(a, block);
    matMul(node, {&quantized, &dequantized}, results);
    return;
  }
  matMul(node, {&a, &dequantized}, results);
}

} // namespace

void registerBlockQuantizedMatMulKernels(KernelTable &table) {
  table.add(OpKind::BlockQuantizedMatMul, evalBlockQuantizedMatMul);
}

} // namespace onnxc
