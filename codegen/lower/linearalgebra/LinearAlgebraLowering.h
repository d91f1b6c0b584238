//===- codegen/lower/linearalgebra/LinearAlgebraLowering.h - MatMul/Gemm lowering pieces -===//
//
// Internal to the linear algebra lowerings. MatMul and Gemm are both planned
// as a MatMulProblem: a batch of items Y_i[m, n] = A_i[m, k] * B_i[k, n]
// (numpy-broadcast batch dims, stride 0 on broadcast axes), plus Gemm's
// transA/transB/alpha/beta*C. Three emitters share the problem and one task
// split (items x chunks of rows):
//
//   packed   f32, B a constant: B packed at compile time (GemmPacking.h)
//   runtime  f32, B computed:   packed per task into a bounded stack buffer
//   loops    every dtype:       a plain loop nest, accumulating like the
//                               evaluator (double for floats, wrapping i64)
//
// Einsum equations that are batched matrix products are planned as a
// MatMulProblem too; the rest get their own loop nest (EinsumLowering.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/kernels/GemmEmitter.h"
#include "codegen/lower/LoweringContext.h"

#include "llvm/ADT/STLFunctionalExtras.h"

#include <string>
#include <vector>

namespace onnxc::lower {

/// The runtime-B pack buffer: 256 KiB of a worker's 8 MiB stack (beside the
/// GEMM's own packed-A block of at most 120 KiB).
inline constexpr int64_t kMaxPackFloats = 65536;
/// The deepest runtime B whose 16-column panel fits the pack buffer; deeper
/// products take the loop nest.
inline constexpr int64_t kMaxRuntimeGemmDepth = kMaxPackFloats / 16;

/// Graph nodes after a MatMul that the packed GEMM computes in its store
/// (GemmEmitter's epilogue): result = act(A*B + bias) + residual.
struct FusedEpilogue {
  const Value *bias = nullptr; ///< [N] (or [1, N]) f32, added per column
  GemmActivation activation = GemmActivation::None;
  const Value *residual = nullptr; ///< shaped like the result, added last
  /// The absorbed nodes, in order (claimed from the lowering driver).
  std::vector<const Node *> nodes;
  bool empty() const { return nodes.empty(); }
};

/// One MatMul, Gemm or matrix-product Einsum, as its emitters see it.
struct MatMulProblem {
  const Node *node = nullptr;
  DType dtype = DType::F32;
  const Value *a = nullptr, *b = nullptr, *c = nullptr, *result = nullptr;
  /// The result's batch dims, and each operand's aligned to them (1 where
  /// the operand has no such axis). Empty when the batch was folded into m.
  std::vector<Dim> batchDims, aBatchDims, bBatchDims;
  Dim m = 1, k = 1, n = 1;
  // Gemm only (MatMul keeps the identity values).
  bool isGemm = false;
  bool transA = false, transB = false;
  double alpha = 1, beta = 1;
  /// C's shape left-padded to [cRows, cCols].
  Dim cRows = 1, cCols = 1;
  /// Add bias (MatMul, or Gemm without C), Relu or Gelu, then Add residual
  /// after it (views in between included), fused into the packed GEMM's
  /// store; `result` is then the last fused node's result.
  FusedEpilogue fused;

  /// Product of batchDims.
  Dim items() const;
};

/// Sets the problem's batch dims from A's and B's dims (matrices, 1-D
/// operands already promoted): the result's, and each operand's aligned to
/// them with numpy broadcasting (1 where the operand has no such axis).
void setBatchDims(LoweringContext &ctx, const Node &node, MatMulProblem &problem,
                  const std::vector<Dim> &aDims, const std::vector<Dim> &bDims);

/// With B unbatched, A's batch dims are the result's and A is contiguous:
/// they fold into the rows, so the GEMM sees one tall [batch*m, k] matrix.
void foldBatchIntoRows(MatMulProblem &problem);

/// Lowers a planned problem with the best emitter for it.
void lowerMatMulProblem(LoweringContext &ctx, const MatMulProblem &problem);

/// Element offsets of item `item` in A, B and the result.
struct ItemOffsets {
  llvm::Value *a, *b, *result;
};
ItemOffsets itemOffsets(FunctionBuilder &f, const MatMulProblem &problem, llvm::Value *item);

/// Rows per chunk for about 16 tasks over all items: a multiple of
/// `tileRows` (the kernel's register tile), at least `minRows`, at most
/// `maxRows` (when positive).
llvm::Value *chunkRows(FunctionBuilder &f, llvm::Value *items, llvm::Value *rows, int64_t minRows,
                       int64_t maxRows, int64_t tileRows = 6);

/// Runs the step as items x row chunks: sets the task count and emits, in
/// the kernel, body(item, rowBegin, rowEnd) for the task range, one call per
/// item (consecutive chunks of an item merge into one row range). `rows` and
/// `rowsPerChunk` compute the same values in both functions.
using RowsFn = std::function<llvm::Value *(FunctionBuilder &)>;
void splitItemsAndRows(StepBuilder &step, const Dim &items, const RowsFn &rows,
                       const RowsFn &rowsPerChunk,
                       llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *)> body);

