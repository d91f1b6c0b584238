//===- ir/eval/NormalizationKernels.cpp - Softmax, LayerNorm, RMSNorm -----===//
//
// All of these normalize rows: Softmax/LogSoftmax along one axis, the norms
// over the trailing axes [axis, rank). They compute in double and store in
// the output dtype, so the reference is at least as accurate as any backend.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cmath>

namespace onnxc {

namespace {

std::vector<double> toDoubles(const Tensor &t) {
  return dispatchDType(t.dtype(), [&]<DType D>() {
    using T = ElementTraits<D>;
    const auto *src = t.data<typename T::Storage>();
    std::vector<double> out(size_t(t.numElements()));
    for (size_t i = 0; i < out.size(); ++i)
      out[i] = double(T::load(src[i]));
    return out;
  });
}

Tensor fromDoubles(DType dtype, const std::vector<int64_t> &dims, const std::vector<double> &v) {
  return dispatchDType(dtype, [&]<DType D>() {
    using T = ElementTraits<D>;
    Tensor out(D, dims);
    auto *dst = out.data<typename T::Storage>();
    for (size_t i = 0; i < v.size(); ++i)
      dst[i] = T::store(typename T::Compute(v[i]));
    return out;
  });
}

/// Softmax (or LogSoftmax) along one axis, subtracting the row maximum so
/// exp never overflows.
template <bool Log>
void softmaxKernel(const Node &node, const std::vector<const Tensor *> &operands,
                   std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kFloatTypes, 0);
  int64_t axis = normalizeAxisOrFail(node, node.getInt("axis", -1), int64_t(x.rank()));
  AxisSplit split = splitAtAxis(x.dims(), axis);
  std::vector<double> v = toDoubles(x);
  // An empty softmax axis leaves rows with no elements (and no storage to
  // point into: row arithmetic on a null pointer is undefined).
  if (split.size == 0) {
    results[0] = fromDoubles(x.dtype(), x.dims(), v);
    return;
  }
  for (int64_t o = 0; o < split.outer; ++o) {
    for (int64_t in = 0; in < split.inner; ++in) {
      double *row = v.data() + o * split.size * split.inner + in;
      auto at = [&](int64_t j) -> double & { return row[j * split.inner]; };
      double maximum = -INFINITY;
      for (int64_t j = 0; j < split.size; ++j)
        maximum = std::max(maximum, at(j));
      double sum = 0;
      for (int64_t j = 0; j < split.size; ++j)
        sum += std::exp(at(j) - maximum);
      double logSum = std::log(sum);
      for (int64_t j = 0; j < split.size; ++j)
        at(j) = Log ? at(j) - maximum - logSum : std::exp(at(j) - maximum) / sum;
    }
  }
  results[0] = fromDoubles(x.dtype(), x.dims(), v);
}

/// What LayerNormalization and RMSNormalization share: X seen as rows of the
/// trailing axes [axis, rank), and the per-row statistics' shape.
struct RowLayout {
  int64_t axis = 0;
  int64_t rows = 1;
  int64_t rowSize = 1;
  std::vector<int64_t> normalizedDims; // dims [axis, rank)
  std::vector<int64_t> statDims;       // dims before axis, then 1s
};

RowLayout rowLayout(const Node &node, const Tensor &x) {
  RowLayout layout;
  int64_t rank = int64_t(x.rank());
  if (rank == 0)
    fail(node.describe(), ": ", node.opName(), " needs an input of rank at least 1");
  layout.axis = normalizeAxisOrFail(node, node.getInt("axis", -1), rank);
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = x.dims()[size_t(i)];
    if (i < layout.axis) {
      layout.rows *= d;
      layout.statDims.push_back(d);
    } else {
      layout.rowSize *= d;
      layout.normalizedDims.push_back(d);
      layout.statDims.push_back(1);
    }
  }
  return layout;
}

/// Scale or bias expanded to one value per element of a row; they must
/// broadcast (one way) to the normalized dims.
std::vector<double> expandToRow(const Node &node, const Tensor &t, const RowLayout &layout,
                                const char *what) {
  if (!dtypeIn(t.dtype(), kFloatTypes))
    fail(node.describe(), ": ", what, " must be a floating-point tensor, got ", t.typeString());
  if (!isBroadcastableTo(t.dims(), layout.normalizedDims))
    fail(node.describe(), ": ", what, " of shape ", dimsString(t.dims()),
         " does not broadcast to the normalized shape ", dimsString(layout.normalizedDims));
  std::vector<double> values = toDoubles(t);
  std::vector<double> row(size_t(layout.rowSize));
  BroadcastWalker walker(layout.normalizedDims, {t.dims()});
  for (size_t j = 0; j < row.size(); ++j, walker.next())
    row[j] = values[size_t(walker.offset(0))];
  return row;
}

DType stashType(const Node &node) {
  int64_t code = node.getInt("stash_type", 1);
  std::optional<DType> type = dtypeFromOnnxCode(code);
  if (!type || !dtypeIn(*type, kFloatTypes))
    fail(node.describe(), ": stash_type ", code, " is not a supported floating-point type");
  return *type;
}

