//===- codegen/lower/linearalgebra/LinearAlgebraLowering.cpp - MatMul, Gemm, Einsum -===//
//
// Plans MatMul and Gemm as a MatMulProblem (shapes read exactly as
// ir/eval/LinearAlgebraKernels.cpp reads them) and picks the emitter:
// f32 with AVX2+FMA goes to the packed GEMM (constant B) or the runtime-B
// GEMM, everything else to the loop nest. Also the shared task split.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"

#include "codegen/kernels/GemmPacking.h"
#include "codegen/lower/OpLowerings.h"

#include <tuple>

namespace onnxc::lower {
namespace {

void requireKnownDims(LoweringContext &ctx, const Node &node, const Value *value) {
  if (!value->shape().isRanked())
    ctx.unsupported(node, "value '" + value->name() + "' has no known rank");
  for (const Dim &d : value->shape().dims())
    if (d.isUnknown())
      ctx.unsupported(node, "value '" + value->name() + "' has an unknown dim");
}

void requireNumericDType(LoweringContext &ctx, const Node &node, DType dtype) {
  if (!isFloat(dtype) && !isInteger(dtype))
    ctx.unsupported(node, std::string("element type ") + std::string(dtypeName(dtype)) +
                              " is not supported");
}

MatMulProblem planMatMul(LoweringContext &ctx, const Node &node) {
  MatMulProblem problem;
  problem.node = &node;
  problem.a = node.operand(0);
  problem.b = node.operand(1);
  problem.result = node.result(0);
  if (!problem.a || !problem.b)
    ctx.unsupported(node, "matmul needs two operands");
  for (const Value *v : {problem.a, problem.b, problem.result})
    requireKnownDims(ctx, node, v);
  problem.dtype = problem.a->dtype();
  requireNumericDType(ctx, node, problem.dtype);
  std::vector<Dim> aDims = problem.a->shape().dims(), bDims = problem.b->shape().dims();
  if (aDims.empty() || bDims.empty())
    ctx.unsupported(node, "matmul of a scalar");
  // 1-D operands are promoted to matrices; the unit dim is absent from the
  // result, which does not change its layout.
  if (aDims.size() == 1)
    aDims.insert(aDims.begin(), Dim(1));
  if (bDims.size() == 1)
    bDims.push_back(Dim(1));
  problem.m = aDims[aDims.size() - 2];
  const Dim &aK = aDims.back(), &bK = bDims[bDims.size() - 2];
  // Inference may have let a symbol meet a constant here; the runtime checks
  // that assumption (ir/shape/ShapeAssumption.h) before the run, so they are
  // equal, and the constant lets the packed GEMM apply.
  problem.k = bK.isConstant() ? bK : aK;
  problem.n = bDims.back();
  setBatchDims(ctx, node, problem, aDims, bDims);
  foldBatchIntoRows(problem);
  return problem;
}

MatMulProblem planGemm(LoweringContext &ctx, const Node &node) {
  MatMulProblem problem;
  problem.node = &node;
  problem.isGemm = true;
  problem.a = node.operand(0);
  problem.b = node.operand(1);
  problem.c = node.operand(2);
  problem.result = node.result(0);
  if (!problem.a || !problem.b)
    ctx.unsupported(node, "gemm needs operands A and B");
  for (const Value *v : {problem.a, problem.b, problem.result})
    requireKnownDims(ctx, node, v);
  problem.dtype = problem.a->dtype();
  requireNumericDType(ctx, node, problem.dtype);
  const Shape &a = problem.a->shape(), &b = problem.b->shape();
  if (a.rank() != 2 || b.rank() != 2)
    ctx.unsupported(node, "gemm operands must be matrices");
  problem.transA = node.getInt("transA", 0) != 0;
  problem.transB = node.getInt("transB", 0) != 0;
  problem.alpha = node.getFloat("alpha", 1.0f);
  problem.beta = node.getFloat("beta", 1.0f);
  problem.m = problem.transA ? a[1] : a[0];
  const Dim &aK = problem.transA ? a[0] : a[1], &bK = problem.transB ? b[1] : b[0];
  problem.k = bK.isConstant() ? bK : aK;
  problem.n = problem.transB ? b[0] : b[1];
  if (problem.c) {
    requireKnownDims(ctx, node, problem.c);
    std::vector<Dim> cDims = problem.c->shape().dims();
    if (cDims.size() > 2)
      ctx.unsupported(node, "gemm bias C must have rank <= 2");
    cDims.insert(cDims.begin(), 2 - cDims.size(), Dim(1));
    problem.cRows = cDims[0];
    problem.cCols = cDims[1];
  }
  return problem;
}

/// The single node reading `value`, when nothing else (no other node, no
/// graph output) does.
const Node *soleUser(const LoweringContext &ctx, const Value *value) {
  if (value->numUses() != 1 || ctx.graph().isOutput(value))
    return nullptr;
  return value->uses()[0].user;
}

/// The operand of a two-operand Add that is not `value` (null otherwise).
const Value *otherAddend(const Node &add, const Value *value) {
  if (add.kind() != OpKind::Add || add.numOperands() != 2)
    return nullptr;
  if (add.operand(0) == value && add.operand(1) != value)
    return add.operand(1);
  if (add.operand(1) == value && add.operand(0) != value)
    return add.operand(0);
  return nullptr;
}

/// A shape-only view (Reshape and the like) whose result the view's sole
/// user reads, so the GEMM can store straight into what comes after it:
/// the view keeps the row-major layout of [m, n].
bool isView(const Node &node) {
  switch (node.kind()) {
  case OpKind::Reshape:
  case OpKind::Squeeze:
  case OpKind::Unsqueeze:
  case OpKind::Flatten:
  case OpKind::Identity:
    return true;
  default:
    return false;
  }
}

/// Bias add, activation and residual add after an f32 MatMul or Gemm whose
/// B is packed at compile time, as exporters write a Linear layer
/// (MatMul -> Add bias) and a residual connection (-> Add x), and HF's
/// Conv1D (Gemm -> Reshape to [batch, seq, n] -> Gelu). Each step needs the
/// previous value used once and, for the residual, an addend already
/// computed; views in between are absorbed too (claimed, never aliased:
/// only the absorbed nodes read them). `allowBias` is false for a Gemm
/// with a C, which is the bias already.
FusedEpilogue planFusedEpilogue(LoweringContext &ctx, const MatMulProblem &problem,
                                bool allowBias) {
  FusedEpilogue fused;
  const Value *current = problem.result;
  const Node *user = soleUser(ctx, current);
  // Past views, keeping the fused list as it stands when nothing follows.
  auto skipViews = [&] {
    std::vector<const Node *> views;
    const Value *value = current;
    const Node *next = user;
    while (next && isView(*next) && next->numResults() == 1 && next->operand(0) == value) {
      views.push_back(next);
      value = next->result(0);
      next = soleUser(ctx, value);
    }
    return std::tuple(views, value, next);
  };
  auto absorb = [&](const std::vector<const Node *> &views, const Node *node) {
    fused.nodes.insert(fused.nodes.end(), views.begin(), views.end());
    fused.nodes.push_back(node);
    current = node->result(0);
    user = soleUser(ctx, current);
  };
  // Elementwise steps keep the element count; the dtype must stay f32 and
  // the result be laid out as the value it reads (no broadcast growth).
  auto sameShape = [&](const Value *v, const Value *like) {
    return v->dtype() == DType::F32 && v->shape() == like->shape();
  };
  if (auto [views, value, next] = skipViews(); allowBias && next) {
    const Value *bias = otherAddend(*next, value);
    if (bias && bias->dtype() == DType::F32 && ctx.constantValue(bias) &&
        sameShape(next->result(0), value)) {
      const Shape &b = bias->shape();
      bool row = b.rank() >= 1 && b[b.rank() - 1].provablyEqual(problem.n);
      for (size_t i = 0; row && i + 1 < b.rank(); ++i)
        row = b[i].constant() == 1;
      const Shape &out = value->shape();
      row = row && out.rank() >= 1 && out[out.rank() - 1].provablyEqual(problem.n);
      if (row) {
        fused.bias = bias;
        absorb(views, next);
      }
    }
  }
  if (auto [views, value, next] = skipViews(); next && sameShape(next->result(0), value)) {
    GemmActivation activation = GemmActivation::None;
    if (next->kind() == OpKind::Relu)
      activation = GemmActivation::Relu;
    else if (next->kind() == OpKind::Gelu && next->getString("approximate", "none") == "none")
      activation = GemmActivation::GeluErf;
    else if (next->kind() == OpKind::Gelu && next->getString("approximate", "none") == "tanh")
      activation = GemmActivation::GeluTanh;
    if (activation != GemmActivation::None) {
      fused.activation = activation;
      absorb(views, next);
    }
  }
  if (auto [views, value, next] = skipViews(); next) {
    const Value *residual = otherAddend(*next, value);
    if (residual && sameShape(residual, value) && sameShape(next->result(0), value) &&
        ctx.isAvailable(residual)) {
      fused.residual = residual;
      absorb(views, next);
    }
  }
  return fused;
}

/// Plans the epilogue when the packed GEMM will run the problem, claims the
/// absorbed nodes and moves the result to the last one's.
void fuseEpilogue(LoweringContext &ctx, MatMulProblem &problem, bool allowBias) {
  const Tensor *weights = ctx.constantValue(problem.b);
  if (problem.dtype != DType::F32 || !ctx.hasAvx2Fma() || !problem.batchDims.empty() ||
      problem.transA || !weights || !weights->hasData() || !problem.k.isConstant() ||
      !problem.n.isConstant() || *problem.k.constant() <= 0 || *problem.n.constant() <= 0)
    return;
  problem.fused = planFusedEpilogue(ctx, problem, allowBias);
  for (const Node *fused : problem.fused.nodes)
    ctx.claim(*fused);
  if (!problem.fused.empty())
    problem.result = problem.fused.nodes.back()->result(0);
}

void lowerMatMul(LoweringContext &ctx, const Node &node) {
  MatMulProblem problem = planMatMul(ctx, node);
  fuseEpilogue(ctx, problem, true);
  lowerMatMulProblem(ctx, problem);
}

void lowerGemm(LoweringContext &ctx, const Node &node) {
  MatMulProblem problem = planGemm(ctx, node);
  // The packed kernel takes C as its bias (or residual) only in the forms
  // planPackedBias folds; with any other C (added after the GEMM) the
  // activation would come too early.
  bool foldableC =
      !problem.c || (problem.cRows.constant() == 1 && problem.cCols.provablyEqual(problem.n) &&
                     ((ctx.constantValue(problem.c) && ctx.constantValue(problem.c)->hasData()) ||
                      problem.beta == 1));
  if (foldableC)
    fuseEpilogue(ctx, problem, !problem.c);
  lowerMatMulProblem(ctx, problem);
}

/// Stride of an operand's batch axis: 0 where its dim is 1 (broadcast), as
/// the evaluator decides it from the bound value.
llvm::Value *batchStride(FunctionBuilder &f, const Dim &dim, llvm::Value *stride) {
  if (std::optional<int64_t> value = dim.constant())
    return *value == 1 ? f.i64(0) : stride;
  return f.ir().CreateSelect(f.ir().CreateICmpEQ(f.dim(dim), f.i64(1)), f.i64(0), stride);
}

} // namespace

void setBatchDims(LoweringContext &ctx, const Node &node, MatMulProblem &problem,
                  const std::vector<Dim> &aDims, const std::vector<Dim> &bDims) {
  size_t aBatch = aDims.size() - 2, bBatch = bDims.size() - 2;
  size_t batchRank = std::max(aBatch, bBatch);
  const Shape &resultShape = problem.result->shape();
  if (resultShape.rank() < batchRank)
    ctx.unsupported(node, "result rank does not match the operands");
  for (size_t i = 0; i < batchRank; ++i) {
    problem.batchDims.push_back(resultShape[i]);
    problem.aBatchDims.push_back(i + aBatch >= batchRank ? aDims[i + aBatch - batchRank] : Dim(1));
    problem.bBatchDims.push_back(i + bBatch >= batchRank ? bDims[i + bBatch - batchRank] : Dim(1));
  }
}

void foldBatchIntoRows(MatMulProblem &problem) {
  for (const Dim &d : problem.bBatchDims)
    if (d.constant() != 1)
      return;
  for (const Dim &d : problem.aBatchDims)
    problem.m = problem.m * d;
  problem.batchDims.clear();
  problem.aBatchDims.clear();
  problem.bBatchDims.clear();
}

void lowerMatMulProblem(LoweringContext &ctx, const MatMulProblem &problem) {
  if (problem.dtype == DType::F32 && ctx.hasAvx2Fma() && !problem.transA) {
    std::optional<int64_t> k = problem.k.constant(), n = problem.n.constant();
    const Tensor *weights = ctx.constantValue(problem.b);
    bool constantBatch = true;
    for (const Dim &d : problem.bBatchDims)
      constantBatch = constantBatch && d.isConstant();
    if (weights && weights->hasData() && k && n && *k > 0 && *n > 0 && constantBatch)
      return lowerPackedMatMul(ctx, problem, *weights);
    bool empty = (k && *k == 0) || (n && *n == 0);
    if (!empty && !(k && *k > kMaxRuntimeGemmDepth))
      return lowerRuntimeMatMul(ctx, problem);
  }
  lowerMatMulLoops(ctx, problem);
}

Dim MatMulProblem::items() const {
  Dim count = 1;
  for (const Dim &d : batchDims)
    count = count * d;
  return count;
}

ItemOffsets itemOffsets(FunctionBuilder &f, const MatMulProblem &problem, llvm::Value *item) {
  llvm::IRBuilder<> &ir = f.ir();
  ItemOffsets offsets{f.i64(0), f.i64(0), ir.CreateMul(item, f.dim(problem.m * problem.n))};
  if (problem.batchDims.empty())
    return offsets;
  std::vector<llvm::Value *> index = f.unflatten(item, f.dims(Shape(problem.batchDims)));
  llvm::Value *aStride = f.dim(problem.m * problem.k), *bStride = f.dim(problem.k * problem.n);
  for (size_t i = problem.batchDims.size(); i-- > 0;) {
    offsets.a = ir.CreateAdd(
        offsets.a, ir.CreateMul(index[i], batchStride(f, problem.aBatchDims[i], aStride)));
    offsets.b = ir.CreateAdd(
        offsets.b, ir.CreateMul(index[i], batchStride(f, problem.bBatchDims[i], bStride)));
    aStride = ir.CreateMul(aStride, f.dim(problem.aBatchDims[i]));
    bStride = ir.CreateMul(bStride, f.dim(problem.bBatchDims[i]));
  }
  return offsets;
}

llvm::Value *chunkRows(FunctionBuilder &f, llvm::Value *items, llvm::Value *rows, int64_t minRows,
                       int64_t maxRows, int64_t tileRows) {
  llvm::Value *chunksPerItem = f.ceilDiv(f.i64(16), f.max(items, f.i64(1)));
  llvm::Value *perChunk = f.ceilDiv(rows, chunksPerItem);
  perChunk = f.ir().CreateMul(f.ceilDiv(perChunk, f.i64(tileRows)), f.i64(tileRows));
  perChunk = f.max(perChunk, f.i64(minRows));
  return maxRows > 0 ? f.min(perChunk, f.i64(maxRows)) : perChunk;
}

void splitItemsAndChunks(
    StepBuilder &step, const Dim &items, const RowsFn &chunkCount,
    llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *)> body) {
  step.setTaskCount([items, chunkCount](FunctionBuilder &f) {
    return f.ir().CreateMul(f.dim(items), chunkCount(f));
  });
  KernelBuilder &k = step.kernel();
  llvm::IRBuilder<> &ir = k.ir();
  llvm::Value *chunks = chunkCount(k);
  llvm::Value *begin = k.taskBegin(), *end = k.taskEnd();
  llvm::Value *firstItem = ir.CreateSDiv(begin, chunks);
  llvm::Value *lastItem = k.min(k.dim(items), k.ceilDiv(end, chunks));
  // A task range covers consecutive chunks: per item, one merged row range.
  k.forRange(
      firstItem, lastItem,
      [&](llvm::Value *item) {
        llvm::Value *itemTask = ir.CreateMul(item, chunks);
        llvm::Value *first = ir.CreateSub(k.max(begin, itemTask), itemTask);
        llvm::Value *last = ir.CreateSub(k.min(end, ir.CreateAdd(itemTask, chunks)), itemTask);
        body(item, first, last);
      },
      1, "item");
}

