//===- codegen/lower/normalization/NormalizationLowering.cpp - Softmax, LayerNorm, RMSNorm -===//
//
// The transformer cases run on the row kernels of codegen/kernels/RowKernels.h:
// f32 Softmax/LogSoftmax whose axis is contiguous (every later dim is 1),
// and f32 LayerNorm/RMSNorm whose scale (and bias) have exactly the
// normalized shape and whose statistics outputs nobody reads. The step's
// tasks are ranges of rows; the row kernel (one per kind, length and
// epsilon, shared by every step that needs it) walks them. Everything else
// takes the general loop nests of NormalizationLoops.cpp. SkipLayerNorm
// (onnxc's x + skip then LayerNorm) adds each row and normalizes it with
// the same row kernel.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/normalization/NormalizationLowering.h"

#include "codegen/kernels/RowKernels.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/reduction/ReductionSupport.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Module.h"

#include <bit>
#include <cmath>
#include <cstdio>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// The module's row kernel for `spec`, emitted on first use.
Function *rowKernel(LoweringContext &ctx, const RowKernelSpec &spec) {
  char epsilonBits[16];
  std::snprintf(epsilonBits, sizeof epsilonBits, "%08x", std::bit_cast<uint32_t>(spec.epsilon));
  std::string name = "onnxc.rows." + std::string(rowKernelKindName(spec.kind)) + "." +
                     std::to_string(spec.rowLength) + "." + epsilonBits +
                     (spec.hasBeta ? ".beta" : "");
  if (Function *existing = ctx.module().getFunction(name))
    return existing;
  Function *kernel = emitRowKernel(ctx.module(), spec, name);
  kernel->setLinkage(GlobalValue::InternalLinkage);
  return kernel;
}

/// One step running `kind` over `rows` contiguous f32 rows of `rowLength`.
void emitRowKernelStep(LoweringContext &ctx, const Node &node, RowKernelKind kind,
                       const onnxc::Value *x, const onnxc::Value *y, const onnxc::Value *gamma,
                       const onnxc::Value *beta, const Dim &rows, const Dim &rowLength,
                       float epsilon) {
  RowKernelSpec spec;
  spec.kind = kind;
  spec.rowLength = rowLength.constant().value_or(0); // 0: passed at run time
  spec.epsilon = epsilon;
  spec.hasBeta = beta != nullptr;
  Function *kernel = rowKernel(ctx, spec);

  StepBuilder step = ctx.beginStep(node, std::string(rowKernelKindName(kind)));
  unsigned in = step.input(x);
  unsigned scale = gamma ? step.input(gamma) : 0;
  unsigned bias = beta ? step.input(beta) : 0;
  unsigned out = step.output(y);
  auto [begin, end] = splitByWork(step, rows, rowLength);
  KernelBuilder &k = step.kernel();
  Value *none = ConstantPointerNull::get(k.ir().getPtrTy());
  std::vector<Value *> args = {k.buffer(in),
                               k.buffer(out),
                               gamma ? k.buffer(scale) : none,
                               beta ? k.buffer(bias) : none,
                               begin,
                               end};
  if (spec.rowLength == 0)
    args.push_back(k.dim(rowLength));
  k.ir().CreateCall(kernel, args);
  step.finish();
}

/// Whether `operand` has exactly the layout of `normalized` (same dims
/// after leading 1s, which do not change the layout).
bool hasNormalizedLayout(const onnxc::Value *operand, const Shape &normalized) {
  auto significant = [](const Shape &shape) {
    size_t first = 0;
    while (first < shape.rank() && isConstantDim(shape[first], 1))
      ++first;
    return std::vector<Dim>(shape.dims().begin() + long(first), shape.dims().end());
  };
  std::vector<Dim> a = significant(operand->shape()), b = significant(normalized);
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].provablyEqual(b[i]))
      return false;
  return true;
}