void layerNormKernel(const Node &node, const std::vector<const Tensor *> &operands,
                     std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kFloatTypes, 0);
  RowLayout layout = rowLayout(node, x);
  std::vector<double> scale = expandToRow(node, requireOperand(node, operands, 1), layout, "scale");
  std::vector<double> bias(size_t(layout.rowSize), 0.0);
  if (operands.size() > 2 && operands[2])
    bias = expandToRow(node, *operands[2], layout, "bias");
  double epsilon = node.getFloat("epsilon", 1e-5f);
  DType statType = stashType(node);

  std::vector<double> v = toDoubles(x);
  std::vector<double> means(size_t(layout.rows)), invStdDevs(size_t(layout.rows));
  for (int64_t r = 0; r < layout.rows; ++r) {
    double *row = v.data() + r * layout.rowSize;
    double sum = 0;
    for (int64_t j = 0; j < layout.rowSize; ++j)
      sum += row[j];
    double mean = sum / double(layout.rowSize);
    double squares = 0;
    for (int64_t j = 0; j < layout.rowSize; ++j)
      squares += (row[j] - mean) * (row[j] - mean);
    double invStdDev = 1.0 / std::sqrt(squares / double(layout.rowSize) + epsilon);
    for (int64_t j = 0; j < layout.rowSize; ++j)
      row[j] = (row[j] - mean) * invStdDev * scale[size_t(j)] + bias[size_t(j)];
    means[size_t(r)] = mean;
    invStdDevs[size_t(r)] = invStdDev;
  }
  results[0] = fromDoubles(x.dtype(), x.dims(), v);
  if (results.size() > 1)
    results[1] = fromDoubles(statType, layout.statDims, means);
  if (results.size() > 2)
    results[2] = fromDoubles(statType, layout.statDims, invStdDevs);
}

/// RMSNormalization (opset 23): X / sqrt(mean(X^2) + epsilon) * scale.
void rmsNormKernel(const Node &node, const std::vector<const Tensor *> &operands,
                   std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kFloatTypes, 0);
  RowLayout layout = rowLayout(node, x);
  std::vector<double> scale = expandToRow(node, requireOperand(node, operands, 1), layout, "scale");
  double epsilon = node.getFloat("epsilon", 1e-5f);
  stashType(node); // validated only: the reference always computes in double

  std::vector<double> v = toDoubles(x);
  for (int64_t r = 0; r < layout.rows; ++r) {
    double *row = v.data() + r * layout.rowSize;
    double squares = 0;
    for (int64_t j = 0; j < layout.rowSize; ++j)
      squares += row[j] * row[j];
    double invRms = 1.0 / std::sqrt(squares / double(layout.rowSize) + epsilon);
    for (int64_t j = 0; j < layout.rowSize; ++j)
      row[j] = row[j] * invRms * scale[size_t(j)];
  }
  results[0] = fromDoubles(x.dtype(), x.dims(), v);
}

/// SkipLayerNormalization (onnxc): y = LayerNorm(x + skip), the sum rounded
/// to x's type first as the unfused Add would; the optional second result
/// is that sum.
void skipLayerNormKernel(const Node &node, const std::vector<const Tensor *> &operands,
                         std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  const Tensor &skip = requireOperand(node, operands, 1);
  requireDType(node, x, kFloatTypes, 0);
  if (skip.dtype() != x.dtype() || skip.dims() != x.dims())
    fail(node.describe(), ": skip ", skip.typeString(), " differs from the input ", x.typeString(),
         " (SkipLayerNormalization does not broadcast)");
  int64_t axis = node.getInt("axis", -1);
  if (x.rank() > 0 && axis != -1 && axis != int64_t(x.rank()) - 1)
    fail(node.describe(), ": SkipLayerNormalization normalizes the last axis only, got axis ",
         axis);
  std::vector<double> sum = toDoubles(x), addend = toDoubles(skip);
  for (size_t i = 0; i < sum.size(); ++i)
    sum[i] += addend[i];
  Tensor rounded = fromDoubles(x.dtype(), x.dims(), sum);
  std::vector<const Tensor *> normOperands = {&rounded, &requireOperand(node, operands, 2),
                                              operands.size() > 3 ? operands[3] : nullptr};
  std::vector<Tensor> normResults(1);
  layerNormKernel(node, normOperands, normResults);
  results[0] = std::move(normResults[0]);
  if (results.size() > 1)
    results[1] = std::move(rounded);
}

} // namespace

void registerNormalizationKernels(KernelTable &table) {
  table.add(OpKind::Softmax, softmaxKernel<false>);
  table.add(OpKind::LogSoftmax, softmaxKernel<true>);
  table.add(OpKind::LayerNormalization, layerNormKernel);
  table.add(OpKind::RMSNormalization, rmsNormKernel);
  table.add(OpKind::SkipLayerNormalization, skipLayerNormKernel);
}

} // namespace onnxc
