//===- codegen/kernels/GemvEmitter.cpp - LLVM IR for a vector times a packed matrix -===//
#include "codegen/kernels/GemvEmitter.h"

#include "codegen/kernels/GemmIRBuilder.h"
#include "ir/Error.h"

#include "llvm/IR/Constants.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

#include <algorithm>
#include <vector>

namespace onnxc {
namespace {

/// k per loop iteration, and the vector accumulators a group keeps per
/// width: 8 of the 16 ymm registers, 24 of the 32 zmm ones (the rest hold
/// the broadcasts of x and the loaded B vectors).
constexpr int64_t kUnroll = 4;
constexpr int64_t kMaxGroupPanels = 4;

int64_t accumulatorBudget(int64_t lanes) { return lanes == GemmLanesAvx512 ? 24 : 8; }

class GemvBody {
public:
  GemvBody(GemmIRBuilder &builder, const PackedGemvSpec &spec, llvm::Function &function)
      : g_(builder), b_(builder.ir()), spec_(spec), nr_(2 * spec.lanes),
        vector_(llvm::FixedVectorType::get(b_.getFloatTy(), unsigned(spec.lanes))),
        x_(function.getArg(0)), packedB_(function.getArg(1)), bias_(function.getArg(2)),
        y_(function.getArg(3)) {
    xStride_ = spec.xStride > 0 ? spec.xStride : spec.k;
    yStride_ = spec.yStride > 0 ? spec.yStride : gemmPaddedColumns(spec.n, nr_);
    // As many panels side by side as the rows leave accumulators for.
    groupPanels_ =
        std::clamp<int64_t>(accumulatorBudget(spec.lanes) / (2 * spec.rows), 1, kMaxGroupPanels);
  }

  void emit() {
    const int64_t panels = gemmPaddedColumns(spec_.n, nr_) / nr_;
    const int64_t groups = (spec_.n / nr_) / groupPanels_; // groups of full panels only
    const int64_t chains = 2 * groupPanels_ * spec_.rows;
    if (groups > 0)
      g_.emitLoop(g_.index(0), g_.index(groups), 1, [&](llvm::Value *group) {
        emitGroup(b_.CreateMul(group, g_.index(groupPanels_)), -1, groupPanels_, splitsFor(chains));
      });
    const int64_t first = groups * groupPanels_, tail = panels - first;
    if (tail > 0)
      emitGroup(g_.index(first), first, tail, splitsFor(2 * tail * spec_.rows));
  }

private:
  llvm::Value *floatAt(llvm::Value *base, llvm::Value *offset) {
    return b_.CreateInBoundsGEP(b_.getFloatTy(), base, offset);
  }
  llvm::Value *load(llvm::Value *pointer) {
    return b_.CreateAlignedLoad(vector_, pointer, llvm::Align(4));
  }

  /// Accumulator sets that give at least 8 independent FMA chains (the
  /// latency of an FMA times the pipes), k taking them in turn; as many as
  /// the accumulator budget holds.
  int64_t splitsFor(int64_t chains) const {
    int64_t splits = chains >= 8 ? 1 : chains >= 4 ? 2 : 4;
    while (splits > 1 && splits * chains > accumulatorBudget(spec_.lanes))
      splits /= 2;
    return splits;
  }

  /// Columns [firstPanel * nr, (firstPanel + count) * nr) of every row of y. `constantFirst`
  /// is firstPanel when known (the tail group), else -1 (full panels only).
  /// `splits` accumulator sets take the k of an iteration in turn.
  void emitGroup(llvm::Value *firstPanel, int64_t constantFirst, int64_t count, int64_t splits) {
    const int64_t k = spec_.k, rows = spec_.rows, perSplit = count * 2 * rows;
    std::vector<llvm::Value *> panel;
    for (int64_t p = 0; p < count; ++p)
      panel.push_back(floatAt(
          packedB_, b_.CreateMul(b_.CreateAdd(firstPanel, g_.index(p)), g_.index(k * nr_))));
    // acc[split * perSplit + (row * count + p) * 2 + half]
    auto stepK = [&](llvm::Value *kk, int64_t split, std::vector<llvm::Value *> &acc) {
      std::vector<llvm::Value *> xk;
      for (int64_t row = 0; row < rows; ++row)
        xk.push_back(b_.CreateVectorSplat(
            unsigned(spec_.lanes),
            b_.CreateLoad(b_.getFloatTy(),
                          floatAt(x_, b_.CreateAdd(kk, g_.index(row * xStride_))))));
      llvm::Value *kRow = b_.CreateMul(kk, g_.index(nr_));
      for (int64_t p = 0; p < count; ++p)
        for (int64_t half = 0; half < 2; ++half) {
          llvm::Value *weights =
              load(floatAt(panel[size_t(p)], b_.CreateAdd(kRow, g_.index(half * spec_.lanes))));
          for (int64_t row = 0; row < rows; ++row) {
            llvm::Value *&sum = acc[size_t(split * perSplit + (row * count + p) * 2 + half)];
            sum = b_.CreateIntrinsic(llvm::Intrinsic::fma, {vector_},
                                     {xk[size_t(row)], weights, sum});
          }
        }
    };
    std::vector<llvm::Value *> acc(size_t(splits * perSplit),
                                   llvm::Constant::getNullValue(vector_));
    const int64_t unrolledEnd = k / kUnroll * kUnroll;
    if (unrolledEnd > 0)
      acc = g_.emitLoop(g_.index(0), g_.index(unrolledEnd), kUnroll, acc,
                        [&](llvm::Value *kk, llvm::ArrayRef<llvm::Value *> carried) {
                          std::vector<llvm::Value *> next(carried.begin(), carried.end());
                          for (int64_t u = 0; u < kUnroll; ++u)
                            stepK(b_.CreateAdd(kk, g_.index(u)), u % splits, next);
                          return next;
                        });
    for (int64_t kk = unrolledEnd; kk < k; ++kk)
      stepK(g_.index(kk), 0, acc);

    for (int64_t p = 0; p < count; ++p)
      for (int64_t half = 0; half < 2; ++half) {
        llvm::Value *column = b_.CreateAdd(b_.CreateMul(firstPanel, g_.index(nr_)),
                                           g_.index(p * nr_ + half * spec_.lanes));
        llvm::Value *bias = nullptr;
        if (spec_.bias)
          bias = loadBias(column,
                          constantFirst < 0 ? -1 : (constantFirst + p) * nr_ + half * spec_.lanes);
        for (int64_t row = 0; row < rows; ++row) {
          size_t index = size_t((row * count + p) * 2 + half);
          llvm::Value *sum = acc[index];
          for (int64_t split = 1; split < splits; ++split)
            sum = b_.CreateFAdd(sum, acc[size_t(split * perSplit) + index]);
          if (bias)
            sum = b_.CreateFAdd(sum, bias);
          b_.CreateAlignedStore(sum, floatAt(y_, b_.CreateAdd(column, g_.index(row * yStride_))),
                                llvm::Align(4));
        }
      }
  }

