//===- codegen/lower/movement/PadLowering.cpp - Pad -----------------------===//
//
// Pad with constant pads and axes (a run-time pads operand is specialized
// into a constant by `onnxc run`, and refused by `onnxc compile`). One task
// item per output row (every axis but the last): a row whose outer index
// falls in a constant-mode pad is the fill; otherwise the row is its
// leading pad, a contiguous copy of the source row (a plain loop LLVM
// vectorizes) and its trailing pad, the pads mapped per mode (edge clamps,
// wrap is cyclic, reflect mirrors without the edge element).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/ComplexKernelSupport.h"
#include "codegen/lower/OpLowerings.h"

#include "ir/OpAttributes.h"

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

enum class PadMode { Constant, Reflect, Edge, Wrap };

std::vector<int64_t> constantInts(const LoweringContext &ctx, const Node &node, size_t i,
                                  const char *what) {
  const Tensor *tensor = ctx.constantValue(node.operand(i));
  if (!tensor || !tensor->hasData() || !isInteger(tensor->dtype()))
    ctx.unsupported(node, std::string("pad ") + what + " must be an integer constant");
  return tensor->toInt64Vector();
}

/// The source index of padded position `i` (already less the leading pad)
/// on an axis of `size` elements, for the modes that read the source.
Value *mappedIndex(FunctionBuilder &k, PadMode mode, Value *i, Value *size) {
  IRBuilder<> &b = k.ir();
  switch (mode) {
  case PadMode::Constant:
  case PadMode::Edge:
    return k.max(k.min(i, b.CreateSub(size, k.i64(1))), k.i64(0));
  case PadMode::Wrap: {
    // An empty axis pads nothing; max() keeps the division defined anyway.
    Value *divisor = k.max(size, k.i64(1));
    return b.CreateSRem(b.CreateAdd(b.CreateSRem(i, divisor), divisor), divisor);
  }
  case PadMode::Reflect: {
    Value *period = k.max(b.CreateMul(b.CreateSub(size, k.i64(1)), k.i64(2)), k.i64(1));
    Value *r = b.CreateSRem(b.CreateAdd(b.CreateSRem(i, period), period), period);
    return b.CreateSelect(b.CreateICmpSLT(r, size), r, b.CreateSub(period, r));
  }
  }
  return i;
}

/// The mode, and the leading pad of every axis (0 where none is given).
struct PadPlan {
  PadMode mode;
  std::vector<int64_t> begin;
};

PadPlan planPad(LoweringContext &ctx, const Node &node, size_t rank) {
  std::string modeName = node.getString("mode", "constant");
  PadMode mode = modeName == "reflect" ? PadMode::Reflect
                 : modeName == "edge"  ? PadMode::Edge
                 : modeName == "wrap"  ? PadMode::Wrap
                                       : PadMode::Constant;
  std::vector<int64_t> pads = constantInts(ctx, node, 1, "pads");
  std::vector<int64_t> axes;
  if (node.operand(3)) {
    for (int64_t axis : constantInts(ctx, node, 3, "axes"))
      axes.push_back(normalizeAxisOrFail(node, axis, int64_t(rank), "pad axis"));
  } else {
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  }
  if (pads.size() != 2 * axes.size())
    ctx.unsupported(node, "pad has " + std::to_string(pads.size()) + " pads for " +
                              std::to_string(axes.size()) + " axes");
  std::vector<int64_t> begin(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i)
    begin[size_t(axes[i])] += pads[i];
  return {mode, std::move(begin)};
}

void lowerPad(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *data = node.operand(0);
  const Shape &in = data->shape(), &out = node.result(0)->shape();
  DType dtype = data->dtype();
  size_t rank = in.rank();
  if (!in.isRanked() || out.rank() != rank || rank == 0)
    ctx.unsupported(node, "pad needs a ranked operand of rank >= 1");
  const PadPlan plan = planPad(ctx, node, rank);
  const PadMode mode = plan.mode;
  const std::vector<int64_t> &begin = plan.begin;

  StepBuilder step = ctx.beginStep(node, "pad");
  unsigned x = step.input(data);
  int fillSlot = node.operand(2) ? int(step.input(node.operand(2))) : -1;
  unsigned y = step.output(node.result(0));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Dim rows(1);
  for (size_t i = 0; i + 1 < rank; ++i)
    rows = rows * out[i];
  auto [first, last] = step.splitEvenly([rows](FunctionBuilder &f) { return f.dim(rows); }, 1);
  Value *fill = fillSlot >= 0 ? k.loadElement(dtype, k.buffer(unsigned(fillSlot)), k.i64(0))
                              : k.constant(dtype, 0.0);
  std::vector<Value *> outExtents, inStrides(rank);
  for (size_t i = 0; i + 1 < rank; ++i)
    outExtents.push_back(k.dim(out[i]));
  std::vector<Value *> inDims = k.dims(in);
  Value *stride = k.i64(1);
  for (size_t i = rank; i-- > 0;) {
    inStrides[i] = stride;
    stride = b.CreateMul(stride, inDims[i]);
  }
  Value *outLast = k.dim(out[rank - 1]), *inLast = inDims[rank - 1];
  Value *lead = k.i64(begin[rank - 1]);

  k.forRange(first, last, [&](Value *row) {
    std::vector<Value *> index = k.unflatten(row, outExtents);
    Value *source = k.i64(0), *inPad = b.getFalse();
    for (size_t i = 0; i + 1 < rank; ++i) {
      Value *shifted = b.CreateSub(index[i], k.i64(begin[i]));
      inPad = b.CreateOr(inPad, b.CreateICmpUGE(shifted, inDims[i]));
      source =
          b.CreateAdd(source, b.CreateMul(mappedIndex(k, mode, shifted, inDims[i]), inStrides[i]));
    }
    Value *outRow = b.CreateMul(row, outLast);
    auto storeAt = [&](Value *j, Value *value) {
      k.storeElement(dtype, value, k.buffer(y), b.CreateAdd(outRow, j));
    };
    auto padSegment = [&](Value *from, Value *to) {
      k.forRange(from, to, [&](Value *j) {
        if (mode == PadMode::Constant) {
          storeAt(j, fill);
          return;
        }
        Value *s = mappedIndex(k, mode, b.CreateSub(j, lead), inLast);
        storeAt(j, k.loadElement(dtype, k.buffer(x), b.CreateAdd(source, s)));
      });
    };
    Value *lo = k.max(k.min(lead, outLast), k.i64(0));
    Value *hi = k.max(k.min(b.CreateAdd(lead, inLast), outLast), lo);
    Value *rowIsFill = mode == PadMode::Constant ? inPad : b.getFalse();
    k.ifThenElse(
        rowIsFill, [&] { k.forRange(k.i64(0), outLast, [&](Value *j) { storeAt(j, fill); }); },
        [&] {
          padSegment(k.i64(0), lo);
          k.forRange(lo, hi, [&](Value *j) {
            Value *s = b.CreateAdd(source, b.CreateSub(j, lead));
            storeAt(j, k.loadElement(dtype, k.buffer(x), s));
          });
          padSegment(hi, outLast);
        });
  });
  step.finish();
}

} // namespace

void registerPadLowerings(LoweringTable &table) { table.add(OpKind::Pad, lowerPad); }

} // namespace onnxc::lower
