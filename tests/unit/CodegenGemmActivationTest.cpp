//===- tests/unit/CodegenGemmActivationTest.cpp - Epilogue math accuracy ---===//
//
// Measures the inline vector exp and GELU forms of GemmActivation.h against
// double-precision libm over dense grids, and checks the error bounds that
// header documents.
//
//===----------------------------------------------------------------------===//
#include "codegen/GemmActivation.h"
#include "codegen/KernelJit.h"

#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

using namespace onnxc;

namespace {

/// void name(const float *in, float *out, int64 count): count % 8 == 0.
using MapFn = void(const float *, float *, int64_t);

void emitMap(llvm::Module &module, const char *name,
             std::function<llvm::Value *(llvm::IRBuilder<> &, llvm::Value *)> op) {
  llvm::LLVMContext &context = module.getContext();
  llvm::Type *ptr = llvm::PointerType::getUnqual(context);
  llvm::Type *i64 = llvm::Type::getInt64Ty(context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), {ptr, ptr, i64}, false);
  auto *function = llvm::Function::Create(type, llvm::Function::ExternalLinkage, name, module);
  auto *entry = llvm::BasicBlock::Create(context, "entry", function);
  auto *loop = llvm::BasicBlock::Create(context, "loop", function);
  auto *exit = llvm::BasicBlock::Create(context, "exit", function);
  llvm::IRBuilder<> b(entry);
  b.CreateBr(loop);
  b.SetInsertPoint(loop);
  llvm::PHINode *i = b.CreatePHI(i64, 2);
  i->addIncoming(b.getInt64(0), entry);
  auto *vector = llvm::FixedVectorType::get(b.getFloatTy(), 8);
  // std::vector data is only 16-byte aligned: say so, or the load faults.
  llvm::Value *x = b.CreateAlignedLoad(vector, b.CreateGEP(b.getFloatTy(), function->getArg(0), i),
                                       llvm::Align(4));
  b.CreateAlignedStore(op(b, x), b.CreateGEP(b.getFloatTy(), function->getArg(1), i),
                       llvm::Align(4));
  llvm::Value *next = b.CreateAdd(i, b.getInt64(8));
  i->addIncoming(next, loop);
  b.CreateCondBr(b.CreateICmpSLT(next, function->getArg(2)), loop, exit);
  b.SetInsertPoint(exit);
  b.CreateRetVoid();
}

class GemmActivationAccuracy : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    jit_ = new KernelJit(KernelJit::forHost());
    llvm::Module &module = jit_->newModule("activations");
    emitMap(module, "exp", [](auto &b, auto *x) { return emitVectorExp(b, x); });
    emitMap(module, "geluErf",
            [](auto &b, auto *x) { return emitGemmActivation(b, x, GemmActivation::GeluErf); });
    emitMap(module, "geluTanh",
            [](auto &b, auto *x) { return emitGemmActivation(b, x, GemmActivation::GeluTanh); });
    emitMap(module, "relu",
            [](auto &b, auto *x) { return emitGemmActivation(b, x, GemmActivation::Relu); });
    jit_->compile();
  }
  static void TearDownTestSuite() { delete jit_; }

  /// Applies kernel `name` to a grid of `count` points over [lo, hi].
  static std::pair<std::vector<float>, std::vector<float>> map(const char *name, double lo,
                                                               double hi, int64_t count = 80000) {
    std::vector<float> in(static_cast<size_t>(count)), out(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      in[size_t(i)] = float(lo + (hi - lo) * double(i) / double(count - 1));
    jit_->lookup<MapFn>(name)(in.data(), out.data(), count);
    return {in, out};
  }

  static KernelJit *jit_;
};

KernelJit *GemmActivationAccuracy::jit_ = nullptr;

} // namespace

TEST_F(GemmActivationAccuracy, ExpRelativeError) {
  auto [in, out] = map("exp", -87.0, 88.0);
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i)
    worst = std::max(worst, std::fabs(out[i] / std::exp(double(in[i])) - 1.0));
  EXPECT_LT(worst, 3e-7);
}

TEST_F(GemmActivationAccuracy, GeluErfError) {
  auto [in, out] = map("geluErf", -12.0, 12.0);
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    double x = in[i];
    double expected = 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    worst = std::max(worst, std::fabs(out[i] - expected) / std::max(1.0, std::fabs(x)));
  }
  EXPECT_LT(worst, 2e-7);
}

TEST_F(GemmActivationAccuracy, GeluTanhError) {
  auto [in, out] = map("geluTanh", -12.0, 12.0);
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    double x = in[i];
    double y = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    double expected = 0.5 * x * (1.0 + std::tanh(y));
    worst = std::max(worst, std::fabs(out[i] - expected) / std::max(1.0, std::fabs(x)));
  }
  EXPECT_LT(worst, 2e-7);
}

TEST_F(GemmActivationAccuracy, ReluAndSaturation) {
  auto [in, out] = map("relu", -2.0, 2.0, 64);
  for (size_t i = 0; i < in.size(); ++i)
    EXPECT_EQ(out[i], in[i] > 0 ? in[i] : 0.0f);
  // Far tails: GELU is x for large x and 0 for very negative x, never NaN.
  for (const char *name : {"geluErf", "geluTanh"}) {
    auto [bigIn, bigOut] = map(name, -1e4, 1e4, 8000);
    for (size_t i = 0; i < bigIn.size(); ++i) {
      ASSERT_FALSE(std::isnan(bigOut[i])) << name << "(" << bigIn[i] << ")";
      if (bigIn[i] > 20) {
        EXPECT_EQ(bigOut[i], bigIn[i]) << name;
      }
      if (bigIn[i] < -20) {
        EXPECT_LE(std::fabs(bigOut[i]), 1e-30f) << name;
      }
    }
  }
}
