//===- codegen/lower/linearalgebra/GemmKernelLowering.cpp - f32 MatMul/Gemm on the GEMM -===//
//
// The two fast paths of an f32 MatMul/Gemm (AVX2+FMA), both calling a
// kernel of codegen/kernels/GemmEmitter.h from the step kernel per item and row
// range of a task:
//
//   constant B  packed at compile time (alpha folded in) into a constant
//               buffer; a [N] / [1, N] C becomes the bias epilogue and an
//               [M, N] C the residual epilogue (beta folded in when C is a
//               constant, or beta = 1); any other C is added after.
//   runtime B   packed by each task into a stack buffer of at most
//               kMaxPackFloats; wider B is processed in column blocks,
//               deeper B (K > 4096) goes to the loop nest at run time.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"

#include "codegen/kernels/Bf16Gemm.h"
#include "codegen/kernels/GemmEmitter.h"
#include "codegen/kernels/GemmPacking.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <sstream>

namespace onnxc::lower {
namespace {

llvm::Value *nullPointer(FunctionBuilder &f) {
  return llvm::ConstantPointerNull::get(llvm::PointerType::getUnqual(f.context()));
}

llvm::Value *floatAddress(FunctionBuilder &f, llvm::Value *base, llvm::Value *offset) {
  return f.elementAddress(DType::F32, base, offset);
}

/// Shared by both paths: tasks over items x row chunks.
RowsFn rowsOf(const MatMulProblem &problem) {
  Dim rows = problem.m;
  return [rows](FunctionBuilder &f) { return f.dim(rows); };
}

RowsFn chunkRowsOf(const MatMulProblem &problem, int64_t minRows, int64_t maxRows,
                   int64_t tileRows) {
  Dim items = problem.items(), rows = problem.m;
  return [=](FunctionBuilder &f) {
    return chunkRows(f, f.dim(items), f.dim(rows), minRows, maxRows, tileRows);
  };
}

/// The column chunks of a packed GEMM whose rows make one task: whole
/// groups of four panels, about 8 panels (256 columns at 16 lanes) each and
/// at most 16 chunks. A decoder's step (M = 1) is a GEMV bound by reading B;
/// split by rows it would run on one thread, split by columns every thread
/// reads its share.
struct ColumnChunks {
  int64_t count = 1, panels = 0;
};
ColumnChunks columnChunksOf(int64_t n, int64_t nr) {
  constexpr int64_t kPanelsPerChunk = 8, kMaxChunks = 16, kGroup = 4;
  const int64_t panels = (n + nr - 1) / nr;
  const int64_t wanted = std::clamp<int64_t>(panels / kPanelsPerChunk, 1, kMaxChunks);
  ColumnChunks chunks;
  chunks.panels = ((panels + wanted - 1) / wanted + kGroup - 1) / kGroup * kGroup;
  chunks.count = (panels + chunks.panels - 1) / chunks.panels;
  return chunks;
}

/// The most rows a step splits by columns rather than rows. Split by rows,
/// every thread streams all of B for its rows: a decoder's batched step (8
/// rows in tiles of 6) read B once per thread, on one thread 6 rows and on the
/// other 2. Split by columns, each thread reads its share of B once and
/// computes every row of it; A (these few rows) is what is read again.
constexpr int64_t kColumnSplitRows = 32;

/// Runs the step as items x chunks (splitItemsAndChunks), by rows as
/// splitItemsAndRows, except that an item of at most kColumnSplitRows rows
/// (or whose rows make one chunk) is split into `columns` instead, when
/// there is more than one:
/// body(item, rowBegin, rowEnd, colBegin, colEnd) per item of a task range.
/// With `enabled`, the step has no tasks where it is false.
void splitItemsRowsOrColumns(StepBuilder &step, const MatMulProblem &problem,
                             const RowsFn &rowsPerChunk, ColumnChunks columns, int64_t n,
                             int64_t nr,
                             llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *,
                                                     llvm::Value *, llvm::Value *)>
                                 body,
                             const RowsFn &enabled = nullptr) {
  Dim rows = problem.m;
  auto rowChunks = [rows, rowsPerChunk](FunctionBuilder &f) {
    return f.max(f.i64(1), f.ceilDiv(f.dim(rows), rowsPerChunk(f)));
  };
  auto splitByColumns = [rows, rowChunks, columns](FunctionBuilder &f) {
    llvm::Value *oneChunk = f.ir().CreateICmpEQ(rowChunks(f), f.i64(1));
    if (columns.count == 1)
      return oneChunk;
    return f.ir().CreateOr(oneChunk, f.ir().CreateICmpSLE(f.dim(rows), f.i64(kColumnSplitRows)));
  };
  auto chunkCount = [rowChunks, columns, splitByColumns, enabled](FunctionBuilder &f) {
    llvm::Value *count = f.ir().CreateSelect(splitByColumns(f), f.i64(columns.count), rowChunks(f));
    return enabled ? f.ir().CreateSelect(enabled(f), count, f.i64(0)) : count;
  };
  KernelBuilder &k = step.kernel();
  llvm::IRBuilder<> &ir = k.ir();
  llvm::Value *rowCount = k.dim(rows), *perChunk = rowsPerChunk(k);
  llvm::Value *byColumns = splitByColumns(k);
  llvm::Value *chunkColumns = k.i64(columns.panels * nr);
  splitItemsAndChunks(
      step, problem.items(), chunkCount,
      [&](llvm::Value *item, llvm::Value *first, llvm::Value *last) {
        llvm::Value *rowBegin = ir.CreateSelect(byColumns, k.i64(0), ir.CreateMul(first, perChunk));
        llvm::Value *rowEnd =
            ir.CreateSelect(byColumns, rowCount, k.min(rowCount, ir.CreateMul(last, perChunk)));
        llvm::Value *colBegin =
            ir.CreateSelect(byColumns, ir.CreateMul(first, chunkColumns), k.i64(0));
        llvm::Value *colEnd =
            ir.CreateSelect(byColumns, k.min(k.i64(n), ir.CreateMul(last, chunkColumns)), k.i64(n));
        k.ifThen(
            ir.CreateAnd(ir.CreateICmpSLT(rowBegin, rowEnd), ir.CreateICmpSLT(colBegin, colEnd)),
            [&] { body(item, rowBegin, rowEnd, colBegin, colEnd); });
      });
}

/// Rows per task of a packed GEMM: the fewest whole tiles of `mr` rows whose
/// pass over the [k, n] B still does >= 64K multiply-adds, at most maxRows.
int64_t packedTaskRows(int64_t k, int64_t n, int64_t mr, int64_t maxRows) {
  return std::clamp<int64_t>((65536 / (k * n) + mr - 1) / mr * mr, mr, maxRows);
}

/// How Gemm's C reaches the packed kernel.
struct PackedBias {
  GemmEpilogue epilogue;
  /// Slot of the (folded) bias or residual, or of C for the post-pass.
  unsigned slot = ~0u;
  bool postPass = false;
};

std::shared_ptr<std::vector<uint8_t>> floatBytes(const std::vector<float> &values) {
  auto bytes = std::make_shared<std::vector<uint8_t>>(values.size() * sizeof(float));
  std::memcpy(bytes->data(), values.data(), bytes->size());
  return bytes;
}

PackedBias planPackedBias(LoweringContext &ctx, StepBuilder &step, const MatMulProblem &problem) {
  PackedBias plan;
  if (!problem.c)
    return plan;
  bool row = problem.cRows.constant() == 1 && problem.cCols.provablyEqual(problem.n);
  bool full =
      !row && problem.cRows.provablyEqual(problem.m) && problem.cCols.provablyEqual(problem.n);
  const Tensor *constant = ctx.constantValue(problem.c);
  bool folded = constant && constant->hasData();
  if (!(row || full) || !(folded || problem.beta == 1)) {
    plan.postPass = true;
    plan.slot = step.input(problem.c);
    return plan;
  }
  plan.epilogue.bias = row;
  plan.epilogue.residual = full;
  if (!folded) {
    plan.slot = step.input(problem.c);
    return plan;
  }
  std::vector<float> values(size_t(constant->numElements()));
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(problem.beta * constant->elementAsDouble(int64_t(i)));
  plan.slot = step.constant(ConstantBytes(floatBytes(values)));
  return plan;
}

/// B's values with alpha folded in (`weights` itself when alpha is 1).
const float *scaledWeights(const MatMulProblem &problem, const Tensor &weights,
                           std::vector<float> &scaled) {
  const float *source = weights.data<float>();
  if (problem.alpha == 1)
    return source;
  scaled.assign(source, source + weights.numElements());
  for (float &v : scaled)
    v = float(problem.alpha * v);
  return scaled.data();
}

/// B (every batch item, alpha folded in) in the packed layout.
std::shared_ptr<std::vector<uint8_t>> packWeights(const MatMulProblem &problem,
                                                  const Tensor &weights, int64_t k, int64_t n,
                                                  const GemmBlocking &blocking) {
  const int64_t itemFloats = packedGemmWeightsSize(k, n, blocking.nr());
  const int64_t items = weights.numElements() / (k * n);
  std::vector<float> scaled;
  const float *source = scaledWeights(problem, weights, scaled);
  auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(items * itemFloats) * sizeof(float));
  auto *packed = reinterpret_cast<float *>(bytes->data());
  for (int64_t i = 0; i < items; ++i)
    packGemmWeights(source + i * k * n, k, n, problem.transB, blocking, packed + i * itemFloats);
  return bytes;
}

