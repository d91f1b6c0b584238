//===- ir/eval/LinearAlgebraKernels.cpp - MatMul, Gemm, Einsum kernels ----===//
//
// Reference kernels: floating types accumulate in double, integer types in
// wrapping 64-bit arithmetic (what a C++ integer GEMM computes), so results
// do not depend on summation precision.
//
//===----------------------------------------------------------------------===//
#include "ir/eval/Kernels.h"

#include "ir/Error.h"
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include <algorithm>
#include <type_traits>

namespace onnxc {
namespace {

const Tensor &requireTensor(const Node &node, const std::vector<const Tensor *> &operands,
                            size_t index, const char *what) {
  if (index >= operands.size() || !operands[index])
    fail(node.describe(), ": missing operand ", what);
  if (!operands[index]->hasData())
    fail(node.describe(), ": operand ", what, " has no data (elided constant)");
  return *operands[index];
}

void requireNumeric(const Node &node, const Tensor &t, const char *what) {
  if (!isFloat(t.dtype()) && !isInteger(t.dtype()))
    fail(node.describe(), ": operand ", what, " of type ", dtypeName(t.dtype()),
         " is not supported");
}

void requireSameType(const Node &node, const Tensor &a, const Tensor &b) {
  if (a.dtype() != b.dtype())
    fail(node.describe(), ": operands have different element types ", dtypeName(a.dtype()), " and ",
         dtypeName(b.dtype()));
}

std::string dimsString(const std::vector<int64_t> &dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + "]";
}

template <typename Acc> std::vector<Acc> load(const Tensor &t) {
  std::vector<Acc> out(size_t(t.numElements()));
  for (int64_t i = 0; i < t.numElements(); ++i) {
    if constexpr (std::is_same_v<Acc, double>)
      out[size_t(i)] = t.elementAsDouble(i);
    else
      out[size_t(i)] = t.elementAsInt64(i);
  }
  return out;
}

void storeInteger(Tensor &t, int64_t i, int64_t v) {
  switch (t.dtype()) {
  case DType::I8:
    t.data<int8_t>()[i] = int8_t(v);
    return;
  case DType::U8:
    t.data<uint8_t>()[i] = uint8_t(v);
    return;
  case DType::I16:
    t.data<int16_t>()[i] = int16_t(v);
    return;
  case DType::U16:
    t.data<uint16_t>()[i] = uint16_t(v);
    return;
  case DType::I32:
    t.data<int32_t>()[i] = int32_t(v);
    return;
  case DType::U32:
    t.data<uint32_t>()[i] = uint32_t(v);
    return;
  case DType::I64:
    t.data<int64_t>()[i] = v;
    return;
  case DType::U64:
    t.data<uint64_t>()[i] = uint64_t(v);
    return;
  default:
    t.setElementFromDouble(i, double(v));
    return;
  }
}

template <typename Acc> void store(Tensor &t, const std::vector<Acc> &values) {
  for (size_t i = 0; i < values.size(); ++i) {
    if constexpr (std::is_same_v<Acc, double>)
      t.setElementFromDouble(int64_t(i), values[i]);
    else
      storeInteger(t, int64_t(i), values[i]);
  }
}

inline double multiplyAdd(double acc, double a, double b) { return acc + a * b; }
inline int64_t multiplyAdd(int64_t acc, int64_t a, int64_t b) {
  return int64_t(uint64_t(acc) + uint64_t(a) * uint64_t(b));
}

/// Row-major strides of `dims`.
std::vector<int64_t> stridesOf(const std::vector<int64_t> &dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// --- MatMul ------------------------------------------------------------------

struct MatMulPlan {
  std::vector<int64_t> batchDims, aBatchStrides, bBatchStrides; // strides 0 when broadcast
  int64_t m = 1, k = 1, n = 1;
  std::vector<int64_t> resultDims;
};

MatMulPlan planMatMul(const Node &node, const Tensor &a, const Tensor &b) {
  if (a.rank() == 0 || b.rank() == 0)
    fail(node.describe(), ": matmul operands must have rank >= 1, got ", a.typeString(), " and ",
         b.typeString());
  // 1-D operands are promoted to matrices; their unit dim is dropped after.
  std::vector<int64_t> aDims = a.dims(), bDims = b.dims();
  if (a.rank() == 1)
    aDims.insert(aDims.begin(), 1);
  if (b.rank() == 1)
    bDims.push_back(1);
  MatMulPlan plan;
  plan.m = aDims[aDims.size() - 2];
  plan.k = aDims.back();
  plan.n = bDims.back();
  if (bDims[bDims.size() - 2] != plan.k)
    fail(node.describe(), ": matmul contraction dimension mismatch: ", plan.k, " vs ",
         bDims[bDims.size() - 2], " (shapes ", dimsString(a.dims()), " and ", dimsString(b.dims()),
         ")");
  size_t aBatch = aDims.size() - 2, bBatch = bDims.size() - 2;
  size_t batchRank = std::max(aBatch, bBatch);
  int64_t aStride = plan.m * plan.k, bStride = plan.k * plan.n;
  plan.batchDims.assign(batchRank, 1);
  plan.aBatchStrides.assign(batchRank, 0);
  plan.bBatchStrides.assign(batchRank, 0);
  for (size_t i = batchRank; i-- > 0;) {
    int64_t da = i + aBatch >= batchRank ? aDims[i + aBatch - batchRank] : 1;
    int64_t db = i + bBatch >= batchRank ? bDims[i + bBatch - batchRank] : 1;
    if (da != db && da != 1 && db != 1)
      fail(node.describe(), ": cannot broadcast matmul batch dims ", da, " and ", db, " (shapes ",
           dimsString(a.dims()), " and ", dimsString(b.dims()), ")");
    plan.batchDims[i] = std::max(da, db);
    if (da == 0 || db == 0)
      plan.batchDims[i] = 0;
    plan.aBatchStrides[i] = da == 1 ? 0 : aStride;
    plan.bBatchStrides[i] = db == 1 ? 0 : bStride;
    aStride *= da;
    bStride *= db;
  }
  plan.resultDims = plan.batchDims;
  if (a.rank() >= 2)
    plan.resultDims.push_back(plan.m);
  if (b.rank() >= 2)
    plan.resultDims.push_back(plan.n);
  return plan;
}

template <typename Acc>
void runMatMul(const MatMulPlan &plan, const Tensor &a, const Tensor &b, Tensor &result) {
  std::vector<Acc> av = load<Acc>(a), bv = load<Acc>(b);
  int64_t batches = 1;
  for (int64_t d : plan.batchDims)
    batches *= d;
  std::vector<Acc> out(size_t(batches * plan.m * plan.n), Acc(0));
  for (int64_t batch = 0; batch < batches; ++batch) {
    int64_t aOffset = 0, bOffset = 0, rest = batch;
    for (size_t i = plan.batchDims.size(); i-- > 0;) {
      int64_t index = rest % plan.batchDims[i];
      rest /= plan.batchDims[i];
      aOffset += index * plan.aBatchStrides[i];
      bOffset += index * plan.bBatchStrides[i];
    }
    Acc *o = out.data() + batch * plan.m * plan.n;
    for (int64_t i = 0; i < plan.m; ++i)
      for (int64_t j = 0; j < plan.n; ++j) {
        Acc sum = Acc(0);
        for (int64_t p = 0; p < plan.k; ++p)
          sum = multiplyAdd(sum, av[size_t(aOffset + i * plan.k + p)],
                            bv[size_t(bOffset + p * plan.n + j)]);
        o[i * plan.n + j] = sum;
      }
  }
  store(result, out);
}

void matMulKernel(const Node &node, const std::vector<const Tensor *> &operands,
                  std::vector<Tensor> &results) {
  const Tensor &a = requireTensor(node, operands, 0, "A");
  const Tensor &b = requireTensor(node, operands, 1, "B");
  requireNumeric(node, a, "A");
  requireSameType(node, a, b);
  MatMulPlan plan = planMatMul(node, a, b);
  results[0] = Tensor(a.dtype(), plan.resultDims);
  if (isFloat(a.dtype()))
    runMatMul<double>(plan, a, b, results[0]);
  else
    runMatMul<int64_t>(plan, a, b, results[0]);
}

// --- Gemm --------------------------------------------------------------------

void gemmKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  const Tensor &a = requireTensor(node, operands, 0, "A");
  const Tensor &b = requireTensor(node, operands, 1, "B");
  requireNumeric(node, a, "A");
  requireSameType(node, a, b);
  if (a.rank() != 2 || b.rank() != 2)
    fail(node.describe(), ": gemm operands must be matrices, got ", a.typeString(), " and ",
         b.typeString());
  bool transA = node.getInt("transA", 0) != 0, transB = node.getInt("transB", 0) != 0;
  double alpha = node.getFloat("alpha", 1.0f), beta = node.getFloat("beta", 1.0f);
  int64_t m = a.dims()[transA ? 1 : 0], k = a.dims()[transA ? 0 : 1];
  int64_t kB = b.dims()[transB ? 1 : 0], n = b.dims()[transB ? 0 : 1];
  if (k != kB)
    fail(node.describe(), ": gemm contraction dimension mismatch: ", k, " vs ", kB, " (shapes ",
         dimsString(a.dims()), " and ", dimsString(b.dims()), ")");

  // C broadcasts one way to [m, n]: a missing or unit dim repeats.
  const Tensor *c = operands.size() > 2 ? operands[2] : nullptr;
  int64_t cRows = 1, cCols = 1;
  if (c) {
    c = &requireTensor(node, operands, 2, "C");
    requireSameType(node, a, *c);
    std::vector<int64_t> cd = c->dims();
    if (cd.size() > 2)
      fail(node.describe(), ": gemm bias C must have rank <= 2, got ", c->typeString());
    cd.insert(cd.begin(), 2 - cd.size(), 1);
    cRows = cd[0];
    cCols = cd[1];
    if ((cRows != 1 && cRows != m) || (cCols != 1 && cCols != n))
      fail(node.describe(), ": gemm bias C of shape ", dimsString(c->dims()),
           " does not broadcast to [", m, ", ", n, "]");
  }
  std::vector<double> av = load<double>(a), bv = load<double>(b);
  std::vector<double> cv = c ? load<double>(*c) : std::vector<double>();
  std::vector<double> out(size_t(m * n));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t p = 0; p < k; ++p) {
        double x = av[size_t(transA ? p * m + i : i * k + p)];
        double y = bv[size_t(transB ? j * k + p : p * n + j)];
        sum += x * y;
      }
      double bias = c ? cv[size_t((cRows == 1 ? 0 : i) * cCols + (cCols == 1 ? 0 : j))] : 0.0;
      out[size_t(i * n + j)] = alpha * sum + (c ? beta * bias : 0.0);
    }
  results[0] = Tensor(a.dtype(), {m, n});
  store(results[0], out);
}

