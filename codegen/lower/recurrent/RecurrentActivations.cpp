//===- codegen/lower/recurrent/RecurrentActivations.cpp - LSTM/GRU/RNN activations -===//
//
// Elu's e^x - 1 and Softplus's log(1 + e^-|x|) use Kahan's expm1/log1p
// from exp and log: the reference evaluates the naive forms in double, where
// their cancellation near 0 is harmless; in float it is not.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/recurrent/RecurrentActivations.h"

#include "codegen/lower/ComplexKernelSupport.h"

#include "llvm/IR/Intrinsics.h"

#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

/// e^x - 1 for x <= 0 (Kahan: (u - 1) * x / log(u) corrects u's rounding).
Value *expMinusOne(FunctionBuilder &f, Value *x) {
  IRBuilder<> &b = f.ir();
  Type *type = x->getType();
  Value *u = emitRealMath(f, vmath::MathFunction::Exp, x);
  Value *naive = b.CreateFSub(u, ConstantFP::get(type, 1.0));
  Value *corrected =
      b.CreateFDiv(b.CreateFMul(naive, x), emitRealMath(f, vmath::MathFunction::Log, u));
  Value *exact = b.CreateFCmpOEQ(u, ConstantFP::get(type, 1.0));
  Value *far = b.CreateFCmpOLT(x, ConstantFP::get(type, -0.5));
  return b.CreateSelect(exact, x, b.CreateSelect(far, naive, corrected));
}

/// log(1 + u) for u in [0, 1] (Kahan: log(v) * u / (v - 1), v = 1 + u).
Value *logOnePlus(FunctionBuilder &f, Value *u) {
  IRBuilder<> &b = f.ir();
  Type *type = u->getType();
  Value *v = b.CreateFAdd(ConstantFP::get(type, 1.0), u);
  Value *vMinusOne = b.CreateFSub(v, ConstantFP::get(type, 1.0));
  Value *corrected =
      b.CreateFDiv(b.CreateFMul(emitRealMath(f, vmath::MathFunction::Log, v), u), vMinusOne);
  return b.CreateSelect(b.CreateFCmpOEQ(vMinusOne, ConstantFP::get(type, 0.0)), u, corrected);
}

} // namespace

Value *emitActivation(FunctionBuilder &f, const RecurrentActivation &activation, Value *x) {
  IRBuilder<> &b = f.ir();
  Type *type = x->getType();
  Value *zero = ConstantFP::get(type, 0.0), *one = ConstantFP::get(type, 1.0);
  Value *alpha = ConstantFP::get(type, activation.alpha);
  Value *beta = ConstantFP::get(type, activation.beta);
  switch (activation.kind) {
  case RecurrentActivationKind::Relu:
    return b.CreateSelect(b.CreateFCmpOLT(x, zero), zero, x);
  case RecurrentActivationKind::Tanh:
    return emitRealMath(f, vmath::MathFunction::Tanh, x);
  case RecurrentActivationKind::Sigmoid:
    return emitRealMath(f, vmath::MathFunction::Sigmoid, x);
  case RecurrentActivationKind::Affine:
    return b.CreateFAdd(b.CreateFMul(alpha, x), beta);
  case RecurrentActivationKind::LeakyRelu:
    return b.CreateSelect(b.CreateFCmpOGE(x, zero), x, b.CreateFMul(alpha, x));
  case RecurrentActivationKind::ThresholdedRelu:
    return b.CreateSelect(b.CreateFCmpOGT(x, alpha), x, zero);
  case RecurrentActivationKind::ScaledTanh:
    return b.CreateFMul(alpha, emitRealMath(f, vmath::MathFunction::Tanh, b.CreateFMul(beta, x)));
  case RecurrentActivationKind::HardSigmoid:
    return clamp(f, b.CreateFAdd(b.CreateFMul(alpha, x), beta), zero, one);
  case RecurrentActivationKind::Elu:
    return b.CreateSelect(
        b.CreateFCmpOGE(x, zero), x,
        b.CreateFMul(alpha, expMinusOne(f, b.CreateSelect(b.CreateFCmpOGE(x, zero), zero, x))));
  case RecurrentActivationKind::Softsign:
    return b.CreateFDiv(x, b.CreateFAdd(one, b.CreateUnaryIntrinsic(Intrinsic::fabs, x)));
  case RecurrentActivationKind::Softplus: {
    // max(x, 0) + log1p(e^-|x|): no overflow for large x.
    Value *magnitude = b.CreateUnaryIntrinsic(Intrinsic::fabs, x);
    Value *tail = logOnePlus(f, emitRealMath(f, vmath::MathFunction::Exp, b.CreateFNeg(magnitude)));
    return b.CreateFAdd(b.CreateSelect(b.CreateFCmpOGT(x, zero), x, zero), tail);
  }
  }
  return x;
}

} // namespace onnxc::lower
