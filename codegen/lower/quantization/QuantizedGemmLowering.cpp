//===- codegen/lower/quantization/QuantizedGemmLowering.cpp - Quantized MatMuls -===//
//
// DynamicQuantizedMatMul: two steps over A flattened to [rows, K] (rows =
// the product of A's leading dims), sharing one scratch buffer:
//
//   range    one task: min and max of A (vectorized) -> scale and zero point
//            (the evaluator's formulas, ir/eval/QuantizedGemmKernels.cpp)
//   gemm     tasks over row chunks: each quantizes its rows of A to u8
//            (and their row sums) into the scratch, then runs the integer
//            GEMM of codegen/kernels/IntegerGemm.h on them, whose store applies the
//            zero-point corrections, the scales and the bias
//
//   scratch = [64-byte header: f32 scale, i32 zero][u8 A: rows x kPadded]
//             [i32 row sums: rows]
//
// QuantizedMatMul (static quantization) has A's scale and zero point as
// constants: no range step, and the header is unused. An i8 activation is
// quantized to [-128, 127] as QuantizeLinear does and stored plus 128 (its
// zero point too), so the u8 x s8 kernel serves both.
//
// MatMulInteger and QLinearMatMul with constant [K, N] weights (and, for
// QLinearMatMul, constant scales and zero points) take the same gemm step,
// their A copied into the scratch (plus 128 when i8) and the store writing
// s32 sums or requantized bytes; with weights computed at run time they
// keep QuantizationLowering.cpp's loop nest.
//
// The weights (a constant) are packed at compile time with their column
// sums (transposed when `transpose_w` gives them as [N, K]). When every
// weight zero point is 0 the kernel needs no row sums and none are made.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/quantization/QuantizedGemmLowering.h"
#include "codegen/kernels/IntegerGemm.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"
#include "codegen/lower/quantization/QuantizedGemmSupport.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <sstream>

