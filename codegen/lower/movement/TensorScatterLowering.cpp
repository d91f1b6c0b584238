//===- codegen/lower/movement/TensorScatterLowering.cpp - TensorScatter (opset 24) ===//
//
// present = TensorScatter(past, update, write_indices): two steps. The copy
// step moves the past into the present, and is skipped at run time when
// the two are one buffer: a KV cache pair (CachePairs.h) the runtime binds
// to one buffer is then only written where the update goes. The scatter
// step writes each update row (the elements after the axis, contiguous in
// both) at its batch row's write index plus its position, modulo the cache
// length in circular mode. Tasks take (prefix, position) items, so a decode
// step's one new position per head spreads over the heads.
//
// Both the past and the present are addressed with their layouts
// (LoweringContext::layoutOf): a cache pair laid out for a capacity has that
// many rows on the axis. In linear mode every task first checks each write
// index against the cache's length, as the evaluator does, and fails the run
// naming write_indices when one leaves no room for the update.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/StridedCopy.h"
#include "codegen/lower/movement/MovementLoweringInternal.h"
#include "codegen/lower/reduction/ReductionSupport.h"

#include "ir/OpAttributes.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// The operands of a TensorScatter the lowering can compile, or
/// ctx.unsupported (shape inference refused the rest already).
struct ScatterOperands {
  const onnxc::Value *past, *update, *writeIndices, *present;
  size_t axis;
  bool circular;
};

ScatterOperands scatterOperands(const LoweringContext &ctx, const Node &node) {
  ScatterOperands s;
  s.past = node.operand(0);
  s.update = node.numOperands() > 1 ? node.operand(1) : nullptr;
  s.writeIndices = node.numOperands() > 2 ? node.operand(2) : nullptr;
  s.present = node.result(0);
  if (!s.past || !s.update)
    ctx.unsupported(node, "needs past_cache and update");
  size_t rank = s.past->shape().rank();
  if (rank < 2 || s.update->shape().rank() != rank)
    ctx.unsupported(node, "past_cache and update must have one rank of at least 2");
  s.axis = size_t(normalizedAxis(ctx, node, node.getInt("axis", -2), int64_t(rank)));
  if (s.axis == 0)
    ctx.unsupported(node, "axis 0 is the batch axis of the write indices");
  std::string mode = node.getString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    ctx.unsupported(node, "unknown mode '" + mode + "'");
  s.circular = mode == "circular";
  if (s.writeIndices && s.writeIndices->dtype() != DType::I64)
    ctx.unsupported(node, "write_indices must be i64");
  return s;
}

/// The past into the present, unless they are one buffer.
void emitCacheCopy(LoweringContext &ctx, const Node &node, const ScatterOperands &s) {
  const Shape &shape = s.past->shape();
  size_t size = dtypeSize(s.past->dtype());
  std::vector<Dim> from = contiguousStrides(ctx.layoutOf(s.past));
  std::vector<Dim> to = contiguousStrides(ctx.layoutOf(s.present));
  StepBuilder step = ctx.beginStep(node, "tensor_scatter_copy");
  unsigned in = step.input(s.past);
  unsigned out = step.output(s.present);
  Value *tasks = setCopyTaskCount(step, shape.numElements(), size);
  KernelBuilder &k = step.kernel();
  StridedCopy copy(size);
  for (size_t d = 0; d < shape.rank(); ++d)
    copy.addAxis({shape[d], from[d], to[d]});
  copy.simplify();
  copy.setStreaming(ctx.graph().isOutput(s.present) && ctx.hasAvx2Fma());
  Value *source = k.buffer(in), *target = k.buffer(out);
  k.ifThen(k.ir().CreateICmpNE(source, target), [&] { copy.emit(k, source, target, tasks); });
  step.finish();
}

/// Fails the run unless every write index w has 0 <= w <= rows - length
/// (linear mode, an update of `length` > 0 positions).
void checkWriteIndices(KernelBuilder &k, Value *indices, Value *batch, Value *rows, Value *length) {
  IRBuilder<> &b = k.ir();
  Value *last = b.CreateSub(rows, length);
  k.ifThen(b.CreateICmpSGT(length, k.i64(0)), [&] {
    k.forRange(k.i64(0), batch, [&](Value *row) {
      // Unsigned: a negative index fails too.
      k.failIf(b.CreateICmpUGT(k.loadElement(DType::I64, indices, row), last));
    });
  });
}

} // namespace

void lowerTensorScatter(LoweringContext &ctx, const Node &node) {
  ScatterOperands s = scatterOperands(ctx, node);
  emitCacheCopy(ctx, node, s);

  const Shape &cache = s.past->shape(), &rows = s.update->shape();
  size_t rank = cache.rank(), size = dtypeSize(s.past->dtype());
  StepBuilder step = ctx.beginStep(node, "tensor_scatter");
  unsigned upd = step.input(s.update);
  std::optional<unsigned> idx;
  if (s.writeIndices)
    idx = step.input(s.writeIndices);
  unsigned dst = step.output(s.present);
  if (idx && !s.circular)
    step.setFailure("a write index in '" + s.writeIndices->name() + "' leaves no room for the " +
                    rows[s.axis].str() + " positions of '" + s.update->name() + "' in '" +
                    s.past->name() + "' " + cache.str() + " (linear mode: 0 <= index <= " +
                    cache[s.axis].str() + " - " + rows[s.axis].str() + ")");
  Dim prefix = dimProduct(cache, 0, s.axis), inner = dimProduct(cache, s.axis + 1, rank);
  auto [begin, end] = splitByWork(step, prefix * rows[s.axis], inner);
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *length = k.dim(rows[s.axis]), *cacheRows = k.dim(cache[s.axis]);
  Value *layoutRows = k.dim(ctx.layoutOf(s.present)[s.axis]);
  Value *perBatch = k.dim(dimProduct(cache, 1, s.axis)), *rowLength = k.dim(inner);
  if (idx && !s.circular)
    checkWriteIndices(k, k.buffer(*idx), k.dim(cache[0]), cacheRows, length);
  k.forRange(begin, end, [&](Value *item) {
    // Items exist only when length and perBatch are positive.
    Value *prefixRow = b.CreateUDiv(item, length);
    Value *position = b.CreateURem(item, length);
    Value *at = position;
    if (idx) {
      Value *batchRow = b.CreateUDiv(prefixRow, perBatch);
      at = b.CreateAdd(k.loadElement(DType::I64, k.buffer(*idx), batchRow), position);
    }
    if (s.circular) {
      Value *wrapped = b.CreateSRem(at, cacheRows);
      at = b.CreateSelect(b.CreateICmpSLT(wrapped, k.i64(0)), b.CreateAdd(wrapped, cacheRows),
                          wrapped);
    }
    Value *row = b.CreateAdd(b.CreateMul(prefixRow, layoutRows), at);
    copyElements(k, elementPointer(k, k.buffer(dst), b.CreateMul(row, rowLength), size),
                 elementPointer(k, k.buffer(upd), b.CreateMul(item, rowLength), size), rowLength,
                 size);
  });
  step.finish();
}

} // namespace onnxc::lower
