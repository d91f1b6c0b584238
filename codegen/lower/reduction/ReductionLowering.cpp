//===- codegen/lower/reduction/ReductionLowering.cpp - Reduce* lowering ---===//
//
// A Reduce* node becomes one step whose tasks are ranges of kept (output)
// elements. The axes are first grouped: axes of constant extent 1 dropped,
// runs of reduced or kept axes merged. Then:
//
//   [K, R]      f32 Sum/Mean/Max/Min: contiguous rows, vector accumulators
//   [K, R, N]   f32 Sum/Mean/Max/Min, N >= 8: 32-column blocks down R rows
//   otherwise   a scalar loop nest per output element
//
// The scalar path mirrors ir/eval/ReductionKernels.cpp: floats sum and
// multiply in double, integers wrap in their own width (the same bits as
// the evaluator's 64-bit accumulator, truncated), integer means and L2 norms
// use the exact 64-bit sum, Max/Min let any NaN win. LogSumExp makes two
// passes over each group, the maximum m and then sum(exp(x - m)), in double.
// One difference: an empty integer Max/Min gives the type's lowest/highest
// value (as ONNX says); the evaluator truncates the 64-bit extremes instead.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/reduction/ReductionSupport.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"

#include <limits>
#include <optional>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// A run of adjacent axes that are all reduced or all kept.
struct AxisGroup {
  Dim extent;
  bool reduced = false;
};

struct ReducePlan {
  bool identity = false; // the result is the input's bytes
  std::vector<AxisGroup> groups;
  Dim groupSize = Dim(1); // input elements per result element
};

/// Which axes an axes operand known only at run time reduces. Shape
/// inference knew its contents (Shape -> Range chains) or the result could
/// not have a shape the runtime binds, so they are read back from the
/// shapes: with keepdims, an axis is reduced where the result has 1 and the
/// input may not; without, only "all" and "none" are unambiguous.
std::vector<bool> reducedAxesFromShapes(const LoweringContext &ctx, const Node &node) {
  const Shape &in = node.operand(0)->shape();
  const Shape &out = node.result(0)->shape();
  size_t rank = in.rank();
  if (out.rank() == 0 && rank != 0)
    return std::vector<bool>(rank, true);
  if (out.rank() != rank)
    ctx.unsupported(node, "axes must be a compile-time constant when keepdims is 0");
  std::vector<bool> reduced(rank, false);
  for (size_t i = 0; i < rank; ++i) {
    if (in[i].provablyEqual(out[i]))
      continue;
    if (!isConstantDim(out[i], 1))
      ctx.unsupported(node,
                      "axes must be a compile-time constant (result shape " + out.str() + ")");
    reduced[i] = true;
  }
  return reduced;
}

/// The reduced axes, or nullopt when the node is the identity
/// (noop_with_empty_axes without axes).
std::optional<std::vector<bool>> reducedAxes(const LoweringContext &ctx, const Node &node) {
  int64_t rank = int64_t(node.operand(0)->shape().rank());
  const onnxc::Value *axesOperand = node.operand(1);
  std::vector<int64_t> axes;
  if (axesOperand && !isConstantDim(axesOperand->shape().numElements(), 0)) {
    const Tensor *contents = ctx.constantValue(axesOperand);
    if (!contents)
      return reducedAxesFromShapes(ctx, node);
    axes = contents->toInt64Vector();
  }
  if (axes.empty() && node.getInt("noop_with_empty_axes", 0) != 0)
    return std::nullopt;
  std::vector<bool> reduced(size_t(rank), axes.empty());
  for (int64_t axis : axes) {
    int64_t a = normalizedAxis(ctx, node, axis, rank);
    if (reduced[size_t(a)])
      ctx.unsupported(node, "axis " + std::to_string(axis) + " is listed twice");
    reduced[size_t(a)] = true;
  }
  return reduced;
}

/// Whether one element reduced alone is not itself (|x|, x*x).
bool changesSingleElements(ReduceKind kind) {
  return kind == ReduceKind::L1 || kind == ReduceKind::L2 || kind == ReduceKind::SumSquare;
}

