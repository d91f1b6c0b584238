//===- codegen/lower/QuantizedGemmLowering.cpp - Quantized MatMuls --------===//
//
// DynamicQuantizedMatMul: two steps over A flattened to [rows, K] (rows =
// the product of A's leading dims), sharing one scratch buffer:
//
//   range    one task: min and max of A (vectorized) -> scale and zero point
//            (the evaluator's formulas, ir/eval/QuantizedGemmKernels.cpp)
//   gemm     tasks over row chunks: each quantizes its rows of A to u8
//            (and their row sums) into the scratch, then runs the integer
//            GEMM of codegen/IntegerGemm.h on them, whose store applies the
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
// The weights (a constant) are packed at compile time with their column
// sums. Rounding is half to even by adding and subtracting 1.5 * 2^23,
// exact for the |v| <= 2^22 that quantization produces (|A / scale| <= 255
// up to rounding) and free of libm calls on any x86-64.
//
//===----------------------------------------------------------------------===//
#include "codegen/IntegerGemm.h"
#include "codegen/lower/LinearAlgebraLowering.h"
#include "codegen/lower/OpLowerings.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <cstring>
#include <sstream>

namespace onnxc::lower {
namespace {

constexpr int64_t HeaderBytes = 64;

struct QuantizedMatMulPlan {
  const Node *node = nullptr;
  const Value *a = nullptr, *weights = nullptr, *weightScale = nullptr, *weightZero = nullptr,
              *bias = nullptr, *result = nullptr;
  Dim rows = 1;
  int64_t k = 0, n = 0, kPadded = 0;
  IntegerGemmIsa isa = IntegerGemmIsa::Generic;
  /// Floats per vector of the quantization loops.
  int64_t lanes = 8;
  /// A's quantized range, and what is added to a quantized value to store it
  /// as u8 (128 for an i8 activation).
  double low = 0, high = 255;
  int32_t storedOffset = 0;
};

/// `value`'s constant contents, or a compile error naming what is missing.
const Tensor &requireConstant(LoweringContext &ctx, const Node &node, const Value *value,
                              const char *what) {
  const Tensor *tensor = ctx.constantValue(value);
  if (!tensor || !tensor->hasData())
    ctx.unsupported(node, std::string("the ") + what + " must be a constant with contents");
  return *tensor;
}

std::shared_ptr<std::vector<uint8_t>> bytesOf(const void *data, size_t size) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(size);
  std::memcpy(bytes->data(), data, size);
  return bytes;
}

/// Rounds half to even (see the file comment).
llvm::Value *roundEven(llvm::IRBuilder<> &ir, llvm::Value *v) {
  llvm::Value *magic = llvm::ConstantFP::get(v->getType(), 12582912.0); // 1.5 * 2^23
  return ir.CreateFSub(ir.CreateFAdd(v, magic), magic);
}

/// clamp(v, lo, hi) as std::clamp computes it for numbers.
llvm::Value *clamp(llvm::IRBuilder<> &ir, llvm::Value *v, double lo, double hi) {
  llvm::Value *low = llvm::ConstantFP::get(v->getType(), lo);
  llvm::Value *high = llvm::ConstantFP::get(v->getType(), hi);
  v = ir.CreateSelect(ir.CreateFCmpOLT(v, low), low, v);
  return ir.CreateSelect(ir.CreateFCmpOLT(high, v), high, v);
}

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
      ir,
      clamp(ir, ir.CreateFSub(llvm::ConstantFP::get(f32, 0.0), ir.CreateFDiv(lo, scale)), 0, 255));
  llvm::Value *header = kb.buffer(scratchSlot);
  ir.CreateAlignedStore(scale, header, llvm::Align(4));
  ir.CreateAlignedStore(ir.CreateFPToSI(zero, ir.getInt32Ty()),
                        ir.CreateInBoundsGEP(ir.getInt8Ty(), header, kb.i64(4)), llvm::Align(4));
  step.finish();
}