/// Sets the task count to items x chunks (`chunks` computes the same value
/// in both functions) and emits, in the kernel, body(item, firstChunk,
/// lastChunk) once per item of the task range: a thread's consecutive
/// chunks of an item merge into one range [firstChunk, lastChunk).
void splitItemsAndChunks(
    StepBuilder &step, const Dim &items, const RowsFn &chunks,
    llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *)> body);

/// splitItemsAndRows for a loop nest: row chunks of about 16K multiply-adds
/// when K and N are known (else one row), body(item, rowBegin, rowEnd).
void splitMatMulLoopRows(
    StepBuilder &step, const MatMulProblem &problem,
    llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *)> body);

/// Buffer slots of a MatMul/Gemm step (c: ~0u when absent).
struct MatMulSlots {
  unsigned a = 0, b = 0, c = ~0u, result = 0;
};

/// Rows [rowBegin, rowEnd) of item `offsets` with the plain loop nest,
/// including Gemm's alpha and beta*C.
void emitMatMulLoopRows(KernelBuilder &k, const MatMulProblem &problem, const MatMulSlots &slots,
                        const ItemOffsets &offsets, llvm::Value *rowBegin, llvm::Value *rowEnd);

/// result[row, j] = alpha * result[row, j] + beta * C[...] (when slots.c is
/// set) over the rows, for an f32 Gemm whose GEMM kernel could not fuse them.
void emitGemmScaleAndBias(KernelBuilder &k, const MatMulProblem &problem, const MatMulSlots &slots,
                          double alpha, llvm::Value *rowBegin, llvm::Value *rowEnd);

/// An element (computeType(dtype)) widened to the accumulator: double, or
/// i64 by the dtype's signedness.
llvm::Value *widenForSum(FunctionBuilder &f, DType dtype, llvm::Value *value, bool toDouble);
/// An accumulator (double or i64) narrowed to computeType(dtype) the way
/// the evaluator stores it.
llvm::Value *narrowSum(FunctionBuilder &f, DType dtype, llvm::Value *sum);

/// The three lowerings of a planned problem.
void lowerMatMulLoops(LoweringContext &ctx, const MatMulProblem &problem);
/// Requires f32, !transA, constant K and N > 0, `weights` with data.
void lowerPackedMatMul(LoweringContext &ctx, const MatMulProblem &problem, const Tensor &weights);
/// C[:, column0 : column0 + n] (C `ldc` columns wide) = A[rows, k] * B, B
/// in plan buffer `packedB`, packed by an earlier step in GemmPacking.h's
/// layout for `blocking` or int4 records (`int4Block`): the packed GEMM's
/// tasks over rows or columns, no epilogue. Where `enabled` is false the step has no tasks (another
/// step of the node computes C then).
struct PrepackedProduct {
  const Node *node = nullptr;
  const Value *a = nullptr, *result = nullptr;
  Dim rows = 1;
  int64_t k = 0, n = 0, column0 = 0, ldc = 0;
  int32_t packedB = -1;
  GemmBlocking blocking;
  /// 0: packedB holds packed floats; otherwise the int4 GEMV's records with
  /// this quantization block (PackedGemmSpec::int4Block).
  int64_t int4Block = 0;
  RowsFn enabled;
  std::string stepName = "gemm_prepacked";
};
void lowerPrepackedMatMul(LoweringContext &ctx, const PrepackedProduct &product);
/// Records the CPU features the bf16 GEMM kernel `isa` uses (LoweringContext::requireCpuFeatures).
void requireBf16GemmFeatures(LoweringContext &ctx, Bf16GemmIsa isa);
/// Requires f32, !transA.
void lowerRuntimeMatMul(LoweringContext &ctx, const MatMulProblem &problem);

/// Einsum as a loop nest over the output and summed labels.
void lowerEinsum(LoweringContext &ctx, const Node &node);

} // namespace onnxc::lower
