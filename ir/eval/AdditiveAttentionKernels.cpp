//===- ir/eval/AdditiveAttentionKernels.cpp - AdditiveAttention -----------===//
//
// onnxc's AdditiveAttention, computed the plain way in double:
//
//   s[b,i,j] = sum_c score[c] * tanh(query[b,i,c] + key[b,j,c])
//   s = mask ? s : mask_fill  (bool mask)   or   s + mask  (float mask)
//   y[b,i,:] = sum_j softmax_j(s[b,i,:]) * value[b,j,:]
//
// The softmax is the Softmax kernel's (subtract the row max, exp, divide by
// the sum), so a row whose scores are all -inf gives NaN and a row hiding
// every key behind a finite fill gives the mean of the values, exactly as
// the unfused graph this op replaces.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <array>
#include <cmath>
#include <limits>

namespace onnxc {
namespace {

std::vector<double> readDoubles(const Node &node, const Tensor &t, size_t index) {
  if (!t.hasData())
    fail(node.describe(), ": operand ", index, " has no data (elided constant)");
  std::vector<double> out(size_t(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i)
    out[size_t(i)] = t.elementAsDouble(i);
  return out;
}

/// Element strides of a mask right-aligned to [batch, qSeq, kSeq]: 0 on
/// its axes of extent 1 (and the missing ones), which broadcast.
std::array<int64_t, 3> maskStrides(const Node &node, const Tensor &mask,
                                   const std::array<int64_t, 3> &extents) {
  if (mask.rank() == 0 || mask.rank() > 3)
    fail(node.describe(), ": additive attention mask must have rank 1 to 3, got ",
         mask.typeString());
  std::array<int64_t, 3> strides{0, 0, 0};
  int64_t stride = 1;
  for (size_t axis = 3; axis-- > 3 - mask.rank();) {
    int64_t extent = mask.dims()[axis - (3 - mask.rank())];
    if (extent != 1 && extent != extents[axis])
      fail(node.describe(), ": additive attention mask of shape ", mask.typeString(),
           " does not broadcast to [", extents[0], ", ", extents[1], ", ", extents[2], "]");
    strides[axis] = extent == 1 ? 0 : stride;
    stride *= extent;
  }
  return strides;
}

void additiveAttentionKernel(const Node &node, const std::vector<const Tensor *> &operands,
                             std::vector<Tensor> &results) {
  const Tensor &query = requireOperand(node, operands, 0);
  const Tensor &key = requireOperand(node, operands, 1);
  const Tensor &value = requireOperand(node, operands, 2);
  const Tensor &score = requireOperand(node, operands, 3);
  const Tensor *mask = operands.size() > 4 ? operands[4] : nullptr;
  requireDType(node, query, kFloatTypes, 0);
  if (key.dtype() != query.dtype() || value.dtype() != query.dtype() ||
      score.dtype() != query.dtype())
    fail(node.describe(), ": additive attention operands must share one floating type, got ",
         query.typeString(), ", ", key.typeString(), ", ", value.typeString(), ", ",
         score.typeString());
  const std::vector<int64_t> &qd = query.dims(), &kd = key.dims(), &vd = value.dims();
  if (query.rank() != 3 || key.rank() != 3 || value.rank() != 3 || score.rank() != 1 ||
      kd[0] != qd[0] || vd[0] != qd[0] || kd[1] != vd[1] || kd[2] != qd[2] ||
      score.dims()[0] != qd[2])
    fail(node.describe(), ": additive attention shapes do not agree: query ", query.typeString(),
         ", key ", key.typeString(), ", value ", value.typeString(), ", score ",
         score.typeString());
  const int64_t batch = qd[0], qSeq = qd[1], size = qd[2], kSeq = kd[1], vSize = vd[2];

  std::array<int64_t, 3> strides{};
  std::vector<double> maskValues;
  bool boolMask = false;
  if (mask) {
    if (mask->dtype() != DType::Bool && mask->dtype() != query.dtype())
      fail(node.describe(), ": additive attention mask must be bool or ", dtypeName(query.dtype()),
           ", got ", mask->typeString());
    boolMask = mask->dtype() == DType::Bool;
    strides = maskStrides(node, *mask, {batch, qSeq, kSeq});
    maskValues = readDoubles(node, *mask, 4);
  }
  const double fill = node.getFloat("mask_fill", -std::numeric_limits<float>::infinity());

  std::vector<double> q = readDoubles(node, query, 0), k = readDoubles(node, key, 1),
                      v = readDoubles(node, value, 2), w = readDoubles(node, score, 3);
  std::vector<double> y(size_t(batch * qSeq * vSize), 0.0);
  std::vector<double> row(static_cast<size_t>(kSeq));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < qSeq; ++i) {
      const double *qRow = q.data() + (b * qSeq + i) * size;
      double maximum = -INFINITY;
      for (int64_t j = 0; j < kSeq; ++j) {
        const double *kRow = k.data() + (b * kSeq + j) * size;
        double s = 0;
        for (int64_t c = 0; c < size; ++c)
          s += w[size_t(c)] * std::tanh(qRow[c] + kRow[c]);
        if (mask) {
          double m = maskValues[size_t(b * strides[0] + i * strides[1] + j * strides[2])];
          s = boolMask ? (m != 0.0 ? s : fill) : s + m;
        }
        row[size_t(j)] = s;
        maximum = std::max(maximum, s);
      }
      double sum = 0;
      for (double &s : row)
        sum += (s = std::exp(s - maximum));
      double *yRow = y.data() + (b * qSeq + i) * vSize;
      for (int64_t j = 0; j < kSeq; ++j) {
        double p = row[size_t(j)] / sum;
        const double *vRow = v.data() + (b * kSeq + j) * vSize;
        for (int64_t c = 0; c < vSize; ++c)
          yRow[c] += p * vRow[c];
      }
    }
  Tensor out(query.dtype(), {batch, qSeq, vSize});
  for (size_t i = 0; i < y.size(); ++i)
    out.setElementFromDouble(int64_t(i), y[i]);
  results[0] = std::move(out);
}

} // namespace

void registerAdditiveAttentionKernels(KernelTable &table) {
  table.add(OpKind::AdditiveAttention, additiveAttentionKernel);
}

} // namespace onnxc