/// Quantizes row `row` of A into the scratch (as u8: plus the plan's offset)
/// and stores the row's sum of the stored values.
void emitQuantizeRow(KernelBuilder &kb, const QuantizedMatMulPlan &plan, llvm::Value *a,
                     llvm::Value *quantized, llvm::Value *rowSums, llvm::Value *scale,
                     llvm::Value *zero, llvm::Value *row) {
  llvm::IRBuilder<> &ir = kb.ir();
  llvm::Type *f32 = ir.getFloatTy(), *i32 = ir.getInt32Ty(), *i8 = ir.getInt8Ty();
  const unsigned lanes = unsigned(plan.lanes);
  auto *floats = llvm::FixedVectorType::get(f32, lanes);
  auto *ints = llvm::FixedVectorType::get(i32, lanes);
  auto *bytes = llvm::FixedVectorType::get(i8, lanes);
  llvm::Value *scales = ir.CreateVectorSplat(lanes, scale);
  llvm::Value *zeros = ir.CreateVectorSplat(lanes, zero);
  llvm::Value *source = ir.CreateInBoundsGEP(f32, a, ir.CreateMul(row, kb.i64(plan.k)));
  llvm::Value *target =
      ir.CreateInBoundsGEP(i8, quantized, ir.CreateMul(row, kb.i64(plan.kPadded)));
  // q = clamp(roundeven(x / scale) + zero, low, high) + offset, lanes
  // outside `mask` 0.
  llvm::Value *offsets = llvm::ConstantVector::getSplat(
      llvm::ElementCount::getFixed(lanes), ir.getInt32(uint32_t(plan.storedOffset)));
  auto quantize = [&](llvm::Value *column, llvm::Value *mask, llvm::Value *sum) {
    llvm::Value *from = ir.CreateInBoundsGEP(f32, source, column);
    llvm::Value *x =
        mask ? static_cast<llvm::Value *>(ir.CreateMaskedLoad(floats, from, llvm::Align(4), mask,
                                                              llvm::Constant::getNullValue(floats)))
             : ir.CreateAlignedLoad(floats, from, llvm::Align(4));
    llvm::Value *q = ir.CreateFPToSI(
        clamp(ir, ir.CreateFAdd(roundEven(ir, ir.CreateFDiv(x, scales)), zeros), plan.low,
              plan.high),
        ints);
    if (plan.storedOffset != 0)
      q = ir.CreateAdd(q, offsets);
    if (mask)
      q = ir.CreateSelect(mask, q, llvm::Constant::getNullValue(ints));
    llvm::Value *to = ir.CreateInBoundsGEP(i8, target, column);
    llvm::Value *narrow = ir.CreateTrunc(q, bytes);
    if (mask)
      ir.CreateMaskedStore(narrow, to, llvm::Align(1), mask);
    else
      ir.CreateAlignedStore(narrow, to, llvm::Align(1));
    return ir.CreateAdd(sum, q);
  };
  const int64_t fullEnd = plan.k / plan.lanes * plan.lanes;
  auto sums = kb.forRangeCarried(
      kb.i64(0), kb.i64(fullEnd), {llvm::Constant::getNullValue(ints)},
      [&](llvm::Value *column, llvm::ArrayRef<llvm::Value *> carried) {
        return std::vector<llvm::Value *>{quantize(column, nullptr, carried[0])};
      },
      plan.lanes, "column");
  llvm::Value *sum = sums[0];
  if (fullEnd != plan.k) {
    std::vector<llvm::Constant *> bits;
    for (int64_t lane = 0; lane < plan.lanes; ++lane)
      bits.push_back(ir.getInt1(fullEnd + lane < plan.k));
    sum = quantize(kb.i64(fullEnd), llvm::ConstantVector::get(bits), sum);
  }
  // The kernel reads K in groups of 4: the padding must be zero.
  for (int64_t column = plan.k; column < plan.kPadded; ++column)
    ir.CreateStore(ir.getInt8(0), ir.CreateInBoundsGEP(i8, target, kb.i64(column)));
  llvm::Value *total = ir.CreateExtractElement(sum, uint64_t(0));
  for (unsigned lane = 1; lane < lanes; ++lane)
    total = ir.CreateAdd(total, ir.CreateExtractElement(sum, uint64_t(lane)));
  ir.CreateAlignedStore(total, ir.CreateInBoundsGEP(i32, rowSums, row), llvm::Align(4));
}

