//===- codegen/lower/elementwise/ElementwiseOps.cpp - One elementwise op on registers -===//
//
// Every function here works on scalars and on <W x T> vectors alike (LLVM's
// arithmetic, compares, selects, casts and the math intrinsics are all
// lane-wise), except integer Pow, which loops (needsScalarEmission).
//
//===----------------------------------------------------------------------===//
#include "codegen/lower/elementwise/ElementwiseOps.h"

#include "codegen/kernels/VectorMath.h"
#include "ir/Error.h"

#include "llvm/IR/Intrinsics.h"
#include "llvm/IR/Module.h"

#include <cmath>
#include <limits>

using namespace llvm;

namespace onnxc::lower {

// ---- building blocks -------------------------------------------------------

llvm::Type *ElementEmitter::computeType(DType type) {
  llvm::Type *scalar = f_.computeType(type);
  return width_ == 1 ? scalar : FixedVectorType::get(scalar, width_);
}

llvm::Value *ElementEmitter::splat(llvm::Value *scalar) {
  return width_ == 1 ? scalar : b().CreateVectorSplat(width_, scalar);
}

llvm::Value *ElementEmitter::constant(DType type, double value) {
  return splat(f_.constant(type, value));
}

llvm::Value *ElementEmitter::intrinsic(unsigned id, llvm::Value *x) {
  return b().CreateUnaryIntrinsic(Intrinsic::ID(id), x);
}

llvm::Value *ElementEmitter::callDouble(const char *name, ArrayRef<llvm::Value *> args) {
  llvm::Type *d = b().getDoubleTy();
  std::vector<llvm::Type *> params(args.size(), d);
  FunctionCallee callee =
      f_.module().getOrInsertFunction(name, FunctionType::get(d, params, false));
  if (width_ == 1)
    return b().CreateCall(callee, std::vector<llvm::Value *>(args.begin(), args.end()));
  llvm::Value *result = PoisonValue::get(FixedVectorType::get(d, width_));
  for (unsigned lane = 0; lane < width_; ++lane) {
    std::vector<llvm::Value *> laneArgs;
    for (llvm::Value *arg : args)
      laneArgs.push_back(b().CreateExtractElement(arg, lane));
    result = b().CreateInsertElement(result, b().CreateCall(callee, laneArgs), lane);
  }
  return result;
}

llvm::Value *ElementEmitter::cast(llvm::Value *v, DType from, DType to) {
  if (from == to || !isFourBit(to))
    return castToWide(v, from, to);
  // i4/u4: converted to i32 (floats truncate and saturate there, as the
  // evaluator's convertNumber does), then the low 4 bits, as ONNX's Cast.
  llvm::Value *wide = castToWide(v, from, DType::I32);
  llvm::Type *byte = computeType(DType::I8);
  return wrapToFourBits(b(), b().CreateTrunc(wide, byte), to);
}

llvm::Value *ElementEmitter::castToWide(llvm::Value *v, DType from, DType to) {
  if (from == to)
    return v;
  IRBuilder<> &ir = b();
  llvm::Type *target = computeType(to);
  if (to == DType::Bool)
    return isFloat(from) ? ir.CreateFCmpUNE(v, Constant::getNullValue(v->getType()))
                         : ir.CreateICmpNE(v, Constant::getNullValue(v->getType()));
  if (from == DType::Bool)
    return isFloat(to) ? ir.CreateUIToFP(v, target) : ir.CreateZExt(v, target);
  if (isFloat(from) && isFloat(to))
    return ir.CreateFPCast(v, target);
  if (isFloat(from)) {
    // fptosi of NaN or out-of-range values is poison; the saturating forms
    // give the evaluator's NaN -> 0 and clamping.
    Intrinsic::ID id = isSignedInt(to) ? Intrinsic::fptosi_sat : Intrinsic::fptoui_sat;
    return ir.CreateIntrinsic(id, {target, v->getType()}, {v});
  }
  if (isFloat(to)) {
    bool isSigned = isSignedInt(from);
    if (to == DType::F32 && dtypeSize(from) >= 4) {
      // The evaluator converts to its f32 compute type, double, then rounds.
      llvm::Value *wide = isSigned ? ir.CreateSIToFP(v, computeType(DType::F64))
                                   : ir.CreateUIToFP(v, computeType(DType::F64));
      return ir.CreateFPTrunc(wide, target);
    }
    return isSigned ? ir.CreateSIToFP(v, target) : ir.CreateUIToFP(v, target);
  }
  return ir.CreateIntCast(v, target, isSignedInt(from));
}

// ---- arithmetic --------------------------------------------------------------

llvm::Value *ElementEmitter::divide(DType type, llvm::Value *a, llvm::Value *c) {
  IRBuilder<> &ir = b();
  if (isFloat(type))
    return ir.CreateFDiv(a, c);
  // Divisors 0 and -1 are replaced by 1 before dividing: x86 traps on both
  // a zero divisor and INT_MIN / -1. A zero divisor fails the kernel
  // (binary() records the check), so its lanes' quotients are never seen.
  llvm::Value *zero = constant(type, 0), *one = constant(type, 1);
  llvm::Value *isZero = ir.CreateICmpEQ(c, zero);
  if (!isSignedInt(type))
    return ir.CreateUDiv(a, ir.CreateSelect(isZero, one, c));
  llvm::Value *isMinusOne = ir.CreateICmpEQ(c, constant(type, -1));
  llvm::Value *safe = ir.CreateSelect(ir.CreateOr(isZero, isMinusOne), one, c);
  llvm::Value *quotient = ir.CreateSDiv(a, safe);
  return ir.CreateSelect(isMinusOne, ir.CreateSub(zero, a), quotient);
}

llvm::Value *ElementEmitter::modulo(DType type, llvm::Value *a, llvm::Value *c, bool fmod) {
  IRBuilder<> &ir = b();
  if (isFloat(type)) {
    llvm::Value *remainder = ir.CreateFRem(a, c); // C fmod: the sign of the dividend
    if (fmod)
      return remainder;
    // Opset 28's fmod = 0 on floats, Python's %: the divisor's sign, and a zero
    // remainder is a zero of the divisor's sign. A NaN stays NaN either way.
    llvm::Value *zero = llvm::ConstantFP::get(remainder->getType(), 0.0);
    llvm::Value *signsDiffer =
        ir.CreateICmpNE(ir.CreateFCmpOLT(remainder, zero), ir.CreateFCmpOLT(c, zero));
    llvm::Value *adjust = ir.CreateAnd(ir.CreateFCmpUNE(remainder, zero), signsDiffer);
    llvm::Value *adjusted = ir.CreateSelect(adjust, ir.CreateFAdd(remainder, c), remainder);
    llvm::Value *signedZero = ir.CreateBinaryIntrinsic(llvm::Intrinsic::copysign, zero, c);
    return ir.CreateSelect(ir.CreateFCmpOEQ(remainder, zero), signedZero, adjusted);
  }
  llvm::Value *zero = constant(type, 0), *one = constant(type, 1);
  llvm::Value *isZero = ir.CreateICmpEQ(c, zero);
  if (!isSignedInt(type))
    return ir.CreateURem(a, ir.CreateSelect(isZero, one, c));
  llvm::Value *isMinusOne = ir.CreateICmpEQ(c, constant(type, -1));
  llvm::Value *remainder =
      ir.CreateSRem(a, ir.CreateSelect(ir.CreateOr(isZero, isMinusOne), one, c));
  if (fmod)
    return remainder;
  // Python's %: the sign of the divisor.
  llvm::Value *signsDiffer =
      ir.CreateICmpNE(ir.CreateICmpSLT(remainder, zero), ir.CreateICmpSLT(c, zero));
  llvm::Value *adjust = ir.CreateAnd(ir.CreateICmpNE(remainder, zero), signsDiffer);
  return ir.CreateSelect(adjust, ir.CreateAdd(remainder, c), remainder);
}

llvm::Value *ElementEmitter::extremum(bool isMax, DType type, llvm::Value *a, llvm::Value *c) {
  IRBuilder<> &ir = b();
  if (isFloat(type)) {
    // (max ? a < c : c < a) ? c : a, with NaN in either giving NaN.
    llvm::Value *pick = isMax ? ir.CreateFCmpOLT(a, c) : ir.CreateFCmpOLT(c, a);
    llvm::Value *chosen = ir.CreateSelect(pick, c, a);
    llvm::Value *nan = splat(ConstantFP::getNaN(f_.computeType(type)));
    return ir.CreateSelect(ir.CreateFCmpUNO(a, c), nan, chosen);
  }
  bool isSigned = isSignedInt(type);
  llvm::Value *lhs = isMax ? a : c, *rhs = isMax ? c : a;
  llvm::Value *pick = isSigned ? ir.CreateICmpSLT(lhs, rhs) : ir.CreateICmpULT(lhs, rhs);
  return ir.CreateSelect(pick, c, a);
}

llvm::Value *ElementEmitter::binary(OpKind kind, DType type, llvm::Value *a, llvm::Value *c,
                                    const Node &node) {
  IRBuilder<> &ir = b();
  bool fp = isFloat(type);
  switch (kind) {
  case OpKind::Add:
  case OpKind::Sum:
  case OpKind::Mean:
    return fp ? ir.CreateFAdd(a, c) : ir.CreateAdd(a, c);
  case OpKind::Sub:
    return fp ? ir.CreateFSub(a, c) : ir.CreateSub(a, c);
  case OpKind::Mul:
    return fp ? ir.CreateFMul(a, c) : ir.CreateMul(a, c);
  case OpKind::Div:
  case OpKind::Mod:
    if (!fp)
      divisorChecks_.push_back({&node, ir.CreateICmpEQ(c, constant(type, 0))});
    if (kind == OpKind::Div)
      return divide(type, a, c);
    return modulo(type, a, c, node.getInt("fmod", 0) != 0);
  case OpKind::Max:
  case OpKind::Min:
    return extremum(kind == OpKind::Max, type, a, c);
  case OpKind::And:
    return ir.CreateAnd(a, c);
  case OpKind::Or:
    return ir.CreateOr(a, c);
  case OpKind::Xor:
    return ir.CreateXor(a, c);
  default:
    break;
  }
  fail("codegen: ", node.describe(), " is not a binary elementwise op");
}

llvm::Value *ElementEmitter::fold(const Node &node, ArrayRef<llvm::Value *> operands) {
  DType type = node.operand(0)->dtype();
  llvm::Value *acc = operands[0];
  for (size_t k = 1; k < operands.size(); ++k)
    acc = binary(node.kind(), type, acc, operands[k], node);
  if (node.kind() == OpKind::Mean)
    acc = b().CreateFDiv(acc, constant(type, double(operands.size())));
  return acc;
}

// ---- unary -------------------------------------------------------------------

llvm::Value *ElementEmitter::doubleMath(OpKind kind, llvm::Value *x, bool geluTanh) {
  IRBuilder<> &ir = b();
  auto c = [&](double v) { return constant(DType::F64, v); };
  switch (kind) {
  case OpKind::Exp:
    return intrinsic(Intrinsic::exp, x);
  case OpKind::Log:
    return intrinsic(Intrinsic::log, x);
  case OpKind::Erf:
    return callDouble("erf", {x});
  case OpKind::Tanh:
    return callDouble("tanh", {x});
  case OpKind::Sigmoid: {
    // The evaluator's two branches share e = exp(-|x|).
    llvm::Value *e = intrinsic(Intrinsic::exp, ir.CreateFNeg(intrinsic(Intrinsic::fabs, x)));
    llvm::Value *onePlus = ir.CreateFAdd(c(1), e);
    return ir.CreateSelect(ir.CreateFCmpOGE(x, c(0)), ir.CreateFDiv(c(1), onePlus),
                           ir.CreateFDiv(e, onePlus));
  }
  case OpKind::Gelu: {
    llvm::Value *halfX = ir.CreateFMul(c(0.5), x);
    llvm::Value *t;
    if (geluTanh) {
      llvm::Value *cube = ir.CreateFMul(ir.CreateFMul(ir.CreateFMul(c(0.044715), x), x), x);
      llvm::Value *u = ir.CreateFMul(c(std::sqrt(2.0 / M_PI)), ir.CreateFAdd(x, cube));
      t = callDouble("tanh", {u});
    } else {
      t = callDouble("erf", {ir.CreateFDiv(x, c(std::sqrt(2.0)))});
    }
    return ir.CreateFMul(halfX, ir.CreateFAdd(c(1), t));
  }
  default:
    break;
  }
  fail("codegen: no f64 form of ", opName(kind));
}

llvm::Value *ElementEmitter::transcendental(OpKind kind, DType type, llvm::Value *x,
                                            bool geluTanh) {
  if (type == DType::F64)
    return doubleMath(kind, x, geluTanh);
  IRBuilderBase &ir = b();
  switch (kind) {
  case OpKind::Exp:
    return vmath::emitExp(ir, x);
  case OpKind::Log:
    return vmath::emitLog(ir, x);
  case OpKind::Erf:
    return vmath::emitErf(ir, x);
  case OpKind::Tanh:
    return vmath::emitTanh(ir, x);
  case OpKind::Sigmoid:
    return vmath::emitSigmoid(ir, x);
  case OpKind::Gelu: {
    llvm::Value *y = geluTanh ? vmath::emitGeluTanh(ir, x) : vmath::emitGeluErf(ir, x);
    // The evaluator's x/2 * (1 + erf(..)) is -inf * 0 = NaN at -inf.
    llvm::Value *minusInf = constant(type, -std::numeric_limits<double>::infinity());
    return ir.CreateSelect(ir.CreateFCmpOEQ(x, minusInf), constant(type, NAN), y);
  }
  default:
    break;
  }
  fail("codegen: ", opName(kind), " is not a vector-math function");
}

llvm::Value *ElementEmitter::expMinusOne(DType type, llvm::Value *x) {
  if (type == DType::F64)
    return callDouble("expm1", {x});
  // exp(x) - 1 loses the low bits of a result near 0 to cancellation; there
  // the Taylor series to x^7 is within 2e-8 relative for |x| < 0.35, and
  // beyond, the subtraction amplifies exp's error at most 2.4 times.
  IRBuilder<> &ir = b();
  llvm::Value *series = constant(type, 1.0 / 5040);
  for (double coefficient : {1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 1.0 / 2, 1.0})
    series = ir.CreateFAdd(constant(type, coefficient), ir.CreateFMul(x, series));
  series = ir.CreateFMul(x, series);
  llvm::Value *direct = ir.CreateFSub(vmath::emitExp(ir, x), constant(type, 1));
  llvm::Value *small = ir.CreateFCmpOLT(intrinsic(Intrinsic::fabs, x), constant(type, 0.35));
  return ir.CreateSelect(small, series, direct);
}

llvm::Value *ElementEmitter::sign(DType type, llvm::Value *x) {
  IRBuilder<> &ir = b();
  bool fp = isFloat(type);
  llvm::Value *zero = constant(type, 0);
  llvm::Value *positive =
      fp ? ir.CreateFCmpOGT(x, zero)
         : (isSignedInt(type) ? ir.CreateICmpSGT(x, zero) : ir.CreateICmpNE(x, zero));
  llvm::Value *result = ir.CreateSelect(positive, constant(type, 1), zero);
  if (fp || isSignedInt(type)) {
    llvm::Value *negative = fp ? ir.CreateFCmpOLT(x, zero) : ir.CreateICmpSLT(x, zero);
    result = ir.CreateSelect(negative, constant(type, -1), result);
  }
  return fp ? ir.CreateSelect(ir.CreateFCmpUNO(x, x), x, result) : result;
}

llvm::Value *ElementEmitter::isInf(const Node &node, DType type, llvm::Value *x) {
  IRBuilder<> &ir = b();
  bool negative = node.getInt("detect_negative", 1) != 0;
  bool positive = node.getInt("detect_positive", 1) != 0;
  llvm::Value *inf = constant(type, std::numeric_limits<double>::infinity());
  if (positive && negative)
    return ir.CreateFCmpOEQ(intrinsic(Intrinsic::fabs, x), inf);
  if (positive)
    return ir.CreateFCmpOEQ(x, inf);
  if (negative)
    return ir.CreateFCmpOEQ(x, ir.CreateFNeg(inf));
  return constant(DType::Bool, 0);
}

llvm::Value *ElementEmitter::unary(const Node &node, DType type, llvm::Value *x) {
  IRBuilder<> &ir = b();
  bool fp = isFloat(type);
  llvm::Value *zero = constant(type, 0);
  switch (node.kind()) {
  case OpKind::Sqrt:
    return intrinsic(Intrinsic::sqrt, x);
  case OpKind::Reciprocal:
    return ir.CreateFDiv(constant(type, 1), x);
  case OpKind::Floor:
    return intrinsic(Intrinsic::floor, x);
  case OpKind::Ceil:
    return intrinsic(Intrinsic::ceil, x);
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Erf:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
    return transcendental(node.kind(), type, x, false);
  case OpKind::Gelu:
    return transcendental(OpKind::Gelu, type, x, node.getString("approximate", "none") == "tanh");
  case OpKind::Sin:
  case OpKind::Cos: {
    Intrinsic::ID id = node.kind() == OpKind::Sin ? Intrinsic::sin : Intrinsic::cos;
    if (type != DType::F32)
      return intrinsic(id, x);
    // The evaluator computes f32 in double.
    llvm::Value *wide = ir.CreateFPExt(x, computeType(DType::F64));
    return ir.CreateFPTrunc(intrinsic(id, wide), x->getType());
  }
  case OpKind::Neg:
    return fp ? ir.CreateFNeg(x) : ir.CreateSub(zero, x);
  case OpKind::Abs:
    if (fp)
      return intrinsic(Intrinsic::fabs, x);
    if (!isSignedInt(type))
      return x;
    return ir.CreateBinaryIntrinsic(Intrinsic::abs, x, ir.getFalse()); // INT_MIN stays INT_MIN
  case OpKind::Sign:
    return sign(type, x);
  case OpKind::Relu:
    return ir.CreateSelect(fp ? ir.CreateFCmpOLT(x, zero) : ir.CreateICmpSLT(x, zero), zero, x);
  case OpKind::LeakyRelu: {
    // The attribute is a float; the evaluator multiplies by it in the compute type.
    llvm::Value *alpha = constant(type, double(node.getFloat("alpha", 0.01f)));
    return ir.CreateSelect(ir.CreateFCmpOLT(x, zero), ir.CreateFMul(alpha, x), x);
  }
  case OpKind::Elu: {
    llvm::Value *alpha = constant(type, double(node.getFloat("alpha", 1.0f)));
    return ir.CreateSelect(ir.CreateFCmpOLT(x, zero), ir.CreateFMul(alpha, expMinusOne(type, x)),
                           x);
  }
  case OpKind::Not:
    return ir.CreateNot(x);
  case OpKind::IsNaN:
    return ir.CreateFCmpUNO(x, x);
  case OpKind::IsInf:
    return isInf(node, type, x);
  default:
    break;
  }
  fail("codegen: ", node.describe(), " is not a unary elementwise op");
}

llvm::Value *ElementEmitter::compare(OpKind kind, DType type, llvm::Value *a, llvm::Value *c) {
  IRBuilder<> &ir = b();
  CmpInst::Predicate predicate;
  bool fp = isFloat(type), isSigned = isSignedInt(type);
  switch (kind) {
  case OpKind::Equal:
    predicate = fp ? CmpInst::FCMP_OEQ : CmpInst::ICMP_EQ;
    break;
  case OpKind::Less:
    predicate = fp ? CmpInst::FCMP_OLT : (isSigned ? CmpInst::ICMP_SLT : CmpInst::ICMP_ULT);
    break;
  case OpKind::Greater:
    predicate = fp ? CmpInst::FCMP_OGT : (isSigned ? CmpInst::ICMP_SGT : CmpInst::ICMP_UGT);
    break;
  case OpKind::LessOrEqual:
    predicate = fp ? CmpInst::FCMP_OLE : (isSigned ? CmpInst::ICMP_SLE : CmpInst::ICMP_ULE);
    break;
  default: // GreaterOrEqual
    predicate = fp ? CmpInst::FCMP_OGE : (isSigned ? CmpInst::ICMP_SGE : CmpInst::ICMP_UGE);
    break;
  }
  return fp ? ir.CreateFCmp(predicate, a, c) : ir.CreateICmp(predicate, a, c);
}

// ---- Pow, Clip -----------------------------------------------------------------

llvm::Value *ElementEmitter::integerPower(DType type, llvm::Value *base, llvm::Value *exponent) {
  IRBuilder<> &ir = b();
  llvm::Value *one = constant(type, 1);
  // Negative exponents: the truncated reciprocal, 0 unless |base| is 1.
  llvm::Value *isNegative = ir.CreateICmpSLT(exponent, f_.i64(0));
  llvm::Value *reciprocal = ir.CreateSelect(ir.CreateICmpEQ(base, one), one, constant(type, 0));
  if (isSignedInt(type)) {
    llvm::Value *odd = ir.CreateTrunc(exponent, ir.getInt1Ty());
    llvm::Value *minusOnePower = ir.CreateSelect(odd, constant(type, -1), one);
    reciprocal =
        ir.CreateSelect(ir.CreateICmpEQ(base, constant(type, -1)), minusOnePower, reciprocal);
  }
  // Squaring over the exponent's significant bits, wrapping like the evaluator.
  llvm::Value *leadingZeros = ir.CreateBinaryIntrinsic(Intrinsic::ctlz, exponent, ir.getFalse());
  llvm::Value *bits =
      ir.CreateSelect(isNegative, f_.i64(0), ir.CreateSub(f_.i64(64), leadingZeros));
  std::vector<llvm::Value *> final = f_.forRangeCarried(
      f_.i64(0), bits, {one, base},
      [&](llvm::Value *bit, ArrayRef<llvm::Value *> carried) -> std::vector<llvm::Value *> {
        llvm::Value *set = ir.CreateTrunc(ir.CreateLShr(exponent, bit), ir.getInt1Ty());
        llvm::Value *result =
            ir.CreateSelect(set, ir.CreateMul(carried[0], carried[1]), carried[0]);
        return {result, ir.CreateMul(carried[1], carried[1])};
      },
      1, "pow.bit");
  return ir.CreateSelect(isNegative, reciprocal, final[0]);
}

llvm::Value *ElementEmitter::power(DType baseType, DType exponentType, llvm::Value *base,
                                   llvm::Value *exponent) {
  IRBuilder<> &ir = b();
  if (isFloat(baseType)) {
    // x^2 is x*x exactly (as rounded by pow); common in decomposed norms.
    auto *c = dyn_cast<Constant>(exponent);
    if (c && c->getSplatValue())
      c = c->getSplatValue();
    if (auto *fc = dyn_cast_or_null<ConstantFP>(c); fc && fc->isExactlyValue(2.0))
      return ir.CreateFMul(base, base);
    if (auto *ic = dyn_cast_or_null<ConstantInt>(c); ic && ic->equalsInt(2))
      return ir.CreateFMul(base, base);
  }
  if (isFloat(baseType)) {
    // pow in the evaluator's compute type: double for f32 and f64, float
    // for f16 and bf16, with the exponent converted to it.
    DType computeAs = baseType == DType::F32 || baseType == DType::F64 ? DType::F64 : DType::F32;
    llvm::Value *wideBase = ir.CreateFPCast(base, computeType(computeAs));
    llvm::Value *wideExponent = cast(exponent, exponentType, computeAs);
    llvm::Value *result = ir.CreateBinaryIntrinsic(Intrinsic::pow, wideBase, wideExponent);
    return ir.CreateFPCast(result, base->getType());
  }
  if (isFloat(exponentType)) {
    llvm::Value *wideBase = cast(base, baseType, DType::F64);
    llvm::Value *wideExponent = cast(exponent, exponentType, DType::F64);
    return cast(ir.CreateBinaryIntrinsic(Intrinsic::pow, wideBase, wideExponent), DType::F64,
                baseType);
  }
  return integerPower(baseType, base,
                      ir.CreateIntCast(exponent, ir.getInt64Ty(), isSignedInt(exponentType)));
}

llvm::Value *ElementEmitter::clip(DType type, llvm::Value *x, llvm::Value *low, llvm::Value *high) {
  IRBuilder<> &ir = b();
  bool fp = isFloat(type), isSigned = isSignedInt(type);
  if (low) {
    llvm::Value *below = fp ? ir.CreateFCmpOLT(x, low)
                            : (isSigned ? ir.CreateICmpSLT(x, low) : ir.CreateICmpULT(x, low));
    x = ir.CreateSelect(below, low, x);
  }
  if (high) {
    llvm::Value *above = fp ? ir.CreateFCmpOGT(x, high)
                            : (isSigned ? ir.CreateICmpSGT(x, high) : ir.CreateICmpUGT(x, high));
    x = ir.CreateSelect(above, high, x);
  }
  return x;
}

std::string divisionByZeroMessage(const Node &node) {
  const onnxc::Value *divisor = node.operand(1);
  std::string name = divisor && !divisor->name().empty() ? divisor->name() : "B";
  return "integer " + std::string(node.opName()) + " by zero in " + node.describe() +
         ": an element of the divisor '" + name + "' is 0 (must be non-zero)";
}

// ---- dispatch ------------------------------------------------------------------

llvm::Value *ElementEmitter::emit(const Node &node, ArrayRef<llvm::Value *> operands) {
  DType type = node.operand(0)->dtype();
  DType resultType = node.result(0)->dtype();
  switch (node.kind()) {
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Mod:
  case OpKind::Max:
  case OpKind::Min:
  case OpKind::Sum:
  case OpKind::Mean:
  case OpKind::And:
  case OpKind::Or:
  case OpKind::Xor:
    return fold(node, operands);
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
    return compare(node.kind(), type, operands[0], operands[1]);
  case OpKind::Pow:
    return power(type, node.operand(1)->dtype(), operands[0], operands[1]);
  case OpKind::Clip:
    return clip(type, operands[0], operands.size() > 1 ? operands[1] : nullptr,
                operands.size() > 2 ? operands[2] : nullptr);
  case OpKind::Where:
    return b().CreateSelect(operands[0], operands[1], operands[2]);
  case OpKind::Cast:
  case OpKind::CastLike:
    return cast(operands[0], type, resultType);
  default:
    return unary(node, type, operands[0]);
  }
}

} // namespace onnxc::lower