  /// bias[column, column + lanes), reading only columns below N (null when
  /// none is). `constantColumn` is the column when known (else the vector
  /// is whole).
  llvm::Value *loadBias(llvm::Value *column, int64_t constantColumn) {
    const int64_t valid = constantColumn < 0 ? spec_.lanes : spec_.n - constantColumn;
    if (valid <= 0)
      return nullptr;
    llvm::Value *pointer = floatAt(bias_, column);
    if (valid >= spec_.lanes)
      return load(pointer);
    std::vector<llvm::Constant *> lanes;
    for (int64_t lane = 0; lane < spec_.lanes; ++lane)
      lanes.push_back(b_.getInt1(lane < valid));
    return b_.CreateMaskedLoad(vector_, pointer, llvm::Align(4), llvm::ConstantVector::get(lanes),
                               llvm::Constant::getNullValue(vector_));
  }

  GemmIRBuilder &g_;
  llvm::IRBuilder<> &b_;
  const PackedGemvSpec &spec_;
  int64_t nr_;
  llvm::FixedVectorType *vector_;
  llvm::Value *x_, *packedB_, *bias_, *y_;
  int64_t xStride_ = 0, yStride_ = 0, groupPanels_ = 1;
};

} // namespace

GemmBlocking gemvBlocking(int64_t k, int64_t lanes) {
  GemmBlocking blocking;
  blocking.kc = k;
  blocking.packA = false;
  blocking.lanes = lanes;
  return blocking;
}

llvm::Function *emitPackedGemv(llvm::Module &module, const PackedGemvSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0)
    fail("gemv kernel '", spec.name, "': K=", spec.k, " N=", spec.n, " must be positive");
  if (spec.lanes != GemmLanesAvx2 && spec.lanes != GemmLanesAvx512)
    fail("gemv kernel '", spec.name, "': ", spec.lanes, " lanes per vector is not a kernel width");
  if (spec.rows < 1 || spec.rows > kMaxGemvRows || (spec.xStride > 0 && spec.xStride < spec.k) ||
      (spec.yStride > 0 && spec.yStride < gemmPaddedColumns(spec.n, 2 * spec.lanes)))
    fail("gemv kernel '", spec.name, "': ", spec.rows, " rows with strides ", spec.xStride, " and ",
         spec.yStride, " do not fit (1 to ", kMaxGemvRows,
         " rows, strides 0 or >= K and padded N)");
  if (module.getFunction(spec.name))
    fail("gemv kernel '", spec.name, "' is already defined in module '", module.getName().str(),
         "'");
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, ptr, ptr, ptr},
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, spec.name, module);
  const char *names[] = {"x", "packedB", "bias", "y"};
  for (unsigned i = 0; i < 4; ++i) {
    function->getArg(i)->setName(names[i]);
    function->addParamAttr(i, llvm::Attribute::NoCapture);
    function->addParamAttr(i, llvm::Attribute::NoAlias);
    if (i < 3)
      function->addParamAttr(i, llvm::Attribute::ReadOnly);
  }
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoFree);
  // As the GEMM's: keep <16 x float> whole zmm registers where asked for.
  if (spec.lanes == GemmLanesAvx512)
    function->addFnAttr("min-legal-vector-width", "512");

  GemmIRBuilder builder(*function, gemvBlocking(spec.k, spec.lanes));
  GemvBody(builder, spec, *function).emit();
  builder.ir().CreateRetVoid();
  return function;
}

} // namespace onnxc
