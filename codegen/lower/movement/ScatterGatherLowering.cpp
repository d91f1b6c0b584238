//===- codegen/lower/movement/ScatterGatherLowering.cpp - GatherElements, ScatterND -===//
//
// GatherElements: tasks take rows of the indices (all axes but the last);
// per row the data offset of the off-axis coordinates is computed once, then
// each element adds its index times the axis stride.
//
// ScatterND: a copy step puts the data into the result, then the scatter
// step applies the update rows in order, as the evaluator does, so
// duplicate index tuples end as there (reduction "none": the last row
// wins, as in onnxruntime; ONNX leaves it unspecified). The tasks split the
// columns of the update slices, not the rows: each output element is owned
// by one task, which sees every row in order, so no two tasks race on a
// duplicate. With one-element slices (the usual exported slice assignment)
// that is one task: a plain loop, k index loads per update.
//
// An index outside [-size, size) fails the run naming the step and the
// indices (the evaluator also says which index). Where shape inference
// could only assume that the operands fit (symbolic dims), the kernel checks
// it before reading.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"
#include "codegen/lower/reduction/ReductionSupport.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Intrinsics.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

Dim productOf(const Shape &shape, size_t begin, size_t end) {
  Dim p(1);
  for (size_t i = begin; i < end; ++i)
    p = p * shape[i];
  return p;
}

/// Whether `a` <= `b` holds for every binding of the symbols (as far as a
/// compile-time look can tell).
bool provablyAtMost(const Dim &a, const Dim &b) {
  if (a.provablyEqual(b))
    return true;
  return a.constant() && b.constant() && *a.constant() <= *b.constant();
}

/// The i64 value of index element `position` of `indices`, negative ones
/// shifted by `size`; fails the run unless it is then in [0, size).
Value *checkedIndex(KernelBuilder &k, DType type, Value *indices, Value *position, Value *size) {
  IRBuilder<> &b = k.ir();
  Value *index = k.convert(k.loadElement(type, indices, position), type, DType::I64);
  index = b.CreateSelect(b.CreateICmpSLT(index, k.i64(0)), b.CreateAdd(index, size), index);
  k.failIf(b.CreateICmpUGE(index, size));
  return index;
}

void copyOneElement(KernelBuilder &k, Value *to, Value *from, size_t elementSize) {
  IRBuilder<> &b = k.ir();
  Type *bits = elementBitsType(k, elementSize);
  b.CreateStore(b.CreateLoad(bits, from), to);
}

void lowerGatherElements(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *data = node.operand(0), *indices = node.operand(1);
  if (!data || !indices || !isInteger(indices->dtype()))
    ctx.unsupported(node, "needs data and integer indices");
  const Shape &in = data->shape(), &at = indices->shape();
  size_t rank = in.rank();
  if (rank == 0 || at.rank() != rank)
    ctx.unsupported(node, "indices and data must have the same rank of at least 1");
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(rank)));
  size_t elementSize = dtypeSize(data->dtype());
  std::vector<size_t> unproven;
  for (size_t d = 0; d < rank; ++d)
    if (d != axis && !provablyAtMost(at[d], in[d]))
      unproven.push_back(d);

  StepBuilder step = ctx.beginStep(node, "gather_elements");
  unsigned src = step.input(data);
  unsigned idx = step.input(indices);
  unsigned dst = step.output(node.result(0));
  std::string failure = "an index of '" + indices->name() + "' is out of range [-" +
                        in[axis].str() + ", " + in[axis].str() + ") for axis " +
                        std::to_string(axis) + " of '" + data->name() + "'";
  if (!unproven.empty())
    failure += ", or '" + indices->name() + "' " + at.str() + " exceeds '" + data->name() + "' " +
               in.str() + " off the axis";
  step.setFailure(failure);
  Dim rows = productOf(at, 0, rank - 1);
  const Dim &rowLength = at[rank - 1];
  auto [begin, end] = splitByWork(step, rows, rowLength);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  for (size_t d : unproven)
    k.failIf(b.CreateICmpSGT(k.dim(at[d]), k.dim(in[d])));
  std::vector<Value *> dataStrides = k.strides(in);
  std::vector<Value *> rowExtents;
  for (size_t d = 0; d + 1 < rank; ++d)
    rowExtents.push_back(k.dim(at[d]));
  Value *length = k.dim(rowLength), *size = k.dim(in[axis]);
  Value *axisStride = dataStrides[axis];
  k.forRange(begin, end, [&](Value *row) {
    // The data offset of the row's coordinates off the axis.
    Value *rowBase = k.i64(0);
    if (rank > 1) {
      std::vector<Value *> coordinates = k.unflatten(row, rowExtents);
      for (size_t d = 0; d + 1 < rank; ++d)
        if (d != axis)
          rowBase = b.CreateAdd(rowBase, b.CreateMul(coordinates[d], dataStrides[d]));
    }
    Value *rowStart = b.CreateMul(row, length);
    k.forRange(k.i64(0), length, [&](Value *j) {
      Value *position = b.CreateAdd(rowStart, j);
      Value *index = checkedIndex(k, indices->dtype(), k.buffer(idx), position, size);
      Value *from = b.CreateAdd(rowBase, b.CreateMul(index, axisStride));
      if (axis != rank - 1)
        from = b.CreateAdd(from, j); // the last axis has stride 1
      copyOneElement(k, elementPointer(k, k.buffer(dst), position, elementSize),
                     elementPointer(k, k.buffer(src), from, elementSize), elementSize);
    });
  });
  step.finish();
}