/// The same in bf16 (Bf16Gemm.h's layout), every value rounded to nearest even.
std::shared_ptr<std::vector<uint8_t>> packBf16Weights(const MatMulProblem &problem,
                                                      const Tensor &weights, int64_t k, int64_t n) {
  const int64_t itemValues = bf16GemmPackedSize(k, n);
  const int64_t items = weights.numElements() / (k * n);
  std::vector<float> scaled;
  const float *source = scaledWeights(problem, weights, scaled);
  auto bytes = std::make_shared<std::vector<uint8_t>>(size_t(items * itemValues) * 2);
  for (int64_t i = 0; i < items; ++i) {
    std::vector<uint16_t> item = packBf16GemmWeights(source + i * k * n, k, n, problem.transB);
    std::memcpy(bytes->data() + i * itemValues * 2, item.data(), item.size() * 2);
  }
  return bytes;
}

/// The shared constant's key of packed B: the weight value and everything
/// the packing depends on.
std::string packedWeightsKey(const MatMulProblem &problem, int64_t k, int64_t n,
                             const GemmBlocking &blocking) {
  std::ostringstream key;
  key << "packed-gemm-weights:" << problem.b->name() << ":k" << k << ":n" << n << ":kc"
      << blocking.kc << ":nr" << blocking.nr() << (problem.transB ? ":t" : "") << ":alpha"
      << std::hexfloat << problem.alpha;
  return key.str();
}

