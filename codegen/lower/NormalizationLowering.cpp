//===- codegen/lower/NormalizationLowering.cpp - Softmax, LayerNorm, RMSNorm ===//
//
// The transformer cases run on the row kernels of codegen/RowKernels.h:
// f32 Softmax/LogSoftmax whose axis is contiguous (every later dim is 1),
// and f32 LayerNorm/RMSNorm whose scale (and bias) have exactly the
// normalized shape and whose statistics outputs nobody reads. The step's
// tasks are ranges of rows; the row kernel (one per kind, length and
// epsilon, shared by every step that needs it) walks them. Everything else
// takes the general loop nests of NormalizationLoops.cpp.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/NormalizationLowering.h"

#include "codegen/RowKernels.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/ReductionSupport.h"

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

} // namespace

void registerNormalizationLowerings(LoweringTable &table) {
  table.add(OpKind::Softmax, lowerSoftmax<false>);
  table.add(OpKind::LogSoftmax, lowerSoftmax<true>);
  table.add(OpKind::LayerNormalization, lowerNormalization<true>);
  table.add(OpKind::RMSNormalization, lowerNormalization<false>);
}

} // namespace onnxc::lower