/// Compile-time constants: the packed weights and their column terms.
std::pair<int32_t, int32_t> packedWeights(LoweringContext &ctx, const QuantizedMatMulPlan &plan) {
  const Node &node = *plan.node;
  const Tensor &weights = requireConstant(ctx, node, plan.weights, "weight operand");
  const Tensor &scaleTensor = requireConstant(ctx, node, plan.weightScale, "weight scale");
  std::vector<float> scales;
  for (int64_t i = 0; i < scaleTensor.numElements(); ++i)
    scales.push_back(float(scaleTensor.elementAsDouble(i)));
  std::vector<int32_t> zeros = {0};
  if (const Value *zero = plan.weightZero) {
    const Tensor &zeroTensor = requireConstant(ctx, node, zero, "weight zero point");
    zeros.clear();
    for (int64_t i = 0; i < zeroTensor.numElements(); ++i)
      zeros.push_back(int32_t(zeroTensor.elementAsInt64(i)));
  }
  std::ostringstream key;
  key << "qgemm:" << plan.weights->name() << ":" << plan.weightScale->name() << ":"
      << (plan.weightZero ? plan.weightZero->name() : "-") << ":" << integerGemmIsaName(plan.isa);
  std::shared_ptr<PackedIntegerWeights> packed;
  auto pack = [&] {
    if (!packed)
      packed = std::make_shared<PackedIntegerWeights>(
          packIntegerGemmWeights(weights.rawData(), weights.dtype() == DType::U8, plan.k, plan.n,
                                 scales, zeros, plan.isa));
    return packed;
  };
  int32_t b = ctx.sharedConstant(key.str() + ":b", [&] {
    return ConstantBytes(bytesOf(pack()->packed.data(), pack()->packed.size()));
  });
  int32_t columns = ctx.sharedConstant(key.str() + ":columns", [&] {
    return ConstantBytes(bytesOf(pack()->columns.data(), pack()->columns.size() * 4));
  });
  return {b, columns};
}

/// A's scale and zero point when they are constants (QuantizedMatMul).
struct StaticActivation {
  float scale = 1;
  int32_t zero = 0;
};

