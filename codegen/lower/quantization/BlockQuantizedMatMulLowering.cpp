//===- codegen/lower/quantization/BlockQuantizedMatMulLowering.cpp - int4 weight-only MatMul -===//
//
// BlockQuantizedMatMul with constant int4 weights, on the int4 GEMV of
// codegen/kernels/Int4Gemv.h: the weights are packed once at compile time
// (4 bits a weight, plus a scale and a zero point per block and column)
// and dequantized in registers, never widened in memory.
//
// A is flattened to [rows, K]. The tasks are chunks of rows (16) times
// 16 chunks of columns (whole groups of 4 panels, the chunks' sizes as even
// as the groups allow, so that 2, 4 or 8 threads get equal shares): a decoder
// step (one row) is split by columns, so every thread streams its share of
// the weights; longer inputs are split both ways. Within a task, rows go
// four at a time (each nibble dequantized once for four FMAs), the
// remaining one to three rows by a kernel of that many rows. A task's
// column chunk of weights (K x 128 columns at K = 2048: 170 KB) stays in
// L2 while its row groups reuse it, and while the tasks after it (the row
// chunks of the same column chunk, in order) reuse it.
//
// A prompt of kGemmRows rows or more (f32 activations) runs on the f32 GEMM
// instead, reading the same records (lowerPrepackedMatMul with int4Block):
// each row block dequantizes a panel's K block into a stack buffer before
// its tiles (codegen/kernels/Int4Unpack.h). The row count picks the path
// at run time: each step has no tasks when the other path runs.
//
// With `activation_int8` a first step quantizes A's rows to int8 per block
// into a scratch buffer (codegen/kernels/Int4Int8Gemv.h), and the products
// run on the integer kernel over 8-column panels.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/GemmEmitter.h"
#include "codegen/kernels/Int4Gemv.h"
#include "codegen/kernels/Int4Int8Gemv.h"
#include "codegen/lower/OpLowerings.h"
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"
#include "codegen/lower/quantization/QuantizedGemmSupport.h"

#include "llvm/IR/Function.h"

#include <array>
#include <memory>
#include <sstream>

