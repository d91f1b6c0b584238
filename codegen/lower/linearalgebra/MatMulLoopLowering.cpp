//===- codegen/lower/linearalgebra/MatMulLoopLowering.cpp - MatMul/Gemm as a loop nest -===//
//
// The path for every dtype the evaluator takes, and for the shapes the GEMM
// kernels do not cover (Gemm transA, huge K, no AVX2). It accumulates the
// way ir/eval/LinearAlgebraKernels.cpp does, so results match it exactly or
// to the last rounding: floats (f16, bf16, f32, f64) in double, integers in
// wrapping i64 (MatMul) or in double (Gemm, which the evaluator computes in
// double for every dtype, alpha and beta included).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"

#include "ir/Node.h"

namespace onnxc::lower {
namespace {

/// How a product is accumulated: in double, or in wrapping i64.
bool accumulatesInDouble(const MatMulProblem &problem) {
  return isFloat(problem.dtype) || problem.isGemm;
}

/// 0 when `dim` is 1 (C broadcasts along it), else `index`.
llvm::Value *broadcastIndex(FunctionBuilder &f, const Dim &dim, llvm::Value *index) {
  if (std::optional<int64_t> value = dim.constant())
    return *value == 1 ? f.i64(0) : index;
  return f.ir().CreateSelect(f.ir().CreateICmpEQ(f.dim(dim), f.i64(1)), f.i64(0), index);
}

/// Element offset of C[row, col] broadcast to [m, n].
llvm::Value *biasOffset(FunctionBuilder &f, const MatMulProblem &problem, llvm::Value *row,
                        llvm::Value *col) {
  llvm::IRBuilder<> &ir = f.ir();
  return ir.CreateAdd(ir.CreateMul(broadcastIndex(f, problem.cRows, row), f.dim(problem.cCols)),
                      broadcastIndex(f, problem.cCols, col));
}

} // namespace

llvm::Value *widenForSum(FunctionBuilder &f, DType dtype, llvm::Value *value, bool toDouble) {
  llvm::IRBuilder<> &ir = f.ir();
  if (toDouble) {
    if (isFloat(dtype))
      return ir.CreateFPExt(value, ir.getDoubleTy());
    return isSignedInt(dtype) ? ir.CreateSIToFP(value, ir.getDoubleTy())
                              : ir.CreateUIToFP(value, ir.getDoubleTy());
  }
  return ir.CreateIntCast(value, ir.getInt64Ty(), isSignedInt(dtype));
}

llvm::Value *narrowSum(FunctionBuilder &f, DType dtype, llvm::Value *sum) {
  // double -> float -> half for the 16-bit floats, a C++ cast for integers,
  // truncation of the wrapped i64.
  llvm::IRBuilder<> &ir = f.ir();
  llvm::Type *target = f.computeType(dtype);
  if (!sum->getType()->isDoubleTy())
    return ir.CreateTrunc(sum, target);
  if (isFloat(dtype))
    return ir.CreateFPTrunc(sum, target);
  llvm::Value *wide = isSignedInt(dtype) ? ir.CreateFPToSI(sum, ir.getInt64Ty())
                                         : ir.CreateFPToUI(sum, ir.getInt64Ty());
  return ir.CreateTrunc(wide, target);
}

void emitMatMulLoopRows(KernelBuilder &k, const MatMulProblem &problem, const MatMulSlots &slots,
                        const ItemOffsets &offsets, llvm::Value *rowBegin, llvm::Value *rowEnd) {
  llvm::IRBuilder<> &ir = k.ir();
  const DType dtype = problem.dtype;
  const bool toDouble = accumulatesInDouble(problem);
  llvm::Value *a = k.buffer(slots.a), *b = k.buffer(slots.b), *y = k.buffer(slots.result);
  llvm::Value *c = slots.c != ~0u ? k.buffer(slots.c) : nullptr;
  llvm::Value *m = k.dim(problem.m), *depth = k.dim(problem.k), *n = k.dim(problem.n);
  llvm::Value *zero = toDouble ? llvm::ConstantFP::get(ir.getDoubleTy(), 0.0) : k.i64(0);
  k.forRange(
      rowBegin, rowEnd,
      [&](llvm::Value *row) {
        k.forRange(
            k.i64(0), n,
            [&](llvm::Value *col) {
              auto step = [&](llvm::Value *p, llvm::ArrayRef<llvm::Value *> sum) {
                llvm::Value *aIndex = problem.transA ? ir.CreateAdd(ir.CreateMul(p, m), row)
                                                     : ir.CreateAdd(ir.CreateMul(row, depth), p);
                llvm::Value *bIndex = problem.transB ? ir.CreateAdd(ir.CreateMul(col, depth), p)
                                                     : ir.CreateAdd(ir.CreateMul(p, n), col);
                llvm::Value *x = widenForSum(
                    k, dtype, k.loadElement(dtype, a, ir.CreateAdd(offsets.a, aIndex)), toDouble);
                llvm::Value *w = widenForSum(
                    k, dtype, k.loadElement(dtype, b, ir.CreateAdd(offsets.b, bIndex)), toDouble);
                llvm::Value *next = toDouble ? ir.CreateFAdd(sum[0], ir.CreateFMul(x, w))
                                             : ir.CreateAdd(sum[0], ir.CreateMul(x, w));
                return std::vector<llvm::Value *>{next};
              };
              llvm::Value *sum = k.forRangeCarried(k.i64(0), depth, {zero}, step, 1, "p")[0];
              if (problem.isGemm) {
                // alpha * sum + beta * C, in double like the evaluator.
                auto constant = [&](double v) {
                  return llvm::ConstantFP::get(ir.getDoubleTy(), v);
                };
                sum = ir.CreateFMul(constant(problem.alpha), sum);
                llvm::Value *bias = constant(0.0);
                if (c) {
                  llvm::Value *cValue = k.loadElement(dtype, c, biasOffset(k, problem, row, col));
                  bias = ir.CreateFMul(constant(problem.beta), widenForSum(k, dtype, cValue, true));
                }
                sum = ir.CreateFAdd(sum, bias);
              }
              llvm::Value *index =
                  ir.CreateAdd(offsets.result, ir.CreateAdd(ir.CreateMul(row, n), col));
              k.storeElement(dtype, narrowSum(k, dtype, sum), y, index);
            },
            1, "j");
      },
      1, "r");
}

void emitGemmScaleAndBias(KernelBuilder &k, const MatMulProblem &problem, const MatMulSlots &slots,
                          double alpha, llvm::Value *rowBegin, llvm::Value *rowEnd) {
  llvm::IRBuilder<> &ir = k.ir();
  llvm::Value *y = k.buffer(slots.result);
  llvm::Value *c = slots.c != ~0u ? k.buffer(slots.c) : nullptr;
  llvm::Value *n = k.dim(problem.n);
  k.forRange(
      rowBegin, rowEnd,
      [&](llvm::Value *row) {
        k.forRange(
            k.i64(0), n,
            [&](llvm::Value *col) {
              llvm::Value *index = ir.CreateAdd(ir.CreateMul(row, n), col);
              llvm::Value *value = k.loadElement(DType::F32, y, index);
              if (alpha != 1)
                value = ir.CreateFMul(value, k.constant(DType::F32, alpha));
              if (c) {
                llvm::Value *bias = k.loadElement(DType::F32, c, biasOffset(k, problem, row, col));
                value =
                    ir.CreateFAdd(value, ir.CreateFMul(bias, k.constant(DType::F32, problem.beta)));
              }
              k.storeElement(DType::F32, value, y, index);
            },
            1, "j");
      },
      1, "r");
}

void splitMatMulLoopRows(
    StepBuilder &step, const MatMulProblem &problem,
    llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *)> body) {
  // About 16K multiply-adds per task when the work per row is known.
  int64_t minRows = 1;
  std::optional<int64_t> k = problem.k.constant(), n = problem.n.constant();
  if (k && n)
    minRows = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, *k * *n));
  Dim items = problem.items(), rows = problem.m;
  splitItemsAndRows(
      step, items, [rows](FunctionBuilder &f) { return f.dim(rows); },
      [items, rows, minRows](FunctionBuilder &f) {
        return chunkRows(f, f.dim(items), f.dim(rows), minRows, 0);
      },
      body);
}

void lowerMatMulLoops(LoweringContext &ctx, const MatMulProblem &problem) {
  StepBuilder step = ctx.beginStep(*problem.node, problem.isGemm ? "gemm_loops" : "matmul_loops");
  MatMulSlots slots;
  slots.a = step.input(problem.a);
  slots.b = step.input(problem.b);
  if (problem.c)
    slots.c = step.input(problem.c);
  slots.result = step.output(problem.result);
  splitMatMulLoopRows(
      step, problem, [&](llvm::Value *item, llvm::Value *rowBegin, llvm::Value *rowEnd) {
        KernelBuilder &kb = step.kernel();
        emitMatMulLoopRows(kb, problem, slots, itemOffsets(kb, problem, item), rowBegin, rowEnd);
      });
  step.finish();
}

} // namespace onnxc::lower