// --- Einsum ------------------------------------------------------------------

/// The size of every label, checked across operands: letters agree exactly,
/// ellipsis axes broadcast (1 against n).
std::vector<int64_t> einsumLabelSizes(const Node &node, const EinsumSpec &spec,
                                      const std::vector<const Tensor *> &tensors) {
  std::vector<int64_t> sizes(size_t(spec.numLabels()), -1);
  for (size_t op = 0; op < tensors.size(); ++op)
    for (size_t axis = 0; axis < tensors[op]->rank(); ++axis) {
      int label = spec.inputLabels[op][axis];
      int64_t dim = tensors[op]->dims()[axis];
      int64_t &size = sizes[size_t(label)];
      bool broadcastable = label >= EinsumSpec::kFirstEllipsisLabel && (size == 1 || dim == 1);
      if (size < 0 || (broadcastable && size == 1))
        size = dim;
      else if (size != dim && !broadcastable)
        fail(node.describe(), ": einsum dimension of '", einsumLabelName(label),
             "' mismatch: ", size, " vs ", dim, " (operand ", op, " has shape ",
             dimsString(tensors[op]->dims()), ")");
    }
  return sizes;
}

template <typename Acc>
void runEinsum(const EinsumSpec &spec, const std::vector<int64_t> &sizes,
               const std::vector<const Tensor *> &tensors, Tensor &result) {
  // Per operand and label, the summed stride of the axes carrying it (a
  // repeated label walks the diagonal; a broadcast axis has stride 0).
  size_t numLabels = sizes.size();
  std::vector<std::vector<int64_t>> labelStrides;
  std::vector<std::vector<Acc>> values;
  for (size_t op = 0; op < tensors.size(); ++op) {
    std::vector<int64_t> strides = stridesOf(tensors[op]->dims());
    std::vector<int64_t> perLabel(numLabels, 0);
    for (size_t axis = 0; axis < tensors[op]->rank(); ++axis)
      if (tensors[op]->dims()[axis] != 1)
        perLabel[size_t(spec.inputLabels[op][axis])] += strides[axis];
    labelStrides.push_back(std::move(perLabel));
    values.push_back(load<Acc>(*tensors[op]));
  }
  std::vector<int64_t> outStrides(numLabels, 0);
  std::vector<int64_t> axisStrides = stridesOf(result.dims());
  for (size_t axis = 0; axis < spec.outputLabels.size(); ++axis)
    outStrides[size_t(spec.outputLabels[axis])] = axisStrides[axis];

  std::vector<int> loopLabels;
  for (size_t label = 0; label < numLabels; ++label)
    if (sizes[label] >= 0)
      loopLabels.push_back(int(label));
  std::vector<Acc> out(size_t(result.numElements()), Acc(0));
  for (int label : loopLabels)
    if (sizes[size_t(label)] == 0)
      return store(result, out);

  std::vector<int64_t> index(numLabels, 0);
  while (true) {
    Acc product = Acc(1);
    for (size_t op = 0; op < tensors.size(); ++op) {
      int64_t offset = 0;
      for (int label : loopLabels)
        offset += index[size_t(label)] * labelStrides[op][size_t(label)];
      product = multiplyAdd(Acc(0), product, values[op][size_t(offset)]);
    }
    int64_t outOffset = 0;
    for (int label : loopLabels)
      outOffset += index[size_t(label)] * outStrides[size_t(label)];
    out[size_t(outOffset)] = multiplyAdd(out[size_t(outOffset)], product, Acc(1));
    // Odometer step over every label in use.
    size_t i = loopLabels.size();
    while (i > 0) {
      size_t label = size_t(loopLabels[i - 1]);
      if (++index[label] < sizes[label])
        break;
      index[label] = 0;
      --i;
    }
    if (i == 0)
      break;
  }
  store(result, out);
}