ReducePlan planReduce(const LoweringContext &ctx, const Node &node, ReduceKind kind) {
  const Shape &shape = node.operand(0)->shape();
  int64_t rank = int64_t(shape.rank());
  ReducePlan plan;
  std::optional<std::vector<bool>> reducedOrNone = reducedAxes(ctx, node);
  if (!reducedOrNone) {
    plan.identity = true;
    return plan;
  }
  const std::vector<bool> &reduced = *reducedOrNone;
  for (int64_t i = 0; i < rank; ++i) {
    const Dim &extent = shape[size_t(i)];
    bool isReduced = reduced[size_t(i)];
    if (isReduced)
      plan.groupSize = plan.groupSize * extent;
    if (isConstantDim(extent, 1))
      continue;
    if (!plan.groups.empty() && plan.groups.back().reduced == isReduced)
      plan.groups.back().extent = plan.groups.back().extent * extent;
    else
      plan.groups.push_back({extent, isReduced});
  }
  bool anyReduced = false;
  for (const AxisGroup &group : plan.groups)
    anyReduced = anyReduced || group.reduced;
  // Reducing only axes of extent 1 leaves every element as it is, except
  // where the reduction maps single elements (|x|, x*x).
  plan.identity = !anyReduced && !changesSingleElements(kind);
  return plan;
}

/// The scalar accumulator of one reduction kind and dtype.
class ScalarAccumulator {
public:
  ScalarAccumulator(KernelBuilder &k, ReduceKind kind, DType dtype)
      : k_(k), b_(k.ir()), kind_(kind), dtype_(dtype) {
    bool extreme = kind == ReduceKind::Max || kind == ReduceKind::Min;
    bool exactSum = kind == ReduceKind::Mean || kind == ReduceKind::L2;
    if ((isFloat(dtype) && !extreme) || kind == ReduceKind::LogSumExp)
      accType_ = DType::F64;
    else if (exactSum && isInteger(dtype))
      accType_ = isSignedInt(dtype) ? DType::I64 : DType::U64;
    else
      accType_ = dtype;
  }

  /// Passes over each group: LogSumExp finds the maximum first.
  int passes() const { return kind_ == ReduceKind::LogSumExp ? 2 : 1; }

  /// The accumulator's start in `pass`.
  Value *initial(int pass) {
    if (kind_ == ReduceKind::LogSumExp)
      return pass == 0 ? ConstantFP::getInfinity(b_.getDoubleTy(), /*Negative=*/true)
                       : ConstantFP::get(b_.getDoubleTy(), 0.0);
    return initial();
  }

  /// Folds `element` into `acc` in `pass`; `maximum` is the first pass's
  /// result (LogSumExp's second pass adds exp(element - maximum)).
  Value *step(int pass, Value *acc, Value *element, Value *maximum) {
    if (kind_ != ReduceKind::LogSumExp)
      return step(acc, element);
    Value *v = k_.convert(element, dtype_, DType::F64);
    if (pass == 0)
      return b_.CreateBinaryIntrinsic(Intrinsic::maximum, acc, v);
    Value *term = b_.CreateUnaryIntrinsic(Intrinsic::exp, b_.CreateFSub(v, maximum));
    return b_.CreateFAdd(acc, term);
  }

  /// The result from the last pass's accumulator (and the first's).
  Value *finish(Value *acc, Value *groupSize, Value *maximum) {
    if (kind_ != ReduceKind::LogSumExp)
      return finish(acc, groupSize);
    // A maximum that is not finite (an empty or all -inf group, +inf, NaN)
    // is the result; the second pass's sum is NaN then.
    Value *isFinite = b_.CreateFCmpONE(b_.CreateUnaryIntrinsic(Intrinsic::fabs, maximum),
                                       ConstantFP::getInfinity(b_.getDoubleTy()));
    Value *value = b_.CreateFAdd(maximum, b_.CreateUnaryIntrinsic(Intrinsic::log, acc));
    return k_.convert(b_.CreateSelect(isFinite, value, maximum), DType::F64, dtype_);
  }

private:
  Value *initial() {
    Type *type = k_.computeType(accType_);
    switch (kind_) {
    case ReduceKind::Prod:
      return k_.constant(accType_, 1);
    case ReduceKind::Max:
    case ReduceKind::Min: {
      bool isMax = kind_ == ReduceKind::Max;
      if (type->isFloatingPointTy())
        return ConstantFP::getInfinity(type, /*Negative=*/isMax);
      unsigned bits = type->getIntegerBitWidth();
      if (isSignedInt(accType_))
        return b_.getInt(isMax ? APInt::getSignedMinValue(bits) : APInt::getSignedMaxValue(bits));
      return b_.getInt(isMax ? APInt::getMinValue(bits) : APInt::getMaxValue(bits));
    }
    default:
      return k_.constant(accType_, 0);
    }
  }