/// Declares the graph nodes fused into the GEMM's store (a Gemm's C is
/// `bias` already), names the step after them, and returns the residual's
/// slot (~0u: none).
unsigned declareFusedEpilogue(StepBuilder &step, const MatMulProblem &problem, PackedBias &bias) {
  unsigned residualSlot = ~0u;
  const FusedEpilogue &fused = problem.fused;
  if (!fused.empty()) {
    if (fused.bias) {
      bias.epilogue.bias = true;
      bias.slot = step.input(fused.bias);
    }
    bias.epilogue.activation = fused.activation;
    if (fused.residual) {
      bias.epilogue.residual = true;
      residualSlot = step.input(fused.residual);
    }
    std::string ops(problem.node->opName()),
        names = problem.node->name().empty() ? "" : " " + problem.node->name();
    for (const Node *node : fused.nodes) {
      ops += "+" + std::string(node->opName());
      if (!node->name().empty())
        names += " " + node->name();
    }
    step.setName(ops + names);
  } else if (bias.epilogue.residual) {
    residualSlot = bias.slot;
  }
  return residualSlot;
}

/// The run-time GEMM kernel's spec: specialized to K when it is known, and
/// to N when B is packed whole (`wholeB`).
RuntimeGemmSpec runtimeGemmSpec(LoweringContext &ctx, const MatMulProblem &problem, bool wholeB) {
  std::optional<int64_t> kConstant = problem.k.constant(), nConstant = problem.n.constant();
  RuntimeGemmSpec spec;
  spec.name = ctx.uniqueName("gemm_runtime_kernel");
  spec.k = kConstant.value_or(0);
  spec.n = wholeB ? *nConstant : 0;
  spec.transposedB = problem.transB;
  spec.blocking.lanes = ctx.gemmLanes();
  if (kConstant)
    spec.blocking = chooseGemmBlocking(*kConstant, ctx.gemmLanes());
  return spec;
}

