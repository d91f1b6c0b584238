//===- ir/eval/ReductionKernels.cpp - Reduce*, ArgMax/ArgMin, CumSum/Prod -===//
//
// Reductions accumulate floats in double, signed integers in int64 and
// unsigned integers in uint64 (wrapping, as the integer elementwise ops do),
// then store in the input dtype. ReduceL1 sums |x| and ReduceSumSquare x*x
// (both wrapping for integers); ReduceL2 is the square root of that sum and
// ReduceLogSumExp max + log(sum(exp(x - max))), so large inputs do not
// overflow; both compute in double and store integers saturated, as Cast
// does.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace onnxc {

namespace {

template <DType D> using StorageOf = typename ElementTraits<D>::Storage;

/// The accumulator type of a dtype's compute type.
template <typename C>
using AccumulatorOf = std::conditional_t<
    std::is_floating_point_v<C>, double,
    std::conditional_t<std::is_signed_v<C> && !std::is_same_v<C, bool>, int64_t, uint64_t>>;

enum class ReduceKind { Sum, Mean, Prod, Max, Min, L1, L2, SumSquare };

/// Which axes a Reduce* node reduces, from its optional axes operand.
struct ReducePlan {
  bool identity = false;           // noop_with_empty_axes with no axes
  std::vector<int64_t> keptDims;   // input dims with reduced axes set to 1
  std::vector<int64_t> resultDims; // keptDims, or without reduced axes if !keepdims
  int64_t groupSize = 1;           // elements folded into one result
};

std::vector<int64_t> readAxes(const Node &node, const Tensor &axes, const char *what) {
  if (!dtypeIn(axes.dtype(), kIntTypes) || axes.rank() > 1)
    fail(node.describe(), ": ", what, " must be a 0-D or 1-D integer tensor, got ",
         axes.typeString());
  return axes.toInt64Vector();
}

ReducePlan planReduction(const Node &node, const Tensor &x, const Tensor *axesTensor) {
  int64_t rank = int64_t(x.rank());
  std::vector<int64_t> axes;
  if (axesTensor)
    axes = readAxes(node, *axesTensor, "axes");
  ReducePlan plan;
  std::vector<bool> reduced(size_t(rank), false);
  if (axes.empty()) {
    if (node.getInt("noop_with_empty_axes", 0) != 0) {
      plan.identity = true;
      return plan;
    }
    std::fill(reduced.begin(), reduced.end(), true);
  }
  for (int64_t axis : axes) {
    int64_t a = normalizeAxisOrFail(node, axis, rank);
    if (reduced[size_t(a)])
      fail(node.describe(), ": axis ", axis, " is listed twice");
    reduced[size_t(a)] = true;
  }
  bool keepDims = node.getInt("keepdims", 1) != 0;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t d = x.dims()[size_t(i)];
    plan.keptDims.push_back(reduced[size_t(i)] ? 1 : d);
    if (reduced[size_t(i)])
      plan.groupSize *= d;
    if (!reduced[size_t(i)] || keepDims)
      plan.resultDims.push_back(reduced[size_t(i)] ? 1 : d);
  }
  return plan;
}

/// The identity of each reduction, as accumulator A for elements computed
/// in C. Max/Min of an empty set give -inf/+inf, or the lowest/highest C for
/// integers (as ONNX specifies since opset 18): C's limits, not A's, which
/// is wider and would wrap to 0 or -1 when stored back.
template <typename A, typename C> A reduceInit(ReduceKind kind) {
  constexpr bool isFloat = std::is_floating_point_v<A>;
  switch (kind) {
  case ReduceKind::Prod:
    return A(1);
  case ReduceKind::Max:
    if constexpr (isFloat)
      return -std::numeric_limits<A>::infinity();
    else
      return A(std::numeric_limits<C>::lowest());
  case ReduceKind::Min:
    if constexpr (isFloat)
      return std::numeric_limits<A>::infinity();
    else
      return A(std::numeric_limits<C>::max());
  default:
    return A(0);
  }
}