template <bool Log> void lowerSoftmax(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0);
  if (!isFloat(x->dtype()))
    ctx.unsupported(node, "input of type " + std::string(dtypeName(x->dtype())));
  const Shape &shape = x->shape();
  int64_t rank = int64_t(shape.rank());
  if (rank == 0)
    ctx.unsupported(node, "a rank-0 input");
  int64_t axis = normalizedAxis(ctx, node, node.getInt("axis", -1), rank);
  if (x->dtype() == DType::F32 &&
      isConstantDim(dimProduct(shape, size_t(axis) + 1, size_t(rank)), 1))
    return emitRowKernelStep(ctx, node, Log ? RowKernelKind::LogSoftmax : RowKernelKind::Softmax, x,
                             node.result(0), nullptr, nullptr, dimProduct(shape, 0, size_t(axis)),
                             shape[size_t(axis)], 1e-5f);
  emitGeneralSoftmax(ctx, node, Log, axis);
}

template <bool IsLayerNorm> void lowerNormalization(LoweringContext &ctx, const Node &node) {
  NormalizationSpec spec;
  spec.isLayerNorm = IsLayerNorm;
  spec.x = node.operand(0);
  spec.scale = node.operand(1);
  spec.bias = IsLayerNorm ? node.operand(2) : nullptr;
  spec.y = node.result(0);
  if (IsLayerNorm && node.numResults() > 1 && isResultNeeded(ctx, node.result(1)))
    spec.mean = node.result(1);
  if (IsLayerNorm && node.numResults() > 2 && isResultNeeded(ctx, node.result(2)))
    spec.invStdDev = node.result(2);
  for (const onnxc::Value *v : {spec.x, spec.scale, spec.bias})
    if (v && !isFloat(v->dtype()))
      ctx.unsupported(node,
                      "operand '" + v->name() + "' of type " + std::string(dtypeName(v->dtype())));
  const Shape &shape = spec.x->shape();
  int64_t rank = int64_t(shape.rank());
  if (rank == 0)
    ctx.unsupported(node, "a rank-0 input");
  spec.axis = normalizedAxis(ctx, node, node.getInt("axis", -1), rank);
  spec.epsilon = node.getFloat("epsilon", 1e-5f);

  Shape normalized(std::vector<Dim>(shape.dims().begin() + spec.axis, shape.dims().end()));
  auto isF32Row = [&](const onnxc::Value *v) {
    return !v || (v->dtype() == DType::F32 && hasNormalizedLayout(v, normalized));
  };
  bool fast = spec.x->dtype() == DType::F32 && spec.y->dtype() == DType::F32 &&
              isF32Row(spec.scale) && isF32Row(spec.bias) && !spec.mean && !spec.invStdDev &&
              std::isfinite(spec.epsilon) && spec.epsilon >= 0;
  if (!fast)
    return emitGeneralNormalization(ctx, node, spec);
  emitRowKernelStep(ctx, node, IsLayerNorm ? RowKernelKind::LayerNorm : RowKernelKind::RmsNorm,
                    spec.x, spec.y, spec.scale, spec.bias, dimProduct(shape, 0, size_t(spec.axis)),
                    dimProduct(shape, size_t(spec.axis), size_t(rank)), spec.epsilon);
}

/// x + skip for one row into `dest`, eight lanes at a time, then the
/// remaining L mod 8 elements.
void emitRowSum(KernelBuilder &k, Value *x, Value *skip, Value *dest, Value *base, Value *length) {
  IRBuilder<> &b = k.ir();
  Type *f32 = b.getFloatTy();
  auto *vector = FixedVectorType::get(f32, 8);
  auto at = [&](Value *buffer, Value *j) {
    return b.CreateInBoundsGEP(f32, buffer, b.CreateAdd(base, j));
  };
  auto addAt = [&](Type *type, Value *j) {
    Value *sum = b.CreateFAdd(b.CreateAlignedLoad(type, at(x, j), Align(4)),
                              b.CreateAlignedLoad(type, at(skip, j), Align(4)));
    b.CreateAlignedStore(sum, at(dest, j), Align(4));
  };
  Value *vectorEnd = b.CreateAnd(length, k.i64(-8));
  k.forRange(
      k.i64(0), vectorEnd, [&](Value *j) { addAt(vector, j); }, 8, "j");
  k.forRange(
      vectorEnd, length, [&](Value *j) { addAt(f32, j); }, 1, "t");
}