namespace onnxc::lower {
namespace {

constexpr int64_t kRowsPerTask = 16;
constexpr int64_t kColumnChunks = 16;
/// Rows from which f32 activations take the GEMM over dequantized panels.
constexpr int64_t kGemmRows = 16;
static_assert(kMaxInt4GemvRows == kMaxInt4Int8GemvRows, "one row grouping serves both kernels");

/// Panels in a group of the one-row kernels (their four weight streams).
constexpr int64_t kGroupPanels = 4;

struct Int4Plan {
  int64_t k = 0, n = 0, block = 0, lanes = 8, panels = 0, groups = 0, columnChunks = 0;
  Dim rows = 1;
  bool int8Activations = false;
  /// The zero-point code all columns share (Int4GemvSpec::uniformZero), or -1.
  int uniformZero = -1;
};

Int4Plan planOf(LoweringContext &ctx, const Node &node, const Tensor &weights) {
  Int4Plan plan;
  plan.k = weights.dims()[0];
  plan.n = weights.dims()[1];
  plan.block = node.getInt("block_size", 0);
  plan.int8Activations = node.getInt("activation_int8", 0) != 0;
  // The integer kernel's panels are 8 columns (256-bit int32 lanes).
  plan.lanes = plan.int8Activations ? 8 : ctx.gemmLanes();
  plan.panels = (plan.n + plan.lanes - 1) / plan.lanes;
  // Column chunk c holds groups [c * groups / chunks, (c + 1) * groups /
  // chunks): sizes differ by at most one group, and a thread's contiguous
  // run of chunks ends on a multiple of groups / threads. Chunks of whole
  // rounded-up sizes left a short last chunk, and 15 chunks at N = 5632 gave
  // one of two threads 20% more of the weights than the other.
  plan.groups = (plan.panels + kGroupPanels - 1) / kGroupPanels;
  plan.columnChunks = std::min(kColumnChunks, plan.groups);
  const Shape &a = node.operand(0)->shape();
  for (size_t i = 0; i + 1 < a.rank(); ++i)
    plan.rows = plan.rows * a[i];
  if (!plan.int8Activations) {
    const Value *w = node.operand(1), *zero = node.numOperands() > 3 ? node.operand(3) : nullptr;
    const Tensor *zeros = zero ? &requireConstant(ctx, node, zero, "weight zero point") : nullptr;
    plan.uniformZero =
        int4UniformZeroCode(zeros ? static_cast<const int8_t *>(zeros->rawData()) : nullptr,
                            w->dtype(), zeros ? zeros->numElements() : 0);
  }
  return plan;
}

/// The packed weights, shared by every node reading the same constants.
int32_t packedWeights(LoweringContext &ctx, const Node &node, const Int4Plan &plan) {
  const Value *w = node.operand(1), *scale = node.operand(2);
  const Value *zero = node.numOperands() > 3 ? node.operand(3) : nullptr;
  std::ostringstream key;
  key << "int4-gemv:" << w->name() << ":" << scale->name() << ":" << (zero ? zero->name() : "-")
      << ":b" << plan.block << ":l" << plan.lanes << (plan.int8Activations ? ":int8" : "");
  return ctx.sharedConstant(key.str(), [&] {
    const Tensor &codes = requireConstant(ctx, node, w, "weights");
    std::vector<float> scales = constantFloats(requireConstant(ctx, node, scale, "weight scale"));
    const Tensor *zeros = zero ? &requireConstant(ctx, node, zero, "weight zero point") : nullptr;
    const auto *codeData = static_cast<const int8_t *>(codes.rawData());
    const auto *zeroData = zeros ? static_cast<const int8_t *>(zeros->rawData()) : nullptr;
    auto bytes = std::make_shared<std::vector<uint8_t>>(
        plan.int8Activations ? packInt4Int8GemvWeights(codeData, codes.dtype(), scales.data(),
                                                       zeroData, plan.k, plan.n, plan.block)
                             : packInt4GemvWeights(codeData, codes.dtype(), scales.data(), zeroData,
                                                   plan.k, plan.n, plan.block, plan.lanes));
    return ConstantBytes(bytes);
  });
}

/// The f32 or the int8-activation kernel of `rows` rows.
llvm::Function *emitKernel(LoweringContext &ctx, const Int4Plan &plan, int64_t rows) {
  if (plan.int8Activations) {
    Int4Int8GemvSpec spec{"", plan.k, plan.n, plan.block, rows, ctx.integerGemmIsa()};
    spec.name = int4Int8GemvKernelName(spec);
    return emitInt4Int8Gemv(ctx.module(), spec);
  }
  Int4GemvSpec spec{"", plan.k, plan.n, plan.block, plan.lanes, rows, plan.uniformZero};
  spec.name = int4GemvKernelName(spec);
  return emitInt4Gemv(ctx.module(), spec);
}

/// A's rows quantized to int8 per block into a scratch buffer (chunks of
/// 16 rows a task); returns the buffer.
int32_t emitQuantizeStep(LoweringContext &ctx, const Node &node, const Int4Plan &plan) {
  const int64_t rowBytes = int4Int8RowBytes(plan.k, plan.block);
  const int32_t scratch = ctx.addScratch(plan.rows * Dim(rowBytes));
  std::ostringstream name;
  name << "int4_quantize_rows_k" << plan.k << "_b" << plan.block;
  llvm::Function *quantize = emitInt4RowQuantizer(ctx.module(), name.str(), plan.k, plan.block);
  quantize->setLinkage(llvm::GlobalValue::InternalLinkage);
  StepBuilder step = ctx.beginStep(node, "int4_quantize_rows");
  const unsigned aSlot = step.input(node.operand(0)), outSlot = step.bufferSlot(scratch);
  const Dim rows = plan.rows;
  KernelBuilder &kb = step.kernel();
  splitItemsAndRows(
      step, Dim(1), [rows](FunctionBuilder &f) { return f.dim(rows); },
      [](FunctionBuilder &f) { return f.i64(kRowsPerTask); },
      [&](llvm::Value *, llvm::Value *rowBegin, llvm::Value *rowEnd) {
        kb.ir().CreateCall(
            quantize, {kb.buffer(aSlot), kb.i64(plan.k), kb.buffer(outSlot), rowBegin, rowEnd});
      });
  step.finish();
  return scratch;
}

/// Whether `rows` reach the GEMM path (i1).
llvm::Value *usesGemm(FunctionBuilder &f, const Dim &rows) {
  return f.ir().CreateICmpSGE(f.dim(rows), f.i64(kGemmRows));
}

/// The GEMM path: one step of the packed GEMM over the int4 records,
/// without tasks below kGemmRows rows.
void emitGemmStep(LoweringContext &ctx, const Node &node, const Int4Plan &plan, int32_t packed) {
  PrepackedProduct product;
  product.node = &node;
  product.a = node.operand(0);
  product.result = node.result(0);
  product.rows = plan.rows;
  product.k = plan.k;
  product.n = plan.n;
  product.ldc = plan.n;
  product.packedB = packed;
  product.blocking = int4GemmBlocking(plan.k, plan.lanes, plan.block);
  product.int4Block = plan.block;
  const Dim rows = plan.rows;
  product.enabled = [rows](FunctionBuilder &f) { return usesGemm(f, rows); };
  product.stepName = "int4_gemm";
  lowerPrepackedMatMul(ctx, product);
}

/// The GEMV path: row groups of up to four times column chunks; without
/// tasks from kGemmRows rows when `gemm` (the GEMM path) is there too.
void emitGemvStep(LoweringContext &ctx, const Node &node, const Int4Plan &plan, int32_t packed,
                  bool gemm) {
  std::optional<int64_t> constantRows = plan.rows.constant();
  // Kernels of 1 to 4 rows: only those the row count can need.
  std::array<llvm::Function *, kMaxInt4GemvRows + 1> kernels{};
  for (int64_t r = 1; r <= kMaxInt4GemvRows; ++r) {
    if (constantRows && r != std::min(*constantRows, kMaxInt4GemvRows) &&
        r != *constantRows % kRowsPerTask % kMaxInt4GemvRows)
      continue;
    kernels[size_t(r)] = emitKernel(ctx, plan, r);
    kernels[size_t(r)]->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  const int32_t quantized = plan.int8Activations ? emitQuantizeStep(ctx, node, plan) : -1;

  StepBuilder step = ctx.beginStep(node, "int4_gemv");
  const unsigned aSlot = quantized >= 0 ? step.bufferSlot(quantized) : step.input(node.operand(0));
  const unsigned weightsSlot = step.bufferSlot(packed);
  const unsigned resultSlot = step.output(node.result(0));
  const Dim rows = plan.rows;
  const int64_t columnChunks = plan.columnChunks;
  auto chunkCount = [rows, columnChunks, gemm](FunctionBuilder &f) {
    llvm::Value *count =
        f.ir().CreateMul(f.ceilDiv(f.dim(rows), f.i64(kRowsPerTask)), f.i64(columnChunks));
    return gemm ? f.ir().CreateSelect(usesGemm(f, rows), f.i64(0), count) : count;
  };
  KernelBuilder &kb = step.kernel();
  llvm::IRBuilder<> &ir = kb.ir();
  llvm::Value *rowCount = kb.dim(rows);
  llvm::Value *rowChunks = kb.ceilDiv(rowCount, kb.i64(kRowsPerTask));
  splitItemsAndChunks(
      step, Dim(1), chunkCount, [&](llvm::Value *, llvm::Value *first, llvm::Value *last) {
        kb.forRange(
            first, last,
            [&](llvm::Value *chunk) {
              // Column chunk by column chunk: a thread's run of tasks reads
              // each chunk of weights from memory once, then from L2 for
              // every row chunk after the first.
              llvm::Value *columnChunk = ir.CreateSDiv(chunk, rowChunks);
              llvm::Value *rowChunk = ir.CreateSRem(chunk, rowChunks);
              auto firstPanel = [&](llvm::Value *c) {
                llvm::Value *group =
                    ir.CreateSDiv(ir.CreateMul(c, kb.i64(plan.groups)), kb.i64(plan.columnChunks));
                return ir.CreateMul(group, kb.i64(kGroupPanels));
              };
              llvm::Value *panelBegin = firstPanel(columnChunk);
              llvm::Value *panelEnd =
                  kb.min(kb.i64(plan.panels), firstPanel(ir.CreateAdd(columnChunk, kb.i64(1))));
              llvm::Value *rowBegin = ir.CreateMul(rowChunk, kb.i64(kRowsPerTask));
              llvm::Value *rowEnd = kb.min(rowCount, ir.CreateAdd(rowBegin, kb.i64(kRowsPerTask)));
              auto call = [&](int64_t r, llvm::Value *row) {
                llvm::Value *y = kb.elementAddress(DType::F32, kb.buffer(resultSlot),
                                                   ir.CreateMul(row, kb.i64(plan.n)));
                if (plan.int8Activations) {
                  llvm::Value *xq = kb.elementAddress(
                      DType::U8, kb.buffer(aSlot),
                      ir.CreateMul(row, kb.i64(int4Int8RowBytes(plan.k, plan.block))));
                  ir.CreateCall(kernels[size_t(r)], {xq, kb.buffer(weightsSlot), y, kb.i64(plan.n),
                                                     panelBegin, panelEnd});
                  return;
                }
                llvm::Value *x = kb.elementAddress(DType::F32, kb.buffer(aSlot),
                                                   ir.CreateMul(row, kb.i64(plan.k)));
                ir.CreateCall(kernels[size_t(r)], {x, kb.i64(plan.k), kb.buffer(weightsSlot), y,
                                                   kb.i64(plan.n), panelBegin, panelEnd});
              };
              llvm::Value *groups =
                  ir.CreateSDiv(ir.CreateSub(rowEnd, rowBegin), kb.i64(kMaxInt4GemvRows));
              llvm::Value *groupedEnd =
                  ir.CreateAdd(rowBegin, ir.CreateMul(groups, kb.i64(kMaxInt4GemvRows)));
              if (kernels[kMaxInt4GemvRows])
                kb.forRange(
                    rowBegin, groupedEnd, [&](llvm::Value *row) { call(kMaxInt4GemvRows, row); },
                    kMaxInt4GemvRows, "rows");
              llvm::Value *left = ir.CreateSub(rowEnd, groupedEnd);
              for (int64_t r = 1; r < kMaxInt4GemvRows; ++r)
                if (kernels[size_t(r)])
                  kb.ifThen(ir.CreateICmpEQ(left, kb.i64(r)), [&] { call(r, groupedEnd); });
            },
            1, "chunk");
      });
  step.finish();
}

void lowerBlockQuantizedMatMul(LoweringContext &ctx, const Node &node) {
  const Value *w = node.operand(1);
  const Tensor &weights = requireConstant(ctx, node, w, "weights");
  if (!isFourBit(weights.dtype()) || weights.rank() != 2)
    ctx.unsupported(node, "the weights must be a constant i4/u4 [K, N] matrix");
  const Int4Plan plan = planOf(ctx, node, weights);
  const int32_t packed = packedWeights(ctx, node, plan);
  std::optional<int64_t> constantRows = plan.rows.constant();
  const bool gemm =
      !plan.int8Activations && ctx.hasAvx2Fma() && (!constantRows || *constantRows >= kGemmRows);
  if (gemm)
    emitGemmStep(ctx, node, plan, packed);
  if (!gemm || !constantRows)
    emitGemvStep(ctx, node, plan, packed, gemm);
}

} // namespace

void registerBlockQuantizedMatMulLowerings(LoweringTable &table) {
  table.add(OpKind::BlockQuantizedMatMul, lowerBlockQuantizedMatMul);
}

} // namespace onnxc::lower
