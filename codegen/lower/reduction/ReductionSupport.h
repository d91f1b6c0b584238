//===- codegen/lower/reduction/ReductionSupport.h - Shared by reductions and norms -===//
//
// Internal to the reduction and normalization lowerings: how their steps
// split work into tasks, small dim arithmetic, and the f32 vector loops of
// the Reduce* fast paths (ReductionVectorLoops.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/LoweringContext.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace onnxc::lower {

/// Elements of work a task should get so that a parallel step pays for the
/// dispatch to the pool, and a small step stays one inline task.
constexpr int64_t kTaskWork = 16384;

/// Splits [0, items) into tasks of about kTaskWork elements, each item
/// costing `itemCost` elements, and returns the calling task's item range
/// [begin, end). Call it before emitting the rest of the kernel body.
std::pair<llvm::Value *, llvm::Value *> splitByWork(StepBuilder &step, const SymbolicValue &items,
                                                    const SymbolicValue &itemCost);
std::pair<llvm::Value *, llvm::Value *> splitByWork(StepBuilder &step, const Dim &items,
                                                    const Dim &itemCost);

/// Product of dims [begin, end) of `shape` (1 for an empty range).
Dim dimProduct(const Shape &shape, size_t begin, size_t end);

/// A possibly negative axis of a rank-`rank` tensor, in [0, rank), or
/// ctx.unsupported naming the node.
int64_t normalizedAxis(const LoweringContext &ctx, const Node &node, int64_t axis, int64_t rank);

/// Whether a result must be computed: something reads it or it is a graph
/// output.
bool isResultNeeded(const LoweringContext &ctx, const Value *result);

/// Whether `dim` is the constant `value`.
inline bool isConstantDim(const Dim &dim, int64_t value) {
  return dim.constant() == std::optional<int64_t>(value);
}

// ---- lowerings registered by ReductionLowering.cpp -----------------------

/// ArgMax, ArgMin, CumSum and CumProd (ArgReduceAndCumSumLowering.cpp).
void lowerArgMax(LoweringContext &ctx, const Node &node);
void lowerArgMin(LoweringContext &ctx, const Node &node);
void lowerCumulative(LoweringContext &ctx, const Node &node);

// ---- f32 vector loops (ReductionVectorLoops.cpp) --------------------------

/// L1, L2, SumSquare and LogSumExp take the scalar path only.
enum class ReduceKind { Sum, Mean, Prod, Max, Min, L1, L2, SumSquare, LogSumExp };

/// Reduces the contiguous f32 row [base, base + length) with <8 x float>
/// accumulators: Sum/Mean return the sum as a double (partial sums are
/// flushed into double every 1024 elements), Max/Min the float extreme
/// (NaN if any element is NaN).
llvm::Value *emitContiguousReduce(KernelBuilder &k, ReduceKind kind, llvm::Value *base,
                                  llvm::Value *length);

/// Reduces the f32 column block [column, column + 32) of an [rows, rowStride]
/// matrix at `base` over its rows and stores the 32 results (as float, Mean
/// divided by `rows`) at `out + column`. Columns at or past `columns` are
/// neither read nor written.
void emitColumnBlockReduce(KernelBuilder &k, ReduceKind kind, llvm::Value *base, llvm::Value *out,
                           llvm::Value *rows, llvm::Value *rowStride, llvm::Value *column,
                           llvm::Value *columns);

/// Columns per work item of emitColumnBlockReduce.
constexpr int64_t kColumnBlock = 32;

} // namespace onnxc::lower
