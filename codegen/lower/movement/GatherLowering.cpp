//===- codegen/lower/movement/GatherLowering.cpp - Gather and Trilu row copies -===//
//
// Both ops copy rows: Gather a block of the trailing axes per (outer index,
// index) pair (a whole table row for an embedding lookup), Trilu the kept
// part of each matrix row while zeroing the rest. Gather splits its work by
// element count, so one long row or many short ones parallelize alike.
//
// An index outside [-size, size) fails the run, as the evaluator throws
// (checked once per copied row, before reading).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"

#include "ir/OpAttributes.h"

#include "llvm/IR/IRBuilder.h"

#include <algorithm>

using namespace llvm;

namespace onnxc::lower {

namespace {

Dim product(const Shape &shape, size_t begin, size_t end) {
  Dim p(1);
  for (size_t i = begin; i < end; ++i)
    p = p * shape[i];
  return p;
}

} // namespace

void lowerGather(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0), *indices = node.operand(1);
  if (!data || !indices)
    ctx.unsupported(node, "missing data or indices operand");
  if (!isInteger(indices->dtype()))
    ctx.unsupported(node, "indices must be an integer tensor");
  const Shape &in = data->shape();
  size_t axis = size_t(normalizeAxisOrFail(node, node.getInt("axis", 0), int64_t(in.rank())));
  const Value *result = node.result(0);
  size_t size = dtypeSize(data->dtype());
  Dim inner = product(in, axis + 1, in.rank());
  Dim count = indices->shape().numElements();
  Dim total = product(in, 0, axis) * count * inner;

  StepBuilder step = ctx.beginStep(node, "gather");
  unsigned src = step.input(data);
  unsigned idx = step.input(indices);
  unsigned dst = step.output(result);
  step.setFailure("an index of '" + indices->name() + "' is out of range [-" + in[axis].str() +
                  ", " + in[axis].str() + ") for axis " + std::to_string(axis) + " of '" +
                  data->name() + "'");
  llvm::Value *tasks = setCopyTaskCount(step, total, size);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  auto [begin, end] = taskShare(k, k.dim(total), tasks);
  k.ifThen(b.CreateICmpSLT(begin, end), [&] {
    llvm::Value *rowLength = k.dim(inner), *indexCount = k.dim(count);
    llvm::Value *axisLength = k.dim(in[axis]);
    llvm::Value *firstRow = b.CreateUDiv(begin, rowLength);
    llvm::Value *endRow = k.ceilDiv(end, rowLength);
    llvm::Value *outer0 = b.CreateUDiv(firstRow, indexCount);
    llvm::Value *position0 = b.CreateURem(firstRow, indexCount);
    k.forRangeCarried(
        firstRow, endRow, {outer0, position0},
        [&](llvm::Value *row, ArrayRef<llvm::Value *> carried) -> std::vector<llvm::Value *> {
          llvm::Value *outer = carried[0], *position = carried[1];
          llvm::Value *rowStart = b.CreateMul(row, rowLength);
          llvm::Value *first = b.CreateSub(k.max(begin, rowStart), rowStart);
          llvm::Value *last = b.CreateSub(k.min(end, b.CreateAdd(rowStart, rowLength)), rowStart);
          llvm::Value *n = b.CreateSub(last, first);
          llvm::Value *index = k.convert(k.loadElement(indices->dtype(), k.buffer(idx), position),
                                         indices->dtype(), DType::I64);
          index = b.CreateSelect(b.CreateICmpSLT(index, k.i64(0)), b.CreateAdd(index, axisLength),
                                 index);
          k.failIf(b.CreateICmpUGE(index, axisLength));
          llvm::Value *to = elementPointer(k, k.buffer(dst), b.CreateAdd(rowStart, first), size);
          llvm::Value *sourceRow =
              b.CreateMul(b.CreateAdd(b.CreateMul(outer, axisLength), index), rowLength);
          llvm::Value *from = elementPointer(k, k.buffer(src), b.CreateAdd(sourceRow, first), size);
          if (inner == Dim(1)) {
            Type *bits = elementBitsType(k, size);
            b.CreateStore(b.CreateLoad(bits, from), to);
          } else {
            copyElements(k, to, from, n, size);
          }
          llvm::Value *nextPosition = b.CreateAdd(position, k.i64(1));
          llvm::Value *wraps = b.CreateICmpEQ(nextPosition, indexCount);
          return {b.CreateSelect(wraps, b.CreateAdd(outer, k.i64(1)), outer),
                  b.CreateSelect(wraps, k.i64(0), nextPosition)};
        },
        1, "row");
  });
  step.finish();
}

void lowerTrilu(LoweringContext &ctx, const Node &node) {
  const Value *data = node.operand(0);
  if (!data || data->shape().rank() < 2)
    ctx.unsupported(node, "trilu needs an operand of rank at least 2");
  const Value *kValue = node.operand(1);
  const Tensor *constantK = kValue ? ctx.constantValue(kValue) : nullptr;
  if (kValue && (!isInteger(kValue->dtype()) || (constantK && constantK->numElements() != 1)))
    ctx.unsupported(node, "k must be an integer scalar");
  bool upper = node.getInt("upper", 1) != 0;
  const Shape &shape = data->shape();
  size_t size = dtypeSize(data->dtype());
  Dim rows = product(shape, 0, shape.rank() - 1);
  const Dim &rowLength = shape[shape.rank() - 1], &height = shape[shape.rank() - 2];

  StepBuilder step = ctx.beginStep(node, upper ? "triu" : "tril");
  unsigned src = step.input(data);
  unsigned kSlot = kValue && !constantK ? step.input(kValue) : 0;
  unsigned dst = step.output(node.result(0));
  int64_t rowBytes =
      rowLength.constant() ? std::max<int64_t>(1, *rowLength.constant()) * int64_t(size) : 1024;
  auto [begin, end] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); },
                                       std::max<int64_t>(1, kCopyGrainBytes / rowBytes));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  llvm::Value *columns = k.dim(rowLength), *matrixRows = k.dim(height);
  llvm::Value *diagonal = k.i64(0);
  if (constantK)
    diagonal = k.i64(constantK->elementAsInt64(0));
  else if (kValue)
    diagonal = loadIndex(k, kValue->dtype(), k.buffer(kSlot), 0);
  // Beyond +-(rows + columns) every k keeps or drops the same elements; the
  // clamp keeps i + k from overflowing.
  llvm::Value *bound = b.CreateAdd(b.CreateAdd(matrixRows, columns), k.i64(1));
  diagonal = k.max(k.min(diagonal, bound), b.CreateNeg(bound));
  k.forRange(begin, end, [&](llvm::Value *row) {
    llvm::Value *i = b.CreateURem(row, matrixRows);
    // upper keeps columns j >= i + k, lower keeps j <= i + k.
    llvm::Value *split = b.CreateAdd(i, upper ? diagonal : b.CreateAdd(diagonal, k.i64(1)));
    split = k.max(k.min(split, columns), k.i64(0));
    llvm::Value *rowStart = b.CreateMul(row, columns);
    llvm::Value *from = elementPointer(k, k.buffer(src), rowStart, size);
    llvm::Value *to = elementPointer(k, k.buffer(dst), rowStart, size);
    llvm::Value *rest = b.CreateSub(columns, split);
    if (upper) {
      zeroElements(k, to, split, size);
      copyElements(k, elementPointer(k, to, split, size), elementPointer(k, from, split, size),
                   rest, size);
    } else {
      copyElements(k, to, from, split, size);
      zeroElements(k, elementPointer(k, to, split, size), rest, size);
    }
  });
  step.finish();
}

} // namespace onnxc::lower