/// What an element contributes to its accumulator: |v| for L1, v*v for L2
/// and SumSquare (wrapping for integers, as their sums do), else v.
template <typename A> A reduceInput(ReduceKind kind, A v) {
  switch (kind) {
  case ReduceKind::L1:
    if constexpr (std::is_unsigned_v<A>)
      return v;
    else if constexpr (std::is_integral_v<A>)
      return v < 0 ? A(uint64_t(0) - uint64_t(v)) : v;
    else
      return std::fabs(v);
  case ReduceKind::L2:
  case ReduceKind::SumSquare:
    if constexpr (std::is_integral_v<A>)
      return A(uint64_t(v) * uint64_t(v));
    else
      return v * v;
  default:
    return v;
  }
}

/// A double result stored as dtype D: integers truncate toward zero, NaN
/// gives 0 and out-of-range values saturate (the evaluator's Cast rule).
template <DType D> typename ElementTraits<D>::Storage storeFromDouble(double v) {
  using T = ElementTraits<D>;
  using C = typename T::Compute;
  if constexpr (std::is_floating_point_v<C>) {
    return T::store(C(v));
  } else {
    if (std::isnan(v))
      return T::store(C(0));
    if (v <= double(std::numeric_limits<C>::lowest()))
      return T::store(std::numeric_limits<C>::lowest());
    if (v >= double(std::numeric_limits<C>::max()))
      return T::store(std::numeric_limits<C>::max());
    return T::store(C(v));
  }
}

template <typename A> A reduceStep(ReduceKind kind, A acc, A v) {
  if constexpr (std::is_floating_point_v<A>) {
    if ((kind == ReduceKind::Max || kind == ReduceKind::Min) && (std::isnan(acc) || std::isnan(v)))
      return std::numeric_limits<A>::quiet_NaN();
  }
  switch (kind) {
  case ReduceKind::Sum:
  case ReduceKind::Mean:
  case ReduceKind::L1:
  case ReduceKind::L2:
  case ReduceKind::SumSquare:
    if constexpr (std::is_integral_v<A>)
      return A(uint64_t(acc) + uint64_t(v));
    else
      return acc + v;
  case ReduceKind::Prod:
    if constexpr (std::is_integral_v<A>)
      return A(uint64_t(acc) * uint64_t(v));
    else
      return acc * v;
  case ReduceKind::Max:
    return v > acc ? v : acc;
  case ReduceKind::Min:
    return v < acc ? v : acc;
  }
  return acc;
}

template <ReduceKind Kind>
void reduceKernel(const Node &node, const std::vector<const Tensor *> &operands,
                  std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  // Max/Min also take bool (opset 20); arithmetic reductions do not.
  unsigned types = (Kind == ReduceKind::Max || Kind == ReduceKind::Min) ? kAllTypes : kNumericTypes;
  requireDType(node, x, types, 0);
  ReducePlan plan = planReduction(node, x, operands.size() > 1 ? operands[1] : nullptr);
  if (plan.identity) {
    results[0] = x.clone();
    return;
  }
  dispatchDType(x.dtype(), [&]<DType D>() {
    using T = ElementTraits<D>;
    using A = AccumulatorOf<typename T::Compute>;
    Tensor out(D, plan.resultDims);
    std::vector<A> acc(size_t(out.numElements()), reduceInit<A, typename T::Compute>(Kind));
    const StorageOf<D> *src = x.data<StorageOf<D>>();
    BroadcastWalker walker(x.dims(), {plan.keptDims});
    for (int64_t i = 0, n = x.numElements(); i < n; ++i, walker.next()) {
      A &slot = acc[size_t(walker.offset(0))];
      slot = reduceStep<A>(Kind, slot, reduceInput<A>(Kind, A(T::load(src[i]))));
    }
    StorageOf<D> *dst = out.data<StorageOf<D>>();
    for (size_t i = 0; i < acc.size(); ++i) {
      A value = acc[i];
      if (Kind == ReduceKind::L2) {
        // An integer sum of squares is read as unsigned: it wrapped if negative.
        if constexpr (std::is_integral_v<A>)
          dst[i] = storeFromDouble<D>(std::sqrt(double(uint64_t(value))));
        else
          dst[i] = storeFromDouble<D>(std::sqrt(double(value)));
        continue;
      }
      if (Kind == ReduceKind::Mean) {
        if constexpr (std::is_floating_point_v<A>)
          value = value / A(plan.groupSize); // 0/0 = NaN for an empty group, as numpy
        else if constexpr (std::is_signed_v<A>)
          value = plan.groupSize ? value / plan.groupSize : 0;
        else
          value = plan.groupSize ? value / uint64_t(plan.groupSize) : 0;
      }
      dst[i] = T::store(typename T::Compute(value));
    }
    results[0] = std::move(out);
  });
}