/// SkipLayerNormalization (what fuse-skip-layernorm makes: f32, the last
/// axis, per-channel scale and bias): per row, x + skip is stored (into the
/// sum result when something reads it, else into Y) and the LayerNorm row
/// kernel normalizes that row in place while it is still in L1.
void lowerSkipLayerNormalization(LoweringContext &ctx, const Node &node) {
  const onnxc::Value *x = node.operand(0), *skip = node.operand(1);
  const onnxc::Value *gamma = node.operand(2), *beta = node.operand(3);
  const onnxc::Value *y = node.result(0);
  const onnxc::Value *sum =
      node.numResults() > 1 && isResultNeeded(ctx, node.result(1)) ? node.result(1) : nullptr;
  for (const onnxc::Value *v : {x, skip, gamma, beta, y, sum})
    if (v && v->dtype() != DType::F32)
      ctx.unsupported(node, "'" + v->name() + "' of type " + std::string(dtypeName(v->dtype())) +
                                " (only f32 is compiled)");
  const Shape &shape = x->shape();
  int64_t rank = int64_t(shape.rank());
  if (rank == 0)
    ctx.unsupported(node, "a rank-0 input");
  if (normalizedAxis(ctx, node, node.getInt("axis", -1), rank) != rank - 1)
    ctx.unsupported(node, "a normalized axis other than the last");
  bool sameShape = skip->shape().rank() == shape.rank();
  for (size_t i = 0; sameShape && i < shape.rank(); ++i)
    sameShape = skip->shape()[i].provablyEqual(shape[i]);
  if (!sameShape)
    ctx.unsupported(node, "skip of shape " + skip->shape().str() + " for an input of shape " +
                              shape.str());
  Shape normalized(std::vector<Dim>{shape[size_t(rank - 1)]});
  for (const onnxc::Value *v : {gamma, beta})
    if (v && !hasNormalizedLayout(v, normalized))
      ctx.unsupported(node, "'" + v->name() + "' of shape " + v->shape().str() +
                                " is not a vector of the last axis");
  float epsilon = node.getFloat("epsilon", 1e-5f);
  if (!std::isfinite(epsilon) || epsilon < 0)
    ctx.unsupported(node, "epsilon " + std::to_string(epsilon));

  const Dim &rowLength = shape[size_t(rank - 1)];
  RowKernelSpec spec;
  spec.kind = RowKernelKind::LayerNorm;
  spec.rowLength = rowLength.constant().value_or(0);
  spec.epsilon = epsilon;
  spec.hasBeta = beta != nullptr;
  Function *kernel = rowKernel(ctx, spec);

  StepBuilder step = ctx.beginStep(node, "skip_layer_norm");
  unsigned xSlot = step.input(x), skipSlot = step.input(skip), scaleSlot = step.input(gamma);
  unsigned biasSlot = beta ? step.input(beta) : 0;
  unsigned out = step.output(y);
  unsigned sumSlot = sum ? step.output(sum) : 0;
  auto [begin, end] = splitByWork(step, dimProduct(shape, 0, size_t(rank - 1)), rowLength * Dim(2));
  KernelBuilder &k = step.kernel();
  IRBuilder<> &b = k.ir();
  Value *length = k.dim(rowLength);
  Value *output = k.buffer(out);
  Value *dest = sum ? k.buffer(sumSlot) : output;
  Value *biasPointer = beta ? k.buffer(biasSlot) : ConstantPointerNull::get(b.getPtrTy());
  k.forRange(begin, end, [&](Value *row) {
    emitRowSum(k, k.buffer(xSlot), k.buffer(skipSlot), dest, b.CreateMul(row, length), length);
    std::vector<Value *> args = {dest,        output, k.buffer(scaleSlot),
                                 biasPointer, row,    b.CreateAdd(row, k.i64(1))};
    if (spec.rowLength == 0)
      args.push_back(length);
    b.CreateCall(kernel, args);
  });
  step.finish();
}

} // namespace

void registerNormalizationLowerings(LoweringTable &table) {
  table.add(OpKind::Softmax, lowerSoftmax<false>);
  table.add(OpKind::LogSoftmax, lowerSoftmax<true>);
  table.add(OpKind::LayerNormalization, lowerNormalization<true>);
  table.add(OpKind::RMSNormalization, lowerNormalization<false>);
  table.add(OpKind::SkipLayerNormalization, lowerSkipLayerNormalization);
}

} // namespace onnxc::lower