/// Columns of B packed per block: all of them when B is packed whole, else
/// the widest multiple of nr whose panels fit the pack buffer.
llvm::Value *runtimeBlockColumns(KernelBuilder &kb, llvm::Value *depth, llvm::Value *n, int64_t nr,
                                 bool wholeB, int64_t packFloats) {
  llvm::IRBuilder<> &ir = kb.ir();
  llvm::Value *blockColumns = kb.i64(packFloats);
  if (!wholeB) {
    llvm::Value *fit = ir.CreateSDiv(kb.i64(kMaxPackFloats), kb.max(depth, kb.i64(1)));
    fit = kb.max(kb.i64(nr), ir.CreateMul(ir.CreateSDiv(fit, kb.i64(nr)), kb.i64(nr)));
    blockColumns = kb.min(fit, ir.CreateMul(kb.ceilDiv(n, kb.i64(nr)), kb.i64(nr)));
  }
  return blockColumns;
}

} // namespace

namespace {

/// The kernel of a packed MatMul and what its tasks and offsets depend on:
/// the f32 GEMM, or at --precision=bf16 the bf16 one.
struct PackedKernel {
  llvm::Function *function = nullptr;
  unsigned weightsSlot = 0;
  DType packedType = DType::F32;
  /// Columns per packed panel, rows per task unit, the most rows per task,
  /// and the packed elements of one [k, n] item.
  int64_t nr = 0, tileRows = 0, maxTaskRows = 0, itemElements = 0;
};

PackedKernel emitPackedKernel(LoweringContext &ctx, StepBuilder &step, const MatMulProblem &problem,
                              const Tensor &weights, const GemmEpilogue &epilogue) {
  const int64_t k = *problem.k.constant(), n = *problem.n.constant();
  PackedKernel kernel;
  if (std::optional<Bf16GemmIsa> isa = ctx.bf16GemmIsa()) {
    std::string key = packedWeightsKey(problem, k, n, GemmBlocking{}) + ":bf16";
    kernel.weightsSlot = step.bufferSlot(ctx.sharedConstant(
        key, [&] { return ConstantBytes(packBf16Weights(problem, weights, k, n)); }));
    Bf16GemmSpec spec{ctx.uniqueName("gemm_bf16_kernel"), k, n, epilogue, *isa};
    kernel.function = emitBf16Gemm(ctx.module(), spec);
    kernel.packedType = DType::BF16;
    kernel.nr = Bf16GemmPanelColumns;
    // Whole AMX tiles (32 rows) where the kernel has them.
    kernel.tileRows = *isa == Bf16GemmIsa::Amx ? 32 : 12;
    kernel.maxTaskRows = bf16GemmBlockRows(k);
    kernel.itemElements = bf16GemmPackedSize(k, n);
    requireBf16GemmFeatures(ctx, *isa);
  } else {
    const GemmBlocking blocking = chooseGemmBlocking(k, ctx.gemmLanes());
    kernel.weightsSlot =
        step.bufferSlot(ctx.sharedConstant(packedWeightsKey(problem, k, n, blocking), [&] {
          return ConstantBytes(packWeights(problem, weights, k, n, blocking));
        }));
    PackedGemmSpec spec{ctx.uniqueName("gemm_packed_kernel"), k, n, epilogue, blocking};
    kernel.function = emitPackedGemm(ctx.module(), spec);
    kernel.nr = blocking.nr();
    kernel.tileRows = blocking.mr();
    kernel.maxTaskRows = blocking.mc;
    kernel.itemElements = packedGemmWeightsSize(k, n, blocking.nr());
  }
  kernel.function->setLinkage(llvm::GlobalValue::InternalLinkage);
  return kernel;
}

} // namespace