enum class Combine { None, Add, Mul, Max, Min };

Combine combineOf(const LoweringContext &ctx, const Node &node) {
  std::string reduction = node.getString("reduction", "none");
  if (reduction == "none")
    return Combine::None;
  if (reduction == "add")
    return Combine::Add;
  if (reduction == "mul")
    return Combine::Mul;
  if (reduction == "max")
    return Combine::Max;
  if (reduction == "min")
    return Combine::Min;
  ctx.unsupported(node, "unknown reduction '" + reduction + "'");
}

/// `into` combined with `update` (computeType of `type`), as the
/// evaluator's combine: integers wrap, a NaN in max/min gives NaN, and an
/// update equal to the element keeps the element (so -0 vs +0 as there).
Value *emitCombine(KernelBuilder &k, Combine combine, DType type, Value *into, Value *update) {
  IRBuilder<> &b = k.ir();
  bool fp = isFloat(type);
  switch (combine) {
  case Combine::Add:
    return fp ? b.CreateFAdd(into, update) : b.CreateAdd(into, update);
  case Combine::Mul:
    return fp ? b.CreateFMul(into, update) : b.CreateMul(into, update);
  case Combine::Max:
  case Combine::Min: {
    bool isMax = combine == Combine::Max;
    if (!fp) {
      bool isSigned = isSignedInt(type);
      Value *better =
          isMax ? (isSigned ? b.CreateICmpSGT(update, into) : b.CreateICmpUGT(update, into))
                : (isSigned ? b.CreateICmpSLT(update, into) : b.CreateICmpULT(update, into));
      return b.CreateSelect(better, update, into);
    }
    Value *better = isMax ? b.CreateFCmpOGT(update, into) : b.CreateFCmpOLT(update, into);
    Value *chosen = b.CreateSelect(better, update, into);
    Value *nan = ConstantFP::getNaN(into->getType());
    return b.CreateSelect(b.CreateFCmpUNO(into, update), nan, chosen);
  }
  case Combine::None:
    break;
  }
  return update;
}

/// The failure message of a ScatterND step, and which update dims the
/// kernel must check against the indices and data at run time.
struct ScatterChecks {
  std::string failure;
  std::vector<std::pair<Dim, Dim>> equalAtRunTime; // (updates dim, what it must equal)
};

ScatterChecks scatterChecks(const Node &node, size_t depth) {
  const onnxc::Value *data = node.operand(0), *indices = node.operand(1),
                     *updates = node.operand(2);
  const Shape &in = data->shape(), &at = indices->shape(), &up = updates->shape();
  ScatterChecks checks;
  for (size_t i = 0; i + 1 < at.rank(); ++i)
    if (!up[i].provablyEqual(at[i]))
      checks.equalAtRunTime.push_back({up[i], at[i]});
  for (size_t i = depth; i < in.rank(); ++i) {
    size_t u = at.rank() - 1 + (i - depth);
    if (!up[u].provablyEqual(in[i]))
      checks.equalAtRunTime.push_back({up[u], in[i]});
  }
  std::string bounds;
  for (size_t j = 0; j < depth; ++j)
    bounds += std::string(j ? ", " : "") + "[-" + in[j].str() + ", " + in[j].str() + ")";
  checks.failure = "an index of '" + indices->name() + "' is out of range for '" + data->name() +
                   "' " + in.str() + " (index " + std::to_string(depth) + "-tuples must lie in " +
                   bounds + ")";
  if (!checks.equalAtRunTime.empty())
    checks.failure += ", or '" + updates->name() + "' " + up.str() +
                      " is not indices[:-1] + data[" + std::to_string(depth) + ":]";
  return checks;
}

/// The index depth of a ScatterND (the indices' last dim); refuses indices
/// and updates that do not fit the data.
size_t scatterDepth(LoweringContext &ctx, const Node &node, const Shape &in, const Shape &at,
                    const Shape &up) {
  if (in.rank() == 0 || at.rank() == 0)
    ctx.unsupported(node, "data and indices must have rank at least 1");
  std::optional<int64_t> depthOrNone = at[at.rank() - 1].constant();
  if (!depthOrNone)
    ctx.unsupported(node, "the last dimension of the indices must be a compile-time constant");
  size_t depth = size_t(*depthOrNone);
  if (depth < 1 || depth > in.rank() || up.rank() != at.rank() - 1 + in.rank() - depth)
    ctx.unsupported(node, "the indices and updates do not fit the data " + in.str());
  return depth;
}