/// ReduceLogSumExp: per result, the maximum m of its group, then
/// m + log(sum(exp(x - m))). A group whose maximum is not finite gives that
/// maximum (-inf for an empty group or all -inf, +inf, NaN).
void logSumExpKernel(const Node &node, const std::vector<const Tensor *> &operands,
                     std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kNumericTypes, 0);
  ReducePlan plan = planReduction(node, x, operands.size() > 1 ? operands[1] : nullptr);
  if (plan.identity) {
    results[0] = x.clone();
    return;
  }
  dispatchDType(x.dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, kNumericTypes)) {
      using T = ElementTraits<D>;
      Tensor out(D, plan.resultDims);
      size_t count = size_t(out.numElements());
      std::vector<double> maxima(count, -std::numeric_limits<double>::infinity());
      std::vector<double> sums(count, 0.0);
      const StorageOf<D> *src = x.data<StorageOf<D>>();
      int64_t n = x.numElements();
      BroadcastWalker first(x.dims(), {plan.keptDims});
      for (int64_t i = 0; i < n; ++i, first.next()) {
        double &slot = maxima[size_t(first.offset(0))];
        slot = reduceStep<double>(ReduceKind::Max, slot, double(T::load(src[i])));
      }
      BroadcastWalker second(x.dims(), {plan.keptDims});
      for (int64_t i = 0; i < n; ++i, second.next()) {
        size_t o = size_t(second.offset(0));
        if (std::isfinite(maxima[o]))
          sums[o] += std::exp(double(T::load(src[i])) - maxima[o]);
      }
      StorageOf<D> *dst = out.data<StorageOf<D>>();
      for (size_t i = 0; i < count; ++i)
        dst[i] = storeFromDouble<D>(std::isfinite(maxima[i]) ? maxima[i] + std::log(sums[i])
                                                             : maxima[i]);
      results[0] = std::move(out);
    }
  });
}

/// ArgMax (IsMax) / ArgMin along one axis. NaN counts as the extreme value,
/// so the first NaN wins (the last with select_last_index), as in numpy.
template <bool IsMax>
void argKernel(const Node &node, const std::vector<const Tensor *> &operands,
               std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kNumericTypes, 0);
  if (x.rank() == 0)
    fail(node.describe(), ": ", node.opName(), " needs an input of rank at least 1");
  int64_t axis = normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(x.rank()));
  bool keepDims = node.getInt("keepdims", 1) != 0;
  bool selectLast = node.getInt("select_last_index", 0) != 0;
  AxisSplit split = splitAtAxis(x.dims(), axis);
  if (split.size == 0)
    fail(node.describe(), ": ", node.opName(), " over an empty axis");
  std::vector<int64_t> outDims = x.dims();
  if (keepDims)
    outDims[size_t(axis)] = 1;
  else
    outDims.erase(outDims.begin() + axis);
  Tensor out(DType::I64, outDims);
  int64_t *dst = out.data<int64_t>();
  dispatchDType(x.dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, kNumericTypes)) {
      using T = ElementTraits<D>;
      using C = typename T::Compute;
      auto isNaN = [](C v) {
        if constexpr (std::is_floating_point_v<C>)
          return std::isnan(v);
        else
          return false;
      };
      const StorageOf<D> *src = x.data<StorageOf<D>>();
      for (int64_t o = 0; o < split.outer; ++o) {
        for (int64_t in = 0; in < split.inner; ++in) {
          const StorageOf<D> *row = src + o * split.size * split.inner + in;
          C best = T::load(row[0]);
          int64_t bestIndex = 0;
          for (int64_t j = 1; j < split.size; ++j) {
            C v = T::load(row[j * split.inner]);
            bool same = v == best || (isNaN(v) && isNaN(best));
            bool better = !isNaN(best) && (isNaN(v) || (IsMax ? v > best : v < best));
            if (better || (selectLast && same)) {
              best = v;
              bestIndex = j;
            }
          }
          dst[o * split.inner + in] = bestIndex;
        }
      }
    }
  });
  results[0] = std::move(out);
}