void requireBf16GemmFeatures(LoweringContext &ctx, Bf16GemmIsa isa) {
  if (isa == Bf16GemmIsa::Amx)
    ctx.requireCpuFeatures("avx512bf16,avx512bw,amx-tile,amx-bf16");
  else if (isa == Bf16GemmIsa::Avx512Bf16)
    ctx.requireCpuFeatures("avx512bf16,avx512bw");
}

void lowerPackedMatMul(LoweringContext &ctx, const MatMulProblem &problem, const Tensor &weights) {
  const int64_t k = *problem.k.constant(), n = *problem.n.constant();
  StepBuilder step = ctx.beginStep(*problem.node, "gemm_packed");
  MatMulSlots slots;
  slots.a = step.input(problem.a);
  slots.result = step.output(problem.result);
  PackedBias bias = planPackedBias(ctx, step, problem);
  if (bias.postPass)
    slots.c = bias.slot;
  unsigned residualSlot = declareFusedEpilogue(step, problem, bias);
  PackedKernel kernel = emitPackedKernel(ctx, step, problem, weights, bias.epilogue);
  slots.b = kernel.weightsSlot;

  // Tasks of the fewest rows (whole tiles) such that a pass over the packed
  // B still does >= 64K multiply-adds. A thread's consecutive tasks merge
  // into one row range (one pass over B per mc rows), so small tasks cost
  // nothing and balance the threads: with M=128 on 2 threads, 24-row tasks
  // split 72/56 rows, 6-row tasks 66/62 (-7% MiniLM latency; -8% at M=512).
  const int64_t mr = kernel.tileRows;
  const int64_t taskRows = packedTaskRows(k, n, mr, kernel.maxTaskRows);
  KernelBuilder &kb = step.kernel();
  llvm::IRBuilder<> &ir = kb.ir();
  // A post pass over C's rows would run once per column chunk: no columns.
  const ColumnChunks columns = bias.postPass ? ColumnChunks{1, (n + kernel.nr - 1) / kernel.nr}
                                             : columnChunksOf(n, kernel.nr);
  splitItemsRowsOrColumns(
      step, problem, chunkRowsOf(problem, taskRows, taskRows, mr), columns, n, kernel.nr,
      [&](llvm::Value *item, llvm::Value *rowBegin, llvm::Value *rowEnd, llvm::Value *colBegin,
          llvm::Value *colEnd) {
        ItemOffsets offsets = itemOffsets(kb, problem, item);
        // B's item offset counts raw [k, n] items; the packed ones are padded.
        llvm::Value *packedOffset =
            ir.CreateMul(ir.CreateSDiv(offsets.b, kb.i64(k * n)), kb.i64(kernel.itemElements));
        llvm::Value *biasPointer = nullPointer(kb), *residualPointer = nullPointer(kb);
        if (bias.epilogue.bias)
          biasPointer = kb.buffer(bias.slot);
        if (bias.epilogue.residual)
          residualPointer = floatAddress(kb, kb.buffer(residualSlot), offsets.result);
        ir.CreateCall(kernel.function,
                      {floatAddress(kb, kb.buffer(slots.a), offsets.a), kb.i64(k),
                       kb.elementAddress(kernel.packedType, kb.buffer(slots.b), packedOffset),
                       floatAddress(kb, kb.buffer(slots.result), offsets.result), kb.i64(n),
                       rowBegin, rowEnd, biasPointer, residualPointer, kb.i64(n), colBegin,
                       colEnd});
        if (bias.postPass)
          emitGemmScaleAndBias(kb, problem, slots, 1.0, rowBegin, rowEnd);
      });
  step.finish();
}