/// The data offset of index tuple `row` (of axisSizes.size() indices, each
/// checked against its axis).
Value *scatterOffset(KernelBuilder &k, DType indexType, unsigned idx, Value *row,
                     const std::vector<Value *> &axisSizes,
                     const std::vector<Value *> &dataStrides) {
  IRBuilder<> &b = k.ir();
  const size_t depth = axisSizes.size();
  Value *offset = k.i64(0);
  Value *tuple = b.CreateMul(row, k.i64(int64_t(depth)));
  for (size_t j = 0; j < depth; ++j) {
    Value *index = checkedIndex(k, indexType, k.buffer(idx), b.CreateAdd(tuple, k.i64(int64_t(j))),
                                axisSizes[j]);
    offset = b.CreateAdd(offset, b.CreateMul(index, dataStrides[j]));
  }
  return offset;
}

void lowerScatterND(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *data = node.operand(0), *indices = node.operand(1),
                     *updates = node.operand(2), *result = node.result(0);
  if (!data || !indices || !updates || !isInteger(indices->dtype()))
    ctx.unsupported(node, "needs data, integer indices and updates");
  const Shape &in = data->shape(), &at = indices->shape();
  size_t depth = scatterDepth(ctx, node, in, at, updates->shape());
  Combine combine = combineOf(ctx, node);
  DType dtype = data->dtype();
  if (combine != Combine::None && (dtype == DType::Bool || dtype == DType::Unknown))
    ctx.unsupported(node, "a reduction needs numeric data");
  ScatterChecks checks = scatterChecks(node, depth);

  std::string copyName = std::string(node.opName());
  if (!node.name().empty())
    copyName += " " + node.name();
  ctx.copyValue(data, result, copyName + " (copy)");

  StepBuilder step = ctx.beginStep(node, "scatter_nd");
  unsigned idx = step.input(indices);
  unsigned upd = step.input(updates);
  unsigned dst = step.output(result);
  step.setFailure(checks.failure);
  Dim rows = productOf(at, 0, at.rank() - 1);
  Dim sliceLength = productOf(in, depth, in.rank());
  // Tasks own column ranges of every slice; at least one task, so that the
  // indices are checked even when the slices are empty.
  auto columnsPerTask = [rows](FunctionBuilder &f) {
    return f.max(f.ir().CreateSDiv(f.i64(kTaskWork), f.max(f.dim(rows), f.i64(1))), f.i64(1));
  };
  step.setTaskCount([&](FunctionBuilder &f) {
    return f.max(f.ceilDiv(f.dim(sliceLength), columnsPerTask(f)), f.i64(1));
  });
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  for (const auto &[actual, expected] : checks.equalAtRunTime)
    k.failIf(b.CreateICmpNE(k.dim(actual), k.dim(expected)));
  Value *perTask = columnsPerTask(k);
  Value *length = k.dim(sliceLength);
  Value *begin = k.min(b.CreateMul(k.taskBegin(), perTask), length);
  Value *end = k.min(b.CreateMul(k.taskEnd(), perTask), length);
  std::vector<Value *> dataStrides = k.strides(in);
  std::vector<Value *> axisSizes;
  for (size_t j = 0; j < depth; ++j)
    axisSizes.push_back(k.dim(in[j]));
  size_t elementSize = dtypeSize(dtype);
  bool oneElementSlices = isConstantDim(sliceLength, 1);
  k.forRange(k.i64(0), k.dim(rows), [&](Value *row) {
    Value *offset = scatterOffset(k, indices->dtype(), idx, row, axisSizes, dataStrides);
    Value *updateRow = b.CreateMul(row, length);
    if (combine == Combine::None && oneElementSlices) {
      k.ifThen(b.CreateICmpSLT(begin, end), [&] {
        copyOneElement(k, elementPointer(k, k.buffer(dst), offset, elementSize),
                       elementPointer(k, k.buffer(upd), updateRow, elementSize), elementSize);
      });
    } else if (combine == Combine::None) {
      copyElements(k, elementPointer(k, k.buffer(dst), b.CreateAdd(offset, begin), elementSize),
                   elementPointer(k, k.buffer(upd), b.CreateAdd(updateRow, begin), elementSize),
                   b.CreateSub(end, begin), elementSize);
    } else {
      k.forRange(begin, end, [&](Value *column) {
        Value *to = b.CreateAdd(offset, column);
        Value *into = k.loadElement(dtype, k.buffer(dst), to);
        Value *update = k.loadElement(dtype, k.buffer(upd), b.CreateAdd(updateRow, column));
        k.storeElement(dtype, emitCombine(k, combine, dtype, into, update), k.buffer(dst), to);
      });
    }
  });
  step.finish();
}

} // namespace

void registerScatterGatherLowerings(LoweringTable &table) {
  table.add(OpKind::GatherElements, lowerGatherElements);
  table.add(OpKind::ScatterND, lowerScatterND);
  table.add(OpKind::TensorScatter, lowerTensorScatter);
}

} // namespace onnxc::lower