/// CumSum (Kind Sum) and CumProd (Kind Prod): floats accumulate in double,
/// integers wrap in their own width.
template <ReduceKind Kind>
void cumulativeKernel(const Node &node, const std::vector<const Tensor *> &operands,
                      std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kNumericTypes, 0);
  std::vector<int64_t> axisValues = readAxes(node, requireOperand(node, operands, 1), "axis");
  if (axisValues.size() != 1)
    fail(node.describe(), ": ", node.opName(), " axis must hold exactly one value, got ",
         axisValues.size());
  if (x.rank() == 0)
    fail(node.describe(), ": ", node.opName(), " needs an input of rank at least 1");
  int64_t axis = normalizeAxisOrFail(node, axisValues[0], int64_t(x.rank()));
  bool exclusive = node.getInt("exclusive", 0) != 0;
  bool reverse = node.getInt("reverse", 0) != 0;
  AxisSplit split = splitAtAxis(x.dims(), axis);
  dispatchDType(x.dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, kNumericTypes)) {
      using T = ElementTraits<D>;
      using A = AccumulatorOf<typename T::Compute>;
      Tensor out(D, x.dims());
      const StorageOf<D> *src = x.data<StorageOf<D>>();
      StorageOf<D> *dst = out.data<StorageOf<D>>();
      for (int64_t o = 0; o < split.outer; ++o) {
        for (int64_t in = 0; in < split.inner; ++in) {
          int64_t base = o * split.size * split.inner + in;
          A running = A(Kind == ReduceKind::Prod ? 1 : 0);
          for (int64_t step = 0; step < split.size; ++step) {
            int64_t j = reverse ? split.size - 1 - step : step;
            int64_t at = base + j * split.inner;
            A v = A(T::load(src[at]));
            if (!exclusive)
              running = reduceStep<A>(Kind, running, v);
            dst[at] = T::store(typename T::Compute(running));
            if (exclusive)
              running = reduceStep<A>(Kind, running, v);
          }
        }
      }
      results[0] = std::move(out);
    }
  });
}

} // namespace

void registerReductionKernels(KernelTable &table) {
  table.add(OpKind::ReduceSum, reduceKernel<ReduceKind::Sum>);
  table.add(OpKind::ReduceMean, reduceKernel<ReduceKind::Mean>);
  table.add(OpKind::ReduceProd, reduceKernel<ReduceKind::Prod>);
  table.add(OpKind::ReduceMax, reduceKernel<ReduceKind::Max>);
  table.add(OpKind::ReduceMin, reduceKernel<ReduceKind::Min>);
  table.add(OpKind::ReduceL1, reduceKernel<ReduceKind::L1>);
  table.add(OpKind::ReduceL2, reduceKernel<ReduceKind::L2>);
  table.add(OpKind::ReduceSumSquare, reduceKernel<ReduceKind::SumSquare>);
  table.add(OpKind::ReduceLogSumExp, logSumExpKernel);
  table.add(OpKind::ArgMax, argKernel<true>);
  table.add(OpKind::ArgMin, argKernel<false>);
  table.add(OpKind::CumSum, cumulativeKernel<ReduceKind::Sum>);
  table.add(OpKind::CumProd, cumulativeKernel<ReduceKind::Prod>);
}

} // namespace onnxc