  /// Folds `element` (computeType of the dtype) into `acc`.
  Value *step(Value *acc, Value *element) {
    Value *v = k_.convert(element, dtype_, accType_);
    bool isFloatAcc = v->getType()->isFloatingPointTy();
    switch (kind_) {
    case ReduceKind::L1:
      if (isFloatAcc)
        v = b_.CreateUnaryIntrinsic(Intrinsic::fabs, v);
      else if (isSignedInt(dtype_))
        v = b_.CreateBinaryIntrinsic(Intrinsic::abs, v, b_.getFalse()); // INT_MIN wraps
      return isFloatAcc ? b_.CreateFAdd(acc, v) : b_.CreateAdd(acc, v);
    case ReduceKind::L2:
    case ReduceKind::SumSquare:
      v = isFloatAcc ? b_.CreateFMul(v, v) : b_.CreateMul(v, v);
      [[fallthrough]];
    case ReduceKind::Sum:
    case ReduceKind::Mean:
      return isFloatAcc ? b_.CreateFAdd(acc, v) : b_.CreateAdd(acc, v);
    case ReduceKind::Prod:
      return isFloatAcc ? b_.CreateFMul(acc, v) : b_.CreateMul(acc, v);
    case ReduceKind::Max:
      if (isFloatAcc)
        return b_.CreateBinaryIntrinsic(Intrinsic::maximum, acc, v);
      if (dtype_ == DType::Bool)
        return b_.CreateOr(acc, v);
      return b_.CreateBinaryIntrinsic(isSignedInt(dtype_) ? Intrinsic::smax : Intrinsic::umax, acc,
                                      v);
    case ReduceKind::Min:
      if (isFloatAcc)
        return b_.CreateBinaryIntrinsic(Intrinsic::minimum, acc, v);
      if (dtype_ == DType::Bool)
        return b_.CreateAnd(acc, v);
      return b_.CreateBinaryIntrinsic(isSignedInt(dtype_) ? Intrinsic::smin : Intrinsic::umin, acc,
                                      v);
    case ReduceKind::LogSumExp:
      break; // two passes, see step(pass, ...)
    }
    return acc;
  }

  /// The result element (computeType of the dtype) from the accumulator
  /// of `groupSize` elements.
  Value *finish(Value *acc, Value *groupSize) {
    if (kind_ == ReduceKind::Mean) {
      if (isFloat(dtype_)) {
        // 0/0 = NaN for an empty group, as the evaluator (and numpy).
        acc = b_.CreateFDiv(acc, b_.CreateSIToFP(groupSize, b_.getDoubleTy()));
      } else {
        Value *isEmpty = b_.CreateICmpEQ(groupSize, k_.i64(0));
        Value *divisor = b_.CreateSelect(isEmpty, k_.i64(1), groupSize);
        Value *quotient =
            isSignedInt(dtype_) ? b_.CreateSDiv(acc, divisor) : b_.CreateUDiv(acc, divisor);
        acc = b_.CreateSelect(isEmpty, k_.i64(0), quotient);
      }
    }
    if (kind_ == ReduceKind::L2) {
      // An integer sum of squares is read as unsigned, as the evaluator
      // does: it is negative only when it wrapped.
      Value *sum = isFloat(dtype_) ? acc : b_.CreateUIToFP(acc, b_.getDoubleTy());
      return k_.convert(b_.CreateUnaryIntrinsic(Intrinsic::sqrt, sum), DType::F64, dtype_);
    }
    return k_.convert(acc, accType_, dtype_);
  }

  KernelBuilder &k_;
  IRBuilder<> &b_;
  ReduceKind kind_;
  DType dtype_;
  DType accType_;
};

/// [K, R] -> [K]: one contiguous f32 row per result.
void emitContiguousRows(StepBuilder &step, ReduceKind kind, unsigned in, unsigned out,
                        const Dim &rows, const Dim &rowLength) {
  auto [begin, end] = splitByWork(step, rows, rowLength);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *length = k.dim(rowLength);
  k.forRange(begin, end, [&](Value *row) {
    Value *rowBase = b.CreateInBoundsGEP(b.getFloatTy(), k.buffer(in), b.CreateMul(row, length));
    Value *result = emitContiguousReduce(k, kind, rowBase, length);
    if (kind == ReduceKind::Mean)
      result = b.CreateFDiv(result, b.CreateSIToFP(length, b.getDoubleTy()));
    if (result->getType()->isDoubleTy())
      result = b.CreateFPTrunc(result, b.getFloatTy());
    k.storeElement(DType::F32, result, k.buffer(out), row);
  });
}

