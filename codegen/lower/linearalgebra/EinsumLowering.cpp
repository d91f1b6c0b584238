//===- codegen/lower/linearalgebra/EinsumLowering.cpp - Einsum as a loop nest -===//
//
// The equation is parsed by the same parser as the shape rule and the
// reference kernel (ir/infer/LinearAlgebraRulesInternal.h). Tasks split the
// output elements; each element sums, over every label not in the output,
// the product of one element per operand, like ir/eval's runEinsum: floats
// in double, integers in wrapping i64. An operand's offset steps by the
// summed stride of the axes carrying a label, so a repeated label walks the
// diagonal, and a unit axis has stride 0 (ellipsis broadcasting).
//
// Equations that are a batched matrix product ("bhqd,bhkd->bhqk",
// "bij,bjk->bik": shared leading labels, then m k times k n or n k) are
// lowered as a MatMul instead, for its GEMM kernels; the evaluator computes
// those the same way (double or wrapping i64 sums).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/linearalgebra/LinearAlgebraLowering.h"

#include "ir/Attribute.h"
#include "ir/infer/LinearAlgebraRulesInternal.h"

#include <optional>
#include <set>

namespace onnxc::lower {
namespace {

/// Run-time sizes and per-operand strides of every label.
struct LabelLayout {
  std::vector<llvm::Value *> sizes;                // null for unused labels
  std::vector<std::vector<llvm::Value *>> strides; // [operand][label]
};

LabelLayout layoutLabels(FunctionBuilder &f, const Node &node, const EinsumSpec &spec) {
  llvm::IRBuilder<> &ir = f.ir();
  LabelLayout layout;
  size_t numLabels = size_t(spec.numLabels());
  layout.sizes.assign(numLabels, nullptr);
  for (size_t op = 0; op < node.numOperands(); ++op) {
    const Shape &shape = node.operand(op)->shape();
    std::vector<llvm::Value *> axisStrides = f.strides(shape);
    std::vector<llvm::Value *> strides(numLabels, f.i64(0));
    for (size_t axis = 0; axis < shape.rank(); ++axis) {
      size_t label = size_t(spec.inputLabels[op][axis]);
      llvm::Value *dim = f.dim(shape[axis]);
      llvm::Value *isUnit = ir.CreateICmpEQ(dim, f.i64(1));
      // An ellipsis label's size is the first operand's dim that is not 1.
      llvm::Value *&size = layout.sizes[label];
      size = size ? ir.CreateSelect(ir.CreateICmpEQ(size, f.i64(1)), dim, size) : dim;
      strides[label] =
          ir.CreateAdd(strides[label], ir.CreateSelect(isUnit, f.i64(0), axisStrides[axis]));
    }
    layout.strides.push_back(std::move(strides));
  }
  return layout;
}

/// The equation as "P m k, P k n -> P m n" (B also as "P n k"), P the same
/// leading labels everywhere and m, n, k distinct: a batched MatMul.
std::optional<MatMulProblem> planEinsumAsMatMul(const Node &node, const EinsumSpec &spec) {
  if (node.numOperands() != 2)
    return std::nullopt;
  const std::vector<int> &a = spec.inputLabels[0], &b = spec.inputLabels[1];
  const std::vector<int> &out = spec.outputLabels;
  if (a.size() < 2 || b.size() != a.size() || out.size() != a.size())
    return std::nullopt;
  const size_t r = a.size() - 2;
  for (size_t i = 0; i < r; ++i)
    if (b[i] != a[i] || out[i] != a[i])
      return std::nullopt;
  const int m = a[r], k = a[r + 1];
  const bool transB = b[r + 1] == k;
  const int n = transB ? b[r] : b[r + 1];
  if ((transB ? b[r + 1] : b[r]) != k || out[r] != m || out[r + 1] != n)
    return std::nullopt;
  std::set<int> labels(a.begin(), a.end());
  labels.insert(n);
  if (labels.size() != r + 3)
    return std::nullopt;

  MatMulProblem problem;
  problem.node = &node;
  problem.dtype = node.operand(0)->dtype();
  problem.a = node.operand(0);
  problem.b = node.operand(1);
  problem.result = node.result(0);
  const Shape &aShape = problem.a->shape(), &bShape = problem.b->shape();
  problem.m = aShape[r];
  problem.k = aShape[r + 1];
  problem.n = transB ? bShape[r] : bShape[r + 1];
  problem.transB = transB;
  for (size_t i = 0; i < r; ++i) {
    problem.batchDims.push_back(problem.result->shape()[i]);
    problem.aBatchDims.push_back(aShape[i]);
    problem.bBatchDims.push_back(bShape[i]);
  }
  foldBatchIntoRows(problem);
  return problem;
}

struct EinsumLowering {
  KernelBuilder &k;
  const Node &node;
  DType dtype;
  bool toDouble;
  std::vector<llvm::Value *> operands;
  LabelLayout layout;
  std::vector<int> summedLabels;