void lowerPrepackedMatMul(LoweringContext &ctx, const PrepackedProduct &product) {
  const GemmBlocking &blocking = product.blocking;
  const std::string name =
      "gemm_prepacked_k" + std::to_string(product.k) + "_n" + std::to_string(product.n) + "_kc" +
      std::to_string(blocking.kc) + "_l" + std::to_string(blocking.lanes) +
      (product.int4Block ? "_q4b" + std::to_string(product.int4Block) : std::string());
  llvm::Function *gemm = ctx.module().getFunction(name);
  if (!gemm) {
    gemm = emitPackedGemm(
        ctx.module(), PackedGemmSpec{name, product.k, product.n, {}, blocking, product.int4Block});
    gemm->setLinkage(llvm::GlobalValue::InternalLinkage);
  }
  MatMulProblem problem;
  problem.node = product.node;
  problem.a = product.a;
  problem.result = product.result;
  problem.m = product.rows;
  problem.k = product.k;
  problem.n = product.n;
  StepBuilder step = ctx.beginStep(*product.node, product.stepName);
  const unsigned aSlot = step.input(product.a), bSlot = step.bufferSlot(product.packedB);
  const unsigned resultSlot = step.output(product.result);
  const int64_t mr = blocking.mr(), nr = blocking.nr();
  const int64_t taskRows = packedTaskRows(product.k, product.n, mr, blocking.mc);
  KernelBuilder &kb = step.kernel();
  llvm::Value *nullValue = nullPointer(kb);
  splitItemsRowsOrColumns(
      step, problem, chunkRowsOf(problem, taskRows, taskRows, mr), columnChunksOf(product.n, nr),
      product.n, nr,
      [&](llvm::Value *, llvm::Value *rowBegin, llvm::Value *rowEnd, llvm::Value *colBegin,
          llvm::Value *colEnd) {
        llvm::Value *c = floatAddress(kb, kb.buffer(resultSlot), kb.i64(product.column0));
        kb.ir().CreateCall(gemm, {kb.buffer(aSlot), kb.i64(product.k), kb.buffer(bSlot), c,
                                  kb.i64(product.ldc), rowBegin, rowEnd, nullValue, nullValue,
                                  kb.i64(0), colBegin, colEnd});
      },
      product.enabled);
  step.finish();
}