void splitItemsAndRows(StepBuilder &step, const Dim &items, const RowsFn &rows,
                       const RowsFn &rowsPerChunk,
                       llvm::function_ref<void(llvm::Value *, llvm::Value *, llvm::Value *)> body) {
  auto chunkCount = [rows, rowsPerChunk](FunctionBuilder &f) {
    return f.max(f.i64(1), f.ceilDiv(rows(f), rowsPerChunk(f)));
  };
  KernelBuilder &k = step.kernel();
  llvm::IRBuilder<> &ir = k.ir();
  llvm::Value *rowCount = rows(k), *perChunk = rowsPerChunk(k);
  splitItemsAndChunks(
      step, items, chunkCount, [&](llvm::Value *item, llvm::Value *first, llvm::Value *last) {
        llvm::Value *rowBegin = ir.CreateMul(first, perChunk);
        llvm::Value *rowEnd = k.min(rowCount, ir.CreateMul(last, perChunk));
        k.ifThen(ir.CreateICmpSLT(rowBegin, rowEnd), [&] { body(item, rowBegin, rowEnd); });
      });
}

void registerLinearAlgebraLowerings(LoweringTable &table) {
  table.add(OpKind::MatMul, lowerMatMul);
  table.add(OpKind::Gemm, lowerGemm);
  table.add(OpKind::Einsum, lowerEinsum);
}

} // namespace onnxc::lower