/// [K, R, N] -> [K, N]: blocks of 32 columns, each reduced down its R rows.
void emitColumnBlocks(StepBuilder &step, ReduceKind kind, unsigned in, unsigned out,
                      const Dim &outer, const Dim &rows, const Dim &columns) {
  auto blocksPerSlice = [&](FunctionBuilder &f) {
    return f.ceilDiv(f.dim(columns), f.i64(kColumnBlock));
  };
  auto [begin, end] = splitByWork(
      step, [&](FunctionBuilder &f) { return f.ir().CreateMul(f.dim(outer), blocksPerSlice(f)); },
      [&](FunctionBuilder &f) { return f.ir().CreateMul(f.dim(rows), f.i64(kColumnBlock)); });
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *rowCount = k.dim(rows);
  Value *columnCount = k.dim(columns);
  Value *blocks = blocksPerSlice(k);
  k.forRange(begin, end, [&](Value *item) {
    Value *slice = b.CreateUDiv(item, blocks);
    Value *column = b.CreateMul(b.CreateURem(item, blocks), k.i64(kColumnBlock));
    Value *sliceIn = b.CreateInBoundsGEP(b.getFloatTy(), k.buffer(in),
                                         b.CreateMul(slice, b.CreateMul(rowCount, columnCount)));
    Value *sliceOut =
        b.CreateInBoundsGEP(b.getFloatTy(), k.buffer(out), b.CreateMul(slice, columnCount));
    emitColumnBlockReduce(k, kind, sliceIn, sliceOut, rowCount, columnCount, column, columnCount);
  });
}

/// Any groups, any dtype: per result element, nested loops over the reduced
/// groups.
void emitGeneralReduce(StepBuilder &step, ReduceKind kind, DType dtype, unsigned in, unsigned out,
                       const ReducePlan &plan) {
  // Row-major strides of the groups in the input.
  std::vector<Dim> strides(plan.groups.size());
  Dim stride(1);
  for (size_t g = plan.groups.size(); g-- > 0;) {
    strides[g] = stride;
    stride = stride * plan.groups[g].extent;
  }
  std::vector<Dim> keptExtents, reducedExtents, keptStrides, reducedStrides;
  for (size_t g = 0; g < plan.groups.size(); ++g) {
    bool reduced = plan.groups[g].reduced;
    (reduced ? reducedExtents : keptExtents).push_back(plan.groups[g].extent);
    (reduced ? reducedStrides : keptStrides).push_back(strides[g]);
  }
  Dim results(1);
  for (const Dim &extent : keptExtents)
    results = results * extent;
  auto [begin, end] = splitByWork(step, results, plan.groupSize);

  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  auto values = [&](const std::vector<Dim> &dims) {
    std::vector<Value *> v;
    for (const Dim &d : dims)
      v.push_back(k.dim(d));
    return v;
  };
  std::vector<Value *> keptSize = values(keptExtents), keptStep = values(keptStrides);
  std::vector<Value *> reducedSize = values(reducedExtents), reducedStep = values(reducedStrides);
  Value *groupSize = k.dim(plan.groupSize);
  Value *input = k.buffer(in);
  ScalarAccumulator accumulator(k, kind, dtype);

  // Reduces the groups from `level` on, starting at element `at`, in `pass`.
  int pass = 0;
  Value *maximum = nullptr;
  std::function<Value *(size_t, Value *, Value *)> reduceFrom = [&](size_t level, Value *at,
                                                                    Value *acc) -> Value * {
    if (level == reducedSize.size())
      return accumulator.step(pass, acc, k.loadElement(dtype, input, at), maximum);
    return k.forRangeCarried(
        k.i64(0), reducedSize[level], {acc},
        [&](Value *i, ArrayRef<Value *> carried) -> std::vector<Value *> {
          Value *next = b.CreateAdd(at, b.CreateMul(i, reducedStep[level]));
          return {reduceFrom(level + 1, next, carried[0])};
        },
        1, "red")[0];
  };
  k.forRange(begin, end, [&](Value *result) {
    Value *at = k.offset(k.unflatten(result, keptSize), keptStep);
    Value *acc = nullptr;
    maximum = nullptr;
    for (pass = 0; pass < accumulator.passes(); ++pass) {
      if (pass > 0)
        maximum = acc;
      acc = reduceFrom(0, at, accumulator.initial(pass));
    }
    k.storeElement(dtype, accumulator.finish(acc, groupSize, maximum), k.buffer(out), result);
  });
}

