//===- codegen/kernels/GemmEmitter.cpp - LLVM IR for packed, register-tiled GEMM -===//
#include "codegen/kernels/GemmEmitter.h"

#include "codegen/kernels/GemmIRBuilder.h"
#include "codegen/kernels/Int4Unpack.h"
#include "ir/Error.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <algorithm>

namespace onnxc {
namespace {

void checkBlocking(const std::string &name, const GemmBlocking &blocking) {
  if (blocking.lanes != GemmLanesAvx2 && blocking.lanes != GemmLanesAvx512)
    fail("gemm kernel '", name, "': ", blocking.lanes, " lanes per vector is not a kernel width (",
         GemmLanesAvx2, " or ", GemmLanesAvx512, ")");
  if (blocking.kc <= 0 || blocking.mc <= 0 || blocking.mc % blocking.mr() != 0)
    fail("gemm kernel '", name, "': blocking kc=", blocking.kc, " mc=", blocking.mc,
         " is invalid (kc > 0, mc a positive multiple of ", blocking.mr(), ")");
}

/// Creates `name` with external linkage, names its arguments, and marks it as
/// a leaf that never unwinds (kernels never fail).
llvm::Function *createKernel(llvm::Module &module, const std::string &name,
                             llvm::ArrayRef<llvm::Type *> parameters,
                             llvm::ArrayRef<const char *> names) {
  if (module.getFunction(name))
    fail("gemm kernel '", name, "' is already defined in module '", module.getName().str(), "'");
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(module.getContext()), parameters,
                                       /*isVarArg=*/false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  for (size_t i = 0; i < names.size(); ++i)
    function->getArg(unsigned(i))->setName(names[i]);
  function->addFnAttr(llvm::Attribute::NoUnwind);
  function->addFnAttr(llvm::Attribute::NoFree);
  return function;
}

/// A 16-lane kernel's <16 x float> must stay whole zmm registers: CPUs tuned
/// to prefer 256-bit vectors (LLVM's default for several AVX-512 parts)
/// would otherwise split every vector in two.
void requireVectorWidth(llvm::Function *function, const GemmBlocking &blocking) {
  if (blocking.lanes == GemmLanesAvx512)
    function->addFnAttr("min-legal-vector-width", "512");
}

void markReadOnly(llvm::Function *function, std::initializer_list<unsigned> arguments) {
  for (unsigned i : arguments) {
    function->addParamAttr(i, llvm::Attribute::ReadOnly);
    function->addParamAttr(i, llvm::Attribute::NoCapture);
  }
}

} // namespace

llvm::Function *emitPackedGemm(llvm::Module &module, const PackedGemmSpec &spec) {
  if (spec.k <= 0 || spec.n <= 0)
    fail("gemm kernel '", spec.name, "': K=", spec.k, " N=", spec.n, " must be positive");
  checkBlocking(spec.name, spec.blocking);
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function =
      createKernel(module, spec.name, {ptr, i64, ptr, ptr, i64, i64, i64, ptr, ptr, i64, i64, i64},
                   {"a", "lda", "packedB", "c", "ldc", "rowBegin", "rowEnd", "bias", "residual",
                    "ldResidual", "colBegin", "colEnd"});
  markReadOnly(function, {0, 2, 7, 8});
  requireVectorWidth(function, spec.blocking);

  GemmIRBuilder builder(*function, spec.blocking);
  GemmOperands operands;
  operands.a = function->getArg(0);
  operands.lda = function->getArg(1);
  operands.packedB = function->getArg(2);
  operands.c = function->getArg(3);
  operands.ldc = function->getArg(4);
  operands.rowBegin = function->getArg(5);
  operands.rowEnd = function->getArg(6);
  operands.bias = function->getArg(7);
  operands.residual = function->getArg(8);
  operands.ldResidual = function->getArg(9);
  operands.colBegin = function->getArg(10);
  operands.colEnd = function->getArg(11);
  operands.k = builder.index(spec.k);
  operands.n = builder.index(spec.n);
  if (spec.int4Block > 0) {
    if (spec.blocking.kc % spec.int4Block != 0)
      fail("gemm kernel '", spec.name, "': kc=", spec.blocking.kc,
           " is not a multiple of the int4 block ", spec.int4Block);
    // One panel's buffer, allocated in the entry block (the builder is still there).
    llvm::IRBuilder<> &ir = builder.ir();
    auto *panel = ir.CreateAlloca(
        llvm::ArrayType::get(ir.getFloatTy(), uint64_t(spec.blocking.kc * spec.blocking.nr())),
        nullptr, "int4Panel");
    panel->setAlignment(llvm::Align(64));
    const Int4PanelLayout layout{spec.k, spec.n, spec.int4Block, spec.blocking.lanes};
    operands.panelSource = [&ir, layout, panel, packed = operands.packedB](
                               llvm::Value *kBlock, llvm::Value *depth, llvm::Value *index) {
      emitInt4PanelRows(ir, layout, packed, index, kBlock, depth, panel);
      return static_cast<llvm::Value *>(panel);
    };
  }
  builder.emitBlockedGemm(operands, spec.epilogue);
  builder.ir().CreateRetVoid();
  return function;
}

GemmBlocking int4GemmBlocking(int64_t k, int64_t lanes, int64_t block) {
  constexpr int64_t maxKc = 320;
  GemmBlocking blocking = chooseGemmBlocking(k, lanes);
  const int64_t blocks = (k + maxKc - 1) / maxKc;
  const int64_t even = (k + blocks - 1) / blocks;
  int64_t kc = (even + block - 1) / block * block;
  if (kc > maxKc)
    kc = std::max(block, even / block * block);
  blocking.kc = kc;
  blocking.packA = k > kc;
  // Each row block dequantizes every panel again, so the blocks are taller
  // than the f32 GEMM's 16 tiles: a prompt of up to 575 rows (AVX-512) is one
  // block, its weights dequantized once. A 512-token TinyLlama prefill at one
  // thread took 2-3% less time than with 192-row blocks (three per panel).
  // The packed A block then takes up to 576 x 320 floats (720 KiB) of stack,
  // under the convolutions' budgets (ConvolutionGemmLowering.cpp).
  blocking.mc = kInt4GemmBlockTiles * blocking.mr();
  return blocking;
}

llvm::Function *emitRuntimeGemm(llvm::Module &module, const RuntimeGemmSpec &spec) {
  if (spec.k < 0 || spec.n < 0)
    fail("gemm kernel '", spec.name, "': K=", spec.k, " N=", spec.n,
         " must be positive (or 0 for a run-time dim)");
  checkBlocking(spec.name, spec.blocking);
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function =
      createKernel(module, spec.name,
                   {ptr, i64, i64, ptr, i64, i64, ptr, i64, i64, i64, i64, i64, i64, i64, ptr},
                   {"a", "lda", "strideA", "b", "ldb", "strideB", "c", "ldc", "strideC", "m", "k",
                    "n", "batchBegin", "batchEnd", "packBuffer"});
  markReadOnly(function, {0, 3});
  requireVectorWidth(function, spec.blocking);
  auto arg = [&](unsigned i) { return function->getArg(i); };

  GemmIRBuilder builder(*function, spec.blocking);
  llvm::IRBuilder<> &ir = builder.ir();
  llvm::Value *k = spec.k > 0 ? builder.index(spec.k) : arg(10);
  llvm::Value *n = spec.n > 0 ? builder.index(spec.n) : arg(11);
  builder.emitLoop(arg(12), arg(13), 1, [&](llvm::Value *item) {
    auto itemPointer = [&](llvm::Value *base, llvm::Value *stride) {
      return ir.CreateInBoundsGEP(ir.getFloatTy(), base, ir.CreateMul(item, stride));
    };
    builder.emitPackB(itemPointer(arg(3), arg(5)), arg(4), k, n, spec.transposedB, arg(14));
    GemmOperands operands;
    operands.a = itemPointer(arg(0), arg(2));
    operands.lda = arg(1);
    operands.packedB = arg(14);
    operands.c = itemPointer(arg(6), arg(8));
    operands.ldc = arg(7);
    operands.rowBegin = builder.index(0);
    operands.rowEnd = arg(9);
    operands.k = k;
    operands.n = n;
    builder.emitBlockedGemm(operands, GemmEpilogue{});
  });
  ir.CreateRetVoid();
  return function;
}

llvm::Function *emitGemmPackKernel(llvm::Module &module, const std::string &name,
                                   const GemmBlocking &blocking, bool transposedB) {
  checkBlocking(name, blocking);
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  llvm::Function *function =
      createKernel(module, name, {ptr, i64, i64, i64, ptr}, {"b", "ldb", "k", "n", "out"});
  markReadOnly(function, {0});
  requireVectorWidth(function, blocking);
  GemmBlocking packOnly = blocking; // packs no A: no packed-A buffer on the stack
  packOnly.packA = false;
  GemmIRBuilder builder(*function, packOnly);
  builder.emitPackB(function->getArg(0), function->getArg(1), function->getArg(2),
                    function->getArg(3), transposedB, function->getArg(4));
  builder.ir().CreateRetVoid();
  return function;
}

} // namespace onnxc