  /// acc + the sum over summedLabels[level...] of the operands' product.
  llvm::Value *emitSum(size_t level, const std::vector<llvm::Value *> &offsets, llvm::Value *acc) {
    llvm::IRBuilder<> &ir = k.ir();
    if (level == summedLabels.size()) {
      llvm::Value *product = nullptr;
      for (size_t op = 0; op < operands.size(); ++op) {
        llvm::Value *value =
            widenForSum(k, dtype, k.loadElement(dtype, operands[op], offsets[op]), toDouble);
        product = !product   ? value
                  : toDouble ? ir.CreateFMul(product, value)
                             : ir.CreateMul(product, value);
      }
      return toDouble ? ir.CreateFAdd(acc, product) : ir.CreateAdd(acc, product);
    }
    size_t label = size_t(summedLabels[level]);
    auto body = [&](llvm::Value *index, llvm::ArrayRef<llvm::Value *> carried) {
      std::vector<llvm::Value *> next = offsets;
      for (size_t op = 0; op < next.size(); ++op)
        next[op] = ir.CreateAdd(next[op], ir.CreateMul(index, layout.strides[op][label]));
      return std::vector<llvm::Value *>{emitSum(level + 1, next, carried[0])};
    };
    return k.forRangeCarried(k.i64(0), layout.sizes[label], {acc}, body, 1, "sum")[0];
  }
};

/// The labels that appear in an input but not in the output.
std::vector<int> summedLabelsOf(const EinsumSpec &spec) {
  std::vector<bool> used(size_t(spec.numLabels()), false), inOutput(used);
  for (const auto &labels : spec.inputLabels)
    for (int label : labels)
      used[size_t(label)] = true;
  for (int label : spec.outputLabels)
    inOutput[size_t(label)] = true;
  std::vector<int> summedLabels;
  for (int label = 0; label < spec.numLabels(); ++label)
    if (used[size_t(label)] && !inOutput[size_t(label)])
      summedLabels.push_back(label);
  return summedLabels;
}

/// Output elements per task: about 16K multiply-adds (a symbolic summed
/// size counts as 64).
int64_t einsumGrain(const Node &node, const EinsumSpec &spec, const std::vector<size_t> &ranks,
                    const std::vector<int> &summedLabels) {
  int64_t work = int64_t(node.numOperands());
  for (int label : summedLabels) {
    int64_t size = 1;
    for (size_t op = 0; op < ranks.size(); ++op)
      for (size_t axis = 0; axis < ranks[op]; ++axis)
        if (spec.inputLabels[op][axis] == label)
          size = std::max(size, node.operand(op)->shape()[axis].constant().value_or(64));
    work = std::min<int64_t>(work * size, int64_t(1) << 40);
  }
  return std::max<int64_t>(1, 16384 / std::max<int64_t>(1, work));
}

} // namespace

void lowerEinsum(LoweringContext &ctx, const Node &node) {
  if (node.numOperands() == 0)
    ctx.unsupported(node, "einsum needs at least one operand");
  std::vector<size_t> ranks;
  for (size_t i = 0; i < node.numOperands(); ++i) {
    const Value *operand = node.operand(i);
    if (!operand || !operand->shape().isRanked())
      ctx.unsupported(node, "einsum operand " + std::to_string(i) + " is missing or unranked");
    ranks.push_back(operand->shape().rank());
  }
  const Value *result = node.result(0);
  DType dtype = node.operand(0)->dtype();
  if (!isFloat(dtype) && !isInteger(dtype))
    ctx.unsupported(node, std::string("einsum of ") + std::string(dtypeName(dtype)) +
                              " is not supported");
  const Attribute *equation = node.findAttr("equation");
  if (!equation || equation->kind() != Attribute::Kind::String)
    ctx.unsupported(node, "einsum needs a string attribute 'equation'");
  EinsumSpec spec = parseEinsumEquation(node, equation->asString(), ranks);
  if (std::optional<MatMulProblem> problem = planEinsumAsMatMul(node, spec))
    return lowerMatMulProblem(ctx, *problem);

  std::vector<int> summedLabels = summedLabelsOf(spec);

  StepBuilder step = ctx.beginStep(node, "einsum");
  std::vector<unsigned> inputSlots;
  for (size_t i = 0; i < node.numOperands(); ++i)
    inputSlots.push_back(step.input(node.operand(i)));
  unsigned outputSlot = step.output(result);

  int64_t grain = einsumGrain(node, spec, ranks, summedLabels);
  Shape resultShape = result->shape();
  auto [begin, end] = step.splitEvenly(
      [resultShape](FunctionBuilder &f) { return f.numElements(resultShape); }, grain);

  KernelBuilder &k = step.kernel();
  EinsumLowering lowering{k,           node, dtype, isFloat(dtype), {}, layoutLabels(k, node, spec),
                          summedLabels};
  for (unsigned slot : inputSlots)
    lowering.operands.push_back(k.buffer(slot));
  llvm::Value *output = k.buffer(outputSlot);
  std::vector<llvm::Value *> extents = k.dims(resultShape);
  llvm::IRBuilder<> &ir = k.ir();
  k.forRange(
      begin, end,
      [&](llvm::Value *element) {
        std::vector<llvm::Value *> index = k.unflatten(element, extents);
        std::vector<llvm::Value *> offsets(lowering.operands.size(), k.i64(0));
        for (size_t axis = 0; axis < index.size(); ++axis)
          for (size_t op = 0; op < offsets.size(); ++op)
            offsets[op] = ir.CreateAdd(
                offsets[op],
                ir.CreateMul(index[axis],
                             lowering.layout.strides[op][size_t(spec.outputLabels[axis])]));
        llvm::Value *zero =
            lowering.toDouble
                ? static_cast<llvm::Value *>(llvm::ConstantFP::get(ir.getDoubleTy(), 0))
                : k.i64(0);
        llvm::Value *sum = lowering.emitSum(0, offsets, zero);
        k.storeElement(dtype, narrowSum(k, dtype, sum), output, element);
      },
      1, "element");
  step.finish();
}

} // namespace onnxc::lower