const char *kernelName(ReduceKind kind) {
  switch (kind) {
  case ReduceKind::Sum:
    return "reduce_sum";
  case ReduceKind::Mean:
    return "reduce_mean";
  case ReduceKind::Prod:
    return "reduce_prod";
  case ReduceKind::Max:
    return "reduce_max";
  case ReduceKind::Min:
    return "reduce_min";
  case ReduceKind::L1:
    return "reduce_l1";
  case ReduceKind::L2:
    return "reduce_l2";
  case ReduceKind::SumSquare:
    return "reduce_sum_square";
  case ReduceKind::LogSumExp:
    return "reduce_log_sum_exp";
  }
  return "reduce";
}

void lowerReduce(LoweringContext &ctx, const Node &node, ReduceKind kind) {
  const onnxc::Value *x = node.operand(0);
  const onnxc::Value *y = node.result(0);
  DType dtype = x->dtype();
  bool extreme = kind == ReduceKind::Max || kind == ReduceKind::Min;
  if (dtype == DType::Unknown || (dtype == DType::Bool && !extreme))
    ctx.unsupported(node, "input of type " + std::string(dtypeName(dtype)));
  ReducePlan plan = planReduce(ctx, node, kind);
  if (plan.identity)
    return ctx.alias(y, x);

  StepBuilder step = ctx.beginStep(node, kernelName(kind));
  unsigned in = step.input(x);
  unsigned out = step.output(y);
  const std::vector<AxisGroup> &groups = plan.groups;
  size_t n = groups.size();
  bool vectorKind = dtype == DType::F32 && (kind == ReduceKind::Sum || kind == ReduceKind::Mean ||
                                            kind == ReduceKind::Max || kind == ReduceKind::Min);
  // Fewer than 8 columns would leave most vector lanes idle.
  bool wideColumns = n >= 2 && !groups[n - 1].reduced && groups[n - 2].reduced &&
                     !(groups[n - 1].extent.constant() && *groups[n - 1].extent.constant() < 8);
  if (vectorKind && groups[n - 1].reduced && n <= 2) {
    emitContiguousRows(step, kind, in, out, n == 2 ? groups[0].extent : Dim(1),
                       groups[n - 1].extent);
  } else if (vectorKind && wideColumns && n <= 3) {
    emitColumnBlocks(step, kind, in, out, n == 3 ? groups[0].extent : Dim(1), groups[n - 2].extent,
                     groups[n - 1].extent);
  } else {
    emitGeneralReduce(step, kind, dtype, in, out, plan);
  }
  step.finish();
}

template <ReduceKind Kind> void lowerReduceOf(LoweringContext &ctx, const Node &node) {
  lowerReduce(ctx, node, Kind);
}

} // namespace

void registerReductionLowerings(LoweringTable &table) {
  table.add(OpKind::ReduceSum, lowerReduceOf<ReduceKind::Sum>);
  table.add(OpKind::ReduceMean, lowerReduceOf<ReduceKind::Mean>);
  table.add(OpKind::ReduceProd, lowerReduceOf<ReduceKind::Prod>);
  table.add(OpKind::ReduceMax, lowerReduceOf<ReduceKind::Max>);
  table.add(OpKind::ReduceMin, lowerReduceOf<ReduceKind::Min>);
  table.add(OpKind::ReduceL1, lowerReduceOf<ReduceKind::L1>);
  table.add(OpKind::ReduceL2, lowerReduceOf<ReduceKind::L2>);
  table.add(OpKind::ReduceSumSquare, lowerReduceOf<ReduceKind::SumSquare>);
  table.add(OpKind::ReduceLogSumExp, lowerReduceOf<ReduceKind::LogSumExp>);
  table.add(OpKind::ArgMax, lowerArgMax);
  table.add(OpKind::ArgMin, lowerArgMin);
  table.add(OpKind::CumSum, lowerCumulative);
  table.add(OpKind::CumProd, lowerCumulative);
}

} // namespace onnxc::lower