namespace onnxc::lower {
namespace {

constexpr int64_t HeaderBytes = 64;

/// Where A's scale and zero point come from.
struct ActivationParameters {
  enum class Kind {
    Range,    ///< computed by the range step (DynamicQuantizedMatMul)
    Constant, ///< compile-time constants
    Runtime,  ///< the zero point read from `zeroValue` (MatMulInteger)
  };
  Kind kind = Kind::Constant;
  float scale = 1;
  int32_t zero = 0;
  const Value *zeroValue = nullptr;
};

struct QuantizedMatMulPlan {
  const Node *node = nullptr;
  const Value *a = nullptr, *weights = nullptr, *bias = nullptr, *result = nullptr;
  Dim rows = 1;
  int64_t k = 0, n = 0, kPadded = 0;
  IntegerGemmIsa isa = IntegerGemmIsa::Generic;
  /// Floats per vector of the quantization loops.
  int64_t lanes = 8;
  ActivationBytes bytes;
  ActivationParameters parameters;
  bool transposed = false;
  PackedWeightBuffers packed;
  IntegerGemmSpec spec;
};

/// Step 1: scale and zero point of A into the scratch header.
void emitRangeStep(LoweringContext &ctx, const QuantizedMatMulPlan &plan, int32_t scratch) {
  StepBuilder step = ctx.beginStep(*plan.node, "qgemm_range");
  step.setName(std::string(plan.node->opName()) + " range" +
               (plan.node->name().empty() ? "" : " " + plan.node->name()));
  unsigned aSlot = step.input(plan.a);
  unsigned scratchSlot = step.bufferSlot(scratch);
  KernelBuilder &kb = step.kernel();
  llvm::IRBuilder<> &ir = kb.ir();
  llvm::Type *f32 = ir.getFloatTy();
  auto *vector = llvm::FixedVectorType::get(f32, unsigned(plan.lanes));
  llvm::Value *a = kb.buffer(aSlot);
  llvm::Value *total = ir.CreateMul(kb.dim(plan.rows), kb.i64(plan.k));
  llvm::Value *vectorEnd = ir.CreateAnd(total, kb.i64(~(plan.lanes - 1)));
  // lo = min(lo, x), hi = max(hi, x) as the evaluator's std::min / std::max.
  auto update = [&](llvm::Value *lo, llvm::Value *hi, llvm::Value *x) {
    return std::vector<llvm::Value *>{ir.CreateSelect(ir.CreateFCmpOLT(x, lo), x, lo),
                                      ir.CreateSelect(ir.CreateFCmpOLT(hi, x), x, hi)};
  };
  llvm::Value *zeros = llvm::Constant::getNullValue(vector);
  auto vectors = kb.forRangeCarried(
      kb.i64(0), vectorEnd, {zeros, zeros},
      [&](llvm::Value *i, llvm::ArrayRef<llvm::Value *> carried) {
        llvm::Value *x =
            ir.CreateAlignedLoad(vector, ir.CreateInBoundsGEP(f32, a, i), llvm::Align(4));
        return update(carried[0], carried[1], x);
      },
      plan.lanes, "range");
  std::vector<llvm::Value *> scalars = {llvm::ConstantFP::get(f32, 0.0),
                                        llvm::ConstantFP::get(f32, 0.0)};
  for (int64_t lane = 0; lane < plan.lanes; ++lane) {
    llvm::Value *lo = ir.CreateExtractElement(vectors[0], uint64_t(lane));
    llvm::Value *hi = ir.CreateExtractElement(vectors[1], uint64_t(lane));
    scalars = {ir.CreateSelect(ir.CreateFCmpOLT(lo, scalars[0]), lo, scalars[0]),
               ir.CreateSelect(ir.CreateFCmpOLT(scalars[1], hi), hi, scalars[1])};
  }
  scalars = kb.forRangeCarried(
      vectorEnd, total, scalars,
      [&](llvm::Value *i, llvm::ArrayRef<llvm::Value *> carried) {
        llvm::Value *x = ir.CreateLoad(f32, ir.CreateInBoundsGEP(f32, a, i));
        return update(carried[0], carried[1], x);
      },
      1, "rest");
  llvm::Value *lo = scalars[0], *hi = scalars[1];
  llvm::Value *scale = ir.CreateFDiv(ir.CreateFSub(hi, lo), llvm::ConstantFP::get(f32, 255.0));
  llvm::Value *one = llvm::ConstantFP::get(f32, 1.0);
  scale = ir.CreateSelect(ir.CreateFCmpOEQ(scale, llvm::ConstantFP::get(f32, 0.0)), one, scale);
  llvm::Value *zero = roundEven(
      ir, clampFloat(ir, ir.CreateFSub(llvm::ConstantFP::get(f32, 0.0), ir.CreateFDiv(lo, scale)),
                     0, 255));
  llvm::Value *header = kb.buffer(scratchSlot);
  ir.CreateAlignedStore(scale, header, llvm::Align(4));
  ir.CreateAlignedStore(ir.CreateFPToSI(zero, ir.getInt32Ty()),
                        ir.CreateInBoundsGEP(ir.getInt8Ty(), header, kb.i64(4)), llvm::Align(4));
  step.finish();
}

/// Row `row` of A into the scratch as u8 (quantized, or copied plus the
/// plan's offset), zero-padded to kPadded, and, when the kernel reads them,
/// the row's sum of the stored values.
void emitPrepareRow(KernelBuilder &kb, const QuantizedMatMulPlan &plan, llvm::Value *a,
                    llvm::Value *quantized, llvm::Value *rowSums, llvm::Value *scale,
                    llvm::Value *zero, llvm::Value *row) {
  llvm::IRBuilder<> &ir = kb.ir();
  llvm::Type *i32 = ir.getInt32Ty(), *i8 = ir.getInt8Ty();
  const bool fromFloat = plan.bytes.source == DType::F32;
  llvm::Type *element = fromFloat ? ir.getFloatTy() : i8;
  const unsigned lanes = unsigned(plan.lanes);
  auto *loaded = llvm::FixedVectorType::get(element, lanes);
  auto *ints = llvm::FixedVectorType::get(i32, lanes);
  auto *bytes = llvm::FixedVectorType::get(i8, lanes);
  llvm::Value *scales = fromFloat ? ir.CreateVectorSplat(lanes, scale) : nullptr;
  llvm::Value *zeros = fromFloat ? ir.CreateVectorSplat(lanes, zero) : nullptr;
  llvm::Value *source = ir.CreateInBoundsGEP(element, a, ir.CreateMul(row, kb.i64(plan.k)));
  llvm::Value *target =
      ir.CreateInBoundsGEP(i8, quantized, ir.CreateMul(row, kb.i64(plan.kPadded)));
  // Lanes outside `mask` are stored as nothing and summed as 0.
  auto prepare = [&](llvm::Value *column, llvm::Value *mask, llvm::Value *sum) {
    llvm::Value *from = ir.CreateInBoundsGEP(element, source, column);
    llvm::Align align(fromFloat ? 4 : 1);
    llvm::Value *x = mask ? static_cast<llvm::Value *>(ir.CreateMaskedLoad(
                                loaded, from, align, mask, llvm::Constant::getNullValue(loaded)))
                          : ir.CreateAlignedLoad(loaded, from, align);
    llvm::Value *q = storedActivation(ir, plan.bytes, x, scales, zeros);
    if (mask)
      q = ir.CreateSelect(mask, q, llvm::Constant::getNullValue(ints));
    llvm::Value *to = ir.CreateInBoundsGEP(i8, target, column);
    llvm::Value *narrow = ir.CreateTrunc(q, bytes);
    if (mask)
      ir.CreateMaskedStore(narrow, to, llvm::Align(1), mask);
    else
      ir.CreateAlignedStore(narrow, to, llvm::Align(1));
    return plan.spec.rowSums ? ir.CreateAdd(sum, q) : sum;
  };
  const int64_t fullEnd = plan.k / plan.lanes * plan.lanes;
  auto sums = kb.forRangeCarried(
      kb.i64(0), kb.i64(fullEnd), {llvm::Constant::getNullValue(ints)},
      [&](llvm::Value *column, llvm::ArrayRef<llvm::Value *> carried) {
        return std::vector<llvm::Value *>{prepare(column, nullptr, carried[0])};
      },
      plan.lanes, "column");
  llvm::Value *sum = sums[0];
  if (fullEnd != plan.k) {
    std::vector<llvm::Constant *> bits;
    for (int64_t lane = 0; lane < plan.lanes; ++lane)
      bits.push_back(ir.getInt1(fullEnd + lane < plan.k));
    sum = prepare(kb.i64(fullEnd), llvm::ConstantVector::get(bits), sum);
  }
  // The kernel reads K in groups of 4: the padding must be zero.
  for (int64_t column = plan.k; column < plan.kPadded; ++column)
    ir.CreateStore(ir.getInt8(0), ir.CreateInBoundsGEP(i8, target, kb.i64(column)));
  if (!plan.spec.rowSums)
    return;
  llvm::Value *total = ir.CreateExtractElement(sum, uint64_t(0));
  for (unsigned lane = 1; lane < lanes; ++lane)
    total = ir.CreateAdd(total, ir.CreateExtractElement(sum, uint64_t(lane)));
  ir.CreateAlignedStore(total, ir.CreateInBoundsGEP(i32, rowSums, row), llvm::Align(4));
}

/// Packs the constant weights (scales: the store's per-column factors) and
/// fills the plan's kernel spec.
void packWeights(LoweringContext &ctx, QuantizedMatMulPlan &plan, const std::vector<float> &scales,
                 const std::vector<int32_t> &zeros, const std::string &key) {
  const Tensor &weights = requireConstant(ctx, *plan.node, plan.weights, "weight operand");
  const bool unsignedWeights = weights.dtype() == DType::U8;
  plan.spec.rowSums = weightsNeedRowSums(zeros, unsignedWeights);
  plan.packed = packedWeightBuffers(
      ctx, key + ":" + integerGemmIsaName(plan.isa) + (plan.transposed ? ":t" : ""), [&] {
        return packIntegerGemmWeights(weights.rawData(), unsignedWeights, plan.k, plan.n, scales,
                                      zeros, plan.isa, plan.transposed);
      });
}

/// Sets the plan's depth, columns and rows from A and the weights.
void planShape(LoweringContext &ctx, QuantizedMatMulPlan &plan) {
  const Shape &a = plan.a->shape(), &w = plan.weights->shape();
  std::optional<int64_t> k = w[plan.transposed ? 1 : 0].constant(),
                         n = w[plan.transposed ? 0 : 1].constant();
  if (!k || !n || *k <= 0 || *n <= 0)
    ctx.unsupported(*plan.node, "the weights need positive constant dims, got " + w.str());
  plan.k = *k;
  plan.n = *n;
  for (size_t i = 0; i + 1 < a.rank(); ++i)
    plan.rows = plan.rows * a[i];
  plan.isa = ctx.integerGemmIsa();
  if (plan.isa == IntegerGemmIsa::Avx2) {
    // vpmaddubsw clamps pair sums to s16: weights that can reach the clamp
    // take the exact generic kernel instead (IntegerGemm.h).
    const Tensor &weights = requireConstant(ctx, *plan.node, plan.weights, "weight operand");
    if (!integerGemmAvx2IsExact(weights.rawData(), weights.dtype() == DType::U8, plan.k, plan.n,
                                plan.transposed))
      plan.isa = IntegerGemmIsa::Generic;
  }
  plan.kPadded = integerGemmPaddedDepth(plan.k, plan.isa);
  plan.lanes = integerGemmLanes(plan.isa);
  plan.spec.k = plan.k;
  plan.spec.n = plan.n;
  plan.spec.isa = plan.isa;
}

/// The scratch and the gemm step (after the range step when dynamic).
void emitGemm(LoweringContext &ctx, const QuantizedMatMulPlan &plan) {
  const Node &node = *plan.node;
  PlanBuffer scratchBuffer;
  scratchBuffer.kind = BufferKind::Intermediate;
  scratchBuffer.sizeBytes = Dim(HeaderBytes) + plan.rows * Dim(plan.kPadded + 4);
  int32_t scratch = ctx.addBuffer(scratchBuffer);
  const ActivationParameters &parameters = plan.parameters;
  if (parameters.kind == ActivationParameters::Kind::Range)
    emitRangeStep(ctx, plan, scratch);

  StepBuilder step = ctx.beginStep(node, "qgemm");
  unsigned aSlot = step.input(plan.a);
  unsigned scratchSlot = step.bufferSlot(scratch);
  unsigned bSlot = step.bufferSlot(plan.packed.packed);
  unsigned columnsSlot = step.bufferSlot(plan.packed.columns);
  unsigned biasSlot = plan.bias ? step.input(plan.bias) : ~0u;
  unsigned zeroSlot = parameters.zeroValue ? step.input(parameters.zeroValue) : ~0u;
  unsigned resultSlot = step.output(plan.result);
  IntegerGemmSpec spec = plan.spec;
  spec.name = ctx.uniqueName("qgemm_kernel");
  spec.bias = plan.bias != nullptr;
  llvm::Function *gemm = emitIntegerGemm(ctx.module(), spec);
  if (spec.isa == IntegerGemmIsa::Amx)
    ctx.requireCpuFeatures("amx-tile,amx-int8,avx512vnni,avx512bw");
  gemm->setLinkage(llvm::GlobalValue::InternalLinkage);

  // Tasks of whole tiles (12 rows: both tile heights) and >= 256K
  // multiply-adds, at most 96 rows (a thread's consecutive tasks merge).
  const int64_t taskRows = std::clamp<int64_t>((262144 / (plan.k * plan.n) + 11) / 12 * 12, 12, 96);
  Dim rows = plan.rows;
  KernelBuilder &kb = step.kernel();
  llvm::IRBuilder<> &ir = kb.ir();
  splitItemsAndRows(
      step, Dim(1), [rows](FunctionBuilder &f) { return f.dim(rows); },
      [taskRows](FunctionBuilder &f) { return f.i64(taskRows); },
      [&](llvm::Value *, llvm::Value *rowBegin, llvm::Value *rowEnd) {
        llvm::Value *header = kb.buffer(scratchSlot);
        // zero: A's zero point in its own type (what quantization adds);
        // the kernel takes the stored one (plus the offset).
        llvm::Value *scale = llvm::ConstantFP::get(ir.getFloatTy(), double(parameters.scale));
        llvm::Value *zero = ir.getInt32(uint32_t(parameters.zero));
        if (parameters.kind == ActivationParameters::Kind::Range) {
          scale = ir.CreateAlignedLoad(ir.getFloatTy(), header, llvm::Align(4));
          zero = ir.CreateAlignedLoad(ir.getInt32Ty(),
                                      ir.CreateInBoundsGEP(ir.getInt8Ty(), header, kb.i64(4)),
                                      llvm::Align(4));
        } else if (parameters.kind == ActivationParameters::Kind::Runtime) {
          DType type = parameters.zeroValue->dtype();
          zero = kb.convert(kb.loadElement(type, kb.buffer(zeroSlot), kb.i64(0)), type, DType::I32);
        }
        llvm::Value *storedZero =
            ir.CreateAdd(zero, ir.getInt32(uint32_t(plan.bytes.storedOffset)));
        llvm::Value *quantized = ir.CreateInBoundsGEP(ir.getInt8Ty(), header, kb.i64(HeaderBytes));
        llvm::Value *rowSums = ir.CreateInBoundsGEP(
            ir.getInt8Ty(), quantized, ir.CreateMul(kb.dim(rows), kb.i64(plan.kPadded)));
        llvm::Value *zeroFloat = ir.CreateSIToFP(zero, ir.getFloatTy());
        kb.forRange(
            rowBegin, rowEnd,
            [&](llvm::Value *row) {
              emitPrepareRow(kb, plan, kb.buffer(aSlot), quantized, rowSums, scale, zeroFloat, row);
            },
            1, "row");
        llvm::Value *bias =
            plan.bias ? kb.buffer(biasSlot) : llvm::ConstantPointerNull::get(ir.getPtrTy());
        ir.CreateCall(gemm, {quantized, kb.i64(plan.kPadded), kb.buffer(bSlot),
                             kb.buffer(resultSlot), kb.i64(plan.n), rowBegin, rowEnd, rowSums,
                             storedZero, scale, kb.buffer(columnsSlot), bias});
      });
  step.finish();
}

/// DynamicQuantizedMatMul (`fixed` empty) or QuantizedMatMul.
void lowerQuantizedMatMul(LoweringContext &ctx, const Node &node,
                          std::optional<ActivationParameters> fixed, size_t firstWeightOperand) {
  QuantizedMatMulPlan plan;
  plan.node = &node;
  plan.a = node.operand(0);
  plan.weights = node.operand(firstWeightOperand);
  const Value *weightScale = node.operand(firstWeightOperand + 1);
  const Value *weightZero = node.operand(firstWeightOperand + 2);
  plan.bias = node.operand(firstWeightOperand + 3);
  plan.result = node.result(0);
  plan.transposed = node.getInt("transpose_w", 0) != 0;
  plan.bytes = ActivationBytes::of(DType::F32, fixed ? node.operand(2)->dtype() : DType::U8);
  if (fixed)
    plan.parameters = *fixed;
  else
    plan.parameters.kind = ActivationParameters::Kind::Range;
  planShape(ctx, plan);
  std::vector<float> scales =
      constantFloats(requireConstant(ctx, node, weightScale, "weight scale"));
  std::vector<int32_t> zeros = {0};
  if (weightZero)
    zeros = constantInts(requireConstant(ctx, node, weightZero, "weight zero point"));
  std::ostringstream key;
  key << "qgemm:" << plan.weights->name() << ":" << weightScale->name() << ":"
      << (weightZero ? weightZero->name() : "-");
  packWeights(ctx, plan, scales, zeros, key.str());
  emitGemm(ctx, plan);
}

void lowerDynamicQuantizedMatMul(LoweringContext &ctx, const Node &node) {
  lowerQuantizedMatMul(ctx, node, std::nullopt, 1);
}

void lowerStaticQuantizedMatMul(LoweringContext &ctx, const Node &node) {
  const Tensor &scale = requireConstant(ctx, node, node.operand(1), "activation scale");
  const Tensor &zero = requireConstant(ctx, node, node.operand(2), "activation zero point");
  ActivationParameters fixed;
  fixed.scale = float(scale.elementAsDouble(0));
  fixed.zero = int32_t(zero.elementAsInt64(0));
  // Quantization divides by the scale; the kernel multiplies by it.
  if (!(std::isfinite(fixed.scale) && fixed.scale > 0))
    ctx.unsupported(node, "the activation scale must be positive and finite");
  lowerQuantizedMatMul(ctx, node, fixed, 3);
}

/// A zero point of one element: its value, or nullopt.
std::optional<int32_t> scalarZeroPoint(const LoweringContext &ctx, const Value *value) {
  const Tensor *tensor = value ? ctx.constantValue(value) : nullptr;
  if (!value)
    return 0;
  if (!tensor || !tensor->hasData() || tensor->numElements() != 1)
    return std::nullopt;
  return int32_t(tensor->elementAsInt64(0));
}

} // namespace

bool lowerIntegerMatMulOnGemm(LoweringContext &ctx, const Node &node) {
  const bool qlinear = node.kind() == OpKind::QLinearMatMul;
  const Value *a = node.operand(0), *b = node.operand(qlinear ? 3 : 1);
  const Value *aZero = node.operand(2), *bZero = node.operand(qlinear ? 5 : 3);
  const Tensor *weights = ctx.constantValue(b);
  const Shape &as = a->shape(), &bs = b->shape();
  if (!weights || !weights->hasData() || !as.isRanked() || as.rank() < 2 || !bs.isRanked() ||
      bs.rank() != 2 || !bs[0].constant() || !bs[1].constant() || *bs[0].constant() <= 0 ||
      *bs[1].constant() <= 0)
    return false;
  for (const Dim &d : as.dims())
    if (d.isUnknown())
      return false;
  QuantizedMatMulPlan plan;
  plan.node = &node;
  plan.a = a;
  plan.weights = b;
  plan.result = node.result(0);
  plan.bytes = ActivationBytes::of(a->dtype(), a->dtype());
  const Tensor *bZeroTensor = bZero ? ctx.constantValue(bZero) : nullptr;
  if (bZero && (!bZeroTensor || !bZeroTensor->hasData()))
    return false;
  std::vector<int32_t> zeros = bZeroTensor ? constantInts(*bZeroTensor) : std::vector<int32_t>{0};
  std::optional<int32_t> zero = scalarZeroPoint(ctx, aZero);
  std::vector<float> scales = {1.0f};
  std::ostringstream key;
  key << node.opName() << ":" << b->name() << ":" << (bZero ? bZero->name() : "-");
  if (qlinear) {
    std::optional<float> aScale = constantScale(ctx, node.operand(1));
    std::optional<float> yScale = constantScale(ctx, node.operand(6));
    const Tensor *bScale = ctx.constantValue(node.operand(4));
    std::optional<int32_t> yZero = scalarZeroPoint(ctx, node.operand(7));
    if (!aScale || !yScale || !zero || !yZero || !bScale || !bScale->hasData() ||
        bScale->dtype() != DType::F32)
      return false;
    scales = requantizeMultipliers(*aScale, constantFloats(*bScale), *yScale);
    plan.spec.store = IntegerGemmStore::Requantize;
    plan.spec.outputZero = *yZero;
    plan.spec.signedOutput = plan.result->dtype() == DType::I8;
    key << ":" << node.operand(4)->name() << ":" << node.operand(1)->name() << ":"
        << node.operand(6)->name();
  } else {
    plan.spec.store = IntegerGemmStore::Int32;
  }
  if (zero) {
    plan.parameters.zero = *zero;
  } else if (aZero->shape().numElements() == Dim(1)) {
    plan.parameters.kind = ActivationParameters::Kind::Runtime;
    plan.parameters.zeroValue = aZero;
  } else {
    return false; // per-row zero points: the loop nest
  }
  planShape(ctx, plan);
  if ((scales.size() != 1 && int64_t(scales.size()) != plan.n) ||
      (zeros.size() != 1 && int64_t(zeros.size()) != plan.n))
    return false;
  packWeights(ctx, plan, scales, zeros, key.str());
  emitGemm(ctx, plan);
  return true;
}

void registerQuantizedGemmLowerings(LoweringTable &table) {
  table.add(OpKind::DynamicQuantizedMatMul, lowerDynamicQuantizedMatMul);
  table.add(OpKind::QuantizedMatMul, lowerStaticQuantizedMatMul);
}

} // namespace onnxc::lower