/// DynamicQuantizedMatMul (`fixed` empty) or QuantizedMatMul.
void lowerQuantizedMatMul(LoweringContext &ctx, const Node &node,
                          std::optional<StaticActivation> fixed, size_t firstWeightOperand) {
  QuantizedMatMulPlan plan;
  plan.node = &node;
  plan.a = node.operand(0);
  plan.weights = node.operand(firstWeightOperand);
  plan.weightScale = node.operand(firstWeightOperand + 1);
  plan.weightZero = node.operand(firstWeightOperand + 2);
  plan.bias = node.operand(firstWeightOperand + 3);
  plan.result = node.result(0);
  if (fixed && node.operand(2)->dtype() == DType::I8) {
    plan.low = -128;
    plan.high = 127;
    plan.storedOffset = 128;
  }
  const Shape &a = plan.a->shape(), &w = plan.weights->shape();
  std::optional<int64_t> k = w[0].constant(), n = w[1].constant();
  if (!k || !n || *k <= 0 || *n <= 0)
    ctx.unsupported(node, "the weights need positive constant dims, got " + w.str());
  plan.k = *k;
  plan.n = *n;
  plan.kPadded = integerGemmPaddedDepth(plan.k);
  for (size_t i = 0; i + 1 < a.rank(); ++i)
    plan.rows = plan.rows * a[i];
  plan.isa = ctx.integerGemmIsa();
  if (plan.isa == IntegerGemmIsa::Avx2) {
    // vpmaddubsw clamps pair sums to s16: weights that can reach the clamp
    // take the exact generic kernel instead (IntegerGemm.h).
    const Tensor &weights = requireConstant(ctx, node, plan.weights, "weight operand");
    if (!integerGemmAvx2IsExact(weights.rawData(), weights.dtype() == DType::U8, plan.k, plan.n))
      plan.isa = IntegerGemmIsa::Generic;
  }
  plan.lanes = plan.isa == IntegerGemmIsa::Avx512Vnni ? 16 : 8;
  auto [packedB, columns] = packedWeights(ctx, plan);

  PlanBuffer scratchBuffer;
  scratchBuffer.kind = BufferKind::Intermediate;
  scratchBuffer.sizeBytes = Dim(HeaderBytes) + plan.rows * Dim(plan.kPadded + 4);
  int32_t scratch = ctx.addBuffer(scratchBuffer);
  if (!fixed)
    emitRangeStep(ctx, plan, scratch);

  StepBuilder step = ctx.beginStep(node, "qgemm");
  unsigned aSlot = step.input(plan.a);
  unsigned scratchSlot = step.bufferSlot(scratch);
  unsigned bSlot = step.bufferSlot(packedB), columnsSlot = step.bufferSlot(columns);
  unsigned biasSlot = plan.bias ? step.input(plan.bias) : ~0u;
  unsigned resultSlot = step.output(plan.result);
  IntegerGemmSpec spec{ctx.uniqueName("qgemm_kernel"), plan.k, plan.n, plan.isa,
                       plan.bias != nullptr};
  llvm::Function *gemm = emitIntegerGemm(ctx.module(), spec);
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
        llvm::Value *scale, *zero, *storedZero;
        if (fixed) {
          scale = llvm::ConstantFP::get(ir.getFloatTy(), double(fixed->scale));
          zero = ir.getInt32(uint32_t(fixed->zero));
          storedZero = ir.getInt32(uint32_t(fixed->zero + plan.storedOffset));
        } else {
          scale = ir.CreateAlignedLoad(ir.getFloatTy(), header, llvm::Align(4));
          zero = ir.CreateAlignedLoad(
              ir.getInt32Ty(), ir.CreateInBoundsGEP(ir.getInt8Ty(), header, kb.i64(4)),
              llvm::Align(4));
          storedZero = zero;
        }
        llvm::Value *quantized = ir.CreateInBoundsGEP(ir.getInt8Ty(), header, kb.i64(HeaderBytes));
        llvm::Value *rowSums = ir.CreateInBoundsGEP(
            ir.getInt8Ty(), quantized, ir.CreateMul(kb.dim(rows), kb.i64(plan.kPadded)));
        llvm::Value *zeroFloat = ir.CreateSIToFP(zero, ir.getFloatTy());
        kb.forRange(
            rowBegin, rowEnd,
            [&](llvm::Value *row) {
              emitQuantizeRow(kb, plan, kb.buffer(aSlot), quantized, rowSums, scale, zeroFloat,
                              row);
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

void lowerDynamicQuantizedMatMul(LoweringContext &ctx, const Node &node) {
  lowerQuantizedMatMul(ctx, node, std::nullopt, 1);
}

void lowerStaticQuantizedMatMul(LoweringContext &ctx, const Node &node) {
  const Tensor &scale = requireConstant(ctx, node, node.operand(1), "activation scale");
  const Tensor &zero = requireConstant(ctx, node, node.operand(2), "activation zero point");
  StaticActivation fixed{float(scale.elementAsDouble(0)), int32_t(zero.elementAsInt64(0))};
  // Quantization divides by the scale; the kernel multiplies by it.
  if (!(std::isfinite(fixed.scale) && fixed.scale > 0))
    ctx.unsupported(node, "the activation scale must be positive and finite");
  lowerQuantizedMatMul(ctx, node, fixed, 3);
}

} // namespace

void registerQuantizedGemmLowerings(LoweringTable &table) {
  table.add(OpKind::DynamicQuantizedMatMul, lowerDynamicQuantizedMatMul);
  table.add(OpKind::QuantizedMatMul, lowerStaticQuantizedMatMul);
}

} // namespace onnxc::lower