void lowerRuntimeMatMul(LoweringContext &ctx, const MatMulProblem &problem) {
  std::optional<int64_t> kConstant = problem.k.constant(), nConstant = problem.n.constant();
  // With both dims known and small, B is packed whole by a kernel
  // specialized to them; otherwise in column blocks of run-time width.
  const int64_t nr = 2 * ctx.gemmLanes();
  const bool wholeB =
      kConstant && nConstant && packedGemmWeightsSize(*kConstant, *nConstant, nr) <= kMaxPackFloats;
  RuntimeGemmSpec spec = runtimeGemmSpec(ctx, problem, wholeB);
  const int64_t packFloats =
      wholeB ? packedGemmWeightsSize(*kConstant, *nConstant, nr) : kMaxPackFloats;

  StepBuilder step = ctx.beginStep(*problem.node, "gemm_runtime");
  MatMulSlots slots;
  slots.a = step.input(problem.a);
  slots.b = step.input(problem.b);
  if (problem.c)
    slots.c = step.input(problem.c);
  slots.result = step.output(problem.result);
  llvm::Function *gemm = emitRuntimeGemm(ctx.module(), spec);
  gemm->setLinkage(llvm::GlobalValue::InternalLinkage);

  KernelBuilder &kb = step.kernel();
  llvm::IRBuilder<> &ir = kb.ir();
  auto *packBuffer = kb.hoisted().CreateAlloca(
      llvm::ArrayType::get(ir.getFloatTy(), uint64_t(packFloats)), nullptr, "packB");
  packBuffer->setAlignment(llvm::Align(64));
  llvm::Value *depth = kb.dim(problem.k), *n = kb.dim(problem.n);
  llvm::Value *ldb = problem.transB ? depth : n;
  llvm::Value *blockColumns = runtimeBlockColumns(kb, depth, n, nr, wholeB, packFloats);
  const bool scaleOrBias = problem.isGemm && (problem.alpha != 1 || problem.c);

  // Packing B once per task is amortized over >= 48 rows.
  splitItemsAndRows(
      step, problem.items(), rowsOf(problem), chunkRowsOf(problem, 48, 0, spec.blocking.mr()),
      [&](llvm::Value *item, llvm::Value *rowBegin, llvm::Value *rowEnd) {
        ItemOffsets offsets = itemOffsets(kb, problem, item);
        auto runGemm = [&] {
          llvm::Value *rows = ir.CreateSub(rowEnd, rowBegin);
          llvm::Value *a = floatAddress(kb, kb.buffer(slots.a),
                                        ir.CreateAdd(offsets.a, ir.CreateMul(rowBegin, depth)));
          llvm::Value *b = floatAddress(kb, kb.buffer(slots.b), offsets.b);
          llvm::Value *c = floatAddress(kb, kb.buffer(slots.result),
                                        ir.CreateAdd(offsets.result, ir.CreateMul(rowBegin, n)));
          auto call = [&](llvm::Value *column, llvm::Value *width) {
            llvm::Value *bBlock =
                floatAddress(kb, b, problem.transB ? ir.CreateMul(column, depth) : column);
            ir.CreateCall(gemm,
                          {a, depth, kb.i64(0), bBlock, ldb, kb.i64(0), floatAddress(kb, c, column),
                           n, kb.i64(0), rows, depth, width, kb.i64(0), kb.i64(1), packBuffer});
          };
          if (wholeB) {
            call(kb.i64(0), n);
          } else {
            kb.forRange(
                kb.i64(0), kb.ceilDiv(n, blockColumns),
                [&](llvm::Value *block) {
                  llvm::Value *column = ir.CreateMul(block, blockColumns);
                  call(column, kb.min(blockColumns, ir.CreateSub(n, column)));
                },
                1, "block");
          }
          if (scaleOrBias)
            emitGemmScaleAndBias(kb, problem, slots, problem.alpha, rowBegin, rowEnd);
        };
        if (kConstant) {
          runGemm();
          return;
        }
        // K = 0 writes alpha * 0 + beta * C; a K too deep for the pack buffer
        // takes the loop nest (both are rare run-time shapes).
        llvm::Value *useLoops = ir.CreateOr(ir.CreateICmpEQ(depth, kb.i64(0)),
                                            ir.CreateICmpSGT(depth, kb.i64(kMaxRuntimeGemmDepth)));
        kb.ifThenElse(
            useLoops, [&] { emitMatMulLoopRows(kb, problem, slots, offsets, rowBegin, rowEnd); },
            runGemm);
      });
  step.finish();
}

} // namespace onnxc::lower