void einsumKernel(const Node &node, const std::vector<const Tensor *> &operands,
                  std::vector<Tensor> &results) {
  if (operands.empty())
    fail(node.describe(), ": einsum needs at least one operand");
  std::vector<const Tensor *> tensors;
  std::vector<size_t> ranks;
  for (size_t i = 0; i < operands.size(); ++i) {
    tensors.push_back(&requireTensor(node, operands, i, "of einsum"));
    requireNumeric(node, *tensors.back(), "of einsum");
    requireSameType(node, *tensors.front(), *tensors.back());
    ranks.push_back(tensors.back()->rank());
  }
  const Attribute *equation = node.findAttr("equation");
  if (!equation || equation->kind() != Attribute::Kind::String)
    fail(node.describe(), ": einsum needs a string attribute 'equation'");
  EinsumSpec spec = parseEinsumEquation(node, equation->asString(), ranks);
  std::vector<int64_t> sizes = einsumLabelSizes(node, spec, tensors);
  std::vector<int64_t> resultDims;
  for (int label : spec.outputLabels)
    resultDims.push_back(sizes[size_t(label)]);
  results[0] = Tensor(tensors[0]->dtype(), resultDims);
  if (isFloat(tensors[0]->dtype()))
    runEinsum<double>(spec, sizes, tensors, results[0]);
  else
    runEinsum<int64_t>(spec, sizes, tensors, results[0]);
}

} // namespace

void registerLinearAlgebraKernels(KernelTable &table) {
  table.add(OpKind::MatMul, matMulKernel);
  table.add(OpKind::Gemm, gemmKernel);
  table.add(OpKind::Einsum, einsumKernel);
}

} // namespace onnxc
