//===- codegen/lower/RecurrentActivations.cpp - LSTM/GRU/RNN activations ---===//
//
// Elu's e^x - 1 and Softplus's log(1 + e^-|x|) use Kahan's expm1/log1p
// from exp and log: the reference evaluates the naive forms in double, where
// their cancellation near 0 is harmless; in float it is not.
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/RecurrentActivations.h"

#include "codegen/lower/ComplexKernelSupport.h"

#include "llvm/IR/Intrinsics.h"

#include <cctype>
#include <string>

using namespace llvm;

namespace onnxc::lower {

using llvm::Value;

namespace {

struct ActivationInfo {
  const char *name;
  ActivationKind kind;
  int parameters; // how many of (alpha, beta) it takes
  double defaultAlpha, defaultBeta;
};

constexpr ActivationInfo kActivations[] = {
    {"relu", ActivationKind::Relu, 0, 0, 0},
    {"tanh", ActivationKind::Tanh, 0, 0, 0},
    {"sigmoid", ActivationKind::Sigmoid, 0, 0, 0},
    {"affine", ActivationKind::Affine, 2, 1.0, 0.0},
    {"leakyrelu", ActivationKind::LeakyRelu, 1, 0.01, 0},
    {"thresholdedrelu", ActivationKind::ThresholdedRelu, 1, 1.0, 0},
    {"scaledtanh", ActivationKind::ScaledTanh, 2, 1.0, 1.0},
    {"hardsigmoid", ActivationKind::HardSigmoid, 2, 0.2, 0.5},
    {"elu", ActivationKind::Elu, 1, 1.0, 0},
    {"softsign", ActivationKind::Softsign, 0, 0, 0},
    {"softplus", ActivationKind::Softplus, 0, 0, 0},
};

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

std::vector<RecurrentActivation>
readRecurrentActivations(const LoweringContext &ctx, const Node &node, size_t perDirection,
                         int64_t directions, const std::vector<std::string> &defaults) {
  std::vector<std::string> names = defaults;
  if (const Attribute *attr = node.findAttr("activations")) {
    if (attr->kind() != Attribute::Kind::Strings)
      ctx.unsupported(node, "attribute 'activations' must be a list of strings");
    names = attr->asStrings();
  }
  if (names.size() == perDirection && directions == 2) {
    std::vector<std::string> forward = names;
    names.insert(names.end(), forward.begin(), forward.end());
  }
  if (names.size() != perDirection * size_t(directions))
    ctx.unsupported(node, "expected " + std::to_string(perDirection * size_t(directions)) +
                              " activations, got " + std::to_string(names.size()));
  std::vector<float> alphas = node.getFloats("activation_alpha");
  std::vector<float> betas = node.getFloats("activation_beta");
  size_t nextAlpha = 0, nextBeta = 0;
  std::vector<RecurrentActivation> out;
  for (const std::string &name : names) {
    std::string lower;
    for (char c : name)
      lower += char(std::tolower(static_cast<unsigned char>(c)));
    const ActivationInfo *info = nullptr;
    for (const ActivationInfo &candidate : kActivations)
      if (lower == candidate.name)
        info = &candidate;
    if (!info)
      ctx.unsupported(node, "unsupported activation '" + name + "'");
    RecurrentActivation activation{info->kind, info->defaultAlpha, info->defaultBeta};
    // Parameters are consumed in list order by the functions that take them.
    if (info->parameters >= 1 && nextAlpha < alphas.size())
      activation.alpha = alphas[nextAlpha++];
    if (info->parameters >= 2 && nextBeta < betas.size())
      activation.beta = betas[nextBeta++];
    out.push_back(activation);
  }
  return out;
}

Value *emitActivation(FunctionBuilder &f, const RecurrentActivation &activation, Value *x) {
  IRBuilder<> &b = f.ir();
  Type *type = x->getType();
  Value *zero = ConstantFP::get(type, 0.0), *one = ConstantFP::get(type, 1.0);
  Value *alpha = ConstantFP::get(type, activation.alpha);
  Value *beta = ConstantFP::get(type, activation.beta);
  switch (activation.kind) {
  case ActivationKind::Relu:
    return b.CreateSelect(b.CreateFCmpOLT(x, zero), zero, x);
  case ActivationKind::Tanh:
    return emitRealMath(f, vmath::MathFunction::Tanh, x);
  case ActivationKind::Sigmoid:
    return emitRealMath(f, vmath::MathFunction::Sigmoid, x);
  case ActivationKind::Affine:
    return b.CreateFAdd(b.CreateFMul(alpha, x), beta);
  case ActivationKind::LeakyRelu:
    return b.CreateSelect(b.CreateFCmpOGE(x, zero), x, b.CreateFMul(alpha, x));
  case ActivationKind::ThresholdedRelu:
    return b.CreateSelect(b.CreateFCmpOGT(x, alpha), x, zero);
  case ActivationKind::ScaledTanh:
    return b.CreateFMul(alpha, emitRealMath(f, vmath::MathFunction::Tanh, b.CreateFMul(beta, x)));
  case ActivationKind::HardSigmoid:
    return clamp(f, b.CreateFAdd(b.CreateFMul(alpha, x), beta), zero, one);
  case ActivationKind::Elu:
    return b.CreateSelect(
        b.CreateFCmpOGE(x, zero), x,
        b.CreateFMul(alpha, expMinusOne(f, b.CreateSelect(b.CreateFCmpOGE(x, zero), zero, x))));
  case ActivationKind::Softsign:
    return b.CreateFDiv(x, b.CreateFAdd(one, b.CreateUnaryIntrinsic(Intrinsic::fabs, x)));
  case ActivationKind::Softplus: {
    // max(x, 0) + log1p(e^-|x|): no overflow for large x.
    Value *magnitude = b.CreateUnaryIntrinsic(Intrinsic::fabs, x);
    Value *tail = logOnePlus(f, emitRealMath(f, vmath::MathFunction::Exp, b.CreateFNeg(magnitude)));
    return b.CreateFAdd(b.CreateSelect(b.CreateFCmpOGT(x, zero), x, zero), tail);
  }
  }
  return x;
}

} // namespace onnxc::lower
