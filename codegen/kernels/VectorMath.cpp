//===- codegen/kernels/VectorMath.cpp - Vectorizable exp, log, erf, tanh, GELU -===//
//
// Polynomial coefficients were fitted for this file (weighted minimax by
// Lawson iteration on dense grids, reference values from mpmath) and then
// rounded to float; docs/KERNEL_ACCURACY.md records the fitting intervals and
// the measured errors. Every multiply-add goes through llvm.fmuladd: it is a
// single FMA where the target has one, and a multiply and an add on a generic
// x86-64, so no range reduction below depends on fused rounding.
//
//===----------------------------------------------------------------------===//
#include "codegen/kernels/VectorMath.h"

#include "llvm/IR/Intrinsics.h"

#include <cassert>
#include <cstdint>
#include <limits>

using namespace llvm;

namespace onnxc::vmath {
namespace {

/// exp(r) = 1 + r + r^2 * q(r) on |r| <= ln2/2; q's coefficients from r^0 up.
constexpr float ExpTail[] = {0x1.fffffcp-2f, 0x1.555482p-3f, 0x1.55593ep-5f, 0x1.1245d4p-7f,
                             0x1.6a105cp-10f};
/// log(1+f) = f - f^2/2 + f^3 * p(f) on f in [sqrt(1/2)-1, sqrt(2)-1].
constexpr float LogTail[] = {0x1.555554p-2f, -0x1.00024ep-2f, 0x1.99a084p-3f, -0x1.5466e4p-3f,
                             0x1.22c550p-3f, -0x1.0de5a0p-3f, 0x1.062712p-3f, -0x1.38ac60p-4f};
/// erf(a) = a * p(a^2) on a in [0, ErfSplit].
constexpr float ErfSmall[] = {0x1.20dd74p+0f,  -0x1.812706p-2f, 0x1.ce2008p-4f,
                              -0x1.b6e1d4p-6f, 0x1.4955b8p-8f,  -0x1.432984p-11f};
/// ErfSmall without its constant term: erf(a) = a * c0 + a^3 * q(a^2).
constexpr float ErfSmallTail[] = {-0x1.812706p-2f, 0x1.ce2008p-4f, -0x1.b6e1d4p-6f, 0x1.4955b8p-8f,
                                  -0x1.432984p-11f};
/// log(erfc(a)) + a^2 = p(a - ErfCenter) on a in [ErfSplit, ErfLimit].
constexpr float ErfcLog[] = {-0x1.9efc70p+0f, -0x1.54b78ep-2f,  0x1.9d1d22p-5f,  -0x1.331f1ep-7f,
                             0x1.da311ep-10f, -0x1.673f2cp-12f, 0x1.02c660p-14f, -0x1.63b0b8p-17f,
                             0x1.b2dd38p-20f, -0x1.705530p-24f, -0x1.aca8d4p-26f};
/// erf(x / sqrt 2) = x * P(x^2) / Q(x^2) on |x| <= GeluErfLimit (Q(0) = 1):
/// a rational minimax fit of relative error 2e-8, so float rounding dominates.
constexpr float GeluErfNumerator[] = {0x1.988452p-1f,  0x1.13991ap-4f,  0x1.317df2p-7f,
                                      0x1.5cac7ap-12f, 0x1.a67d00p-17f, 0x1.8588d6p-25f};
constexpr float GeluErfDenominator[] = {0x1.000000p+0f,  0x1.0104e4p-2f,  0x1.d33c48p-6f,
                                        0x1.ea4686p-10f, 0x1.3092fap-14f, 0x1.3fbac2p-20f};
/// tanh(a) = a + a^3 * p(a^2) on a in [0, TanhSplit].
constexpr float TanhSmall[] = {-0x1.555530p-2f, 0x1.11066cp-3f, -0x1.b822cap-5f, 0x1.5179a2p-6f,
                               -0x1.72c44cp-8f};

constexpr float Infinity = std::numeric_limits<float>::infinity();
constexpr float QuietNaN = std::numeric_limits<float>::quiet_NaN();

constexpr float ErfSplit = 0.875f;
constexpr float ErfCenter = 2.6875f;
/// erfc(4.5) = 2e-10: erf rounds to 1 well before.
constexpr float ErfLimit = 4.5f;
constexpr float TanhSplit = 0.625f;
/// erf(5.54 / sqrt 2) = 1 - 5e-8: past this, GELU is x above and 0 below.
constexpr float GeluErfLimit = 5.54f;

/// ln2 split so that n * Ln2Hi is exact for |n| < 2^15 (Ln2Hi has 9 bits).
constexpr float Ln2Hi = 0x1.63p-1f;
constexpr float Ln2Lo = -0x1.bd0106p-13f;
constexpr float Log2E = 0x1.715476p+0f;
/// Adding 1.5 * 2^23 rounds a float of magnitude < 2^22 to an integer, which
/// then sits in the low mantissa bits: a NaN-safe round-to-nearest.
constexpr float RoundingShifter = 0x1.8p+23f;
/// Beyond these, exp is +inf or rounds to 0; clamping keeps 2^n in range.
constexpr float ExpMaxInput = 89.0f;
constexpr float ExpMinInput = -104.0f;

/// Emits float math on one value shape (scalar or vector), with constants
/// splatted to that shape and the matching i32 shape for bit manipulation.
class MathEmitter {
public:
  MathEmitter(IRBuilderBase &builder, Value *like)
      : b_(builder), floatTy_(like->getType()), guard_(builder) {
    assert(floatTy_->getScalarType()->isFloatTy() && "vector math works on f32 values");
    intTy_ = floatTy_->getWithNewType(builder.getInt32Ty());
    b_.clearFastMathFlags();
  }

  Value *f(float value) { return ConstantFP::get(floatTy_, value); }
  Value *i(int32_t value) { return ConstantInt::get(intTy_, value, /*IsSigned=*/true); }
  Value *bits(Value *x) { return b_.CreateBitCast(x, intTy_); }
  Value *fromBits(Value *x) { return b_.CreateBitCast(x, floatTy_); }

  Value *add(Value *x, Value *y) { return b_.CreateFAdd(x, y); }
  Value *sub(Value *x, Value *y) { return b_.CreateFSub(x, y); }
  Value *mul(Value *x, Value *y) { return b_.CreateFMul(x, y); }
  Value *div(Value *x, Value *y) { return b_.CreateFDiv(x, y); }
  Value *mulAdd(Value *x, Value *y, Value *z) {
    return b_.CreateIntrinsic(Intrinsic::fmuladd, {floatTy_}, {x, y, z});
  }
  Value *abs(Value *x) { return b_.CreateUnaryIntrinsic(Intrinsic::fabs, x); }
  Value *copySign(Value *magnitude, Value *sign) {
    return b_.CreateBinaryIntrinsic(Intrinsic::copysign, magnitude, sign);
  }
  Value *select(Value *cond, Value *x, Value *y) { return b_.CreateSelect(cond, x, y); }
  /// Compares are ordered: false when either side is NaN, so the selects
  /// built on them pass NaN through.
  Value *less(Value *x, Value *y) { return b_.CreateFCmpOLT(x, y); }
  Value *greater(Value *x, Value *y) { return b_.CreateFCmpOGT(x, y); }
  Value *equal(Value *x, Value *y) { return b_.CreateFCmpOEQ(x, y); }

  /// Horner evaluation of sum(coeffs[k] * x^k).
  template <size_t N> Value *polynomial(Value *x, const float (&coeffs)[N]) {
    Value *acc = f(coeffs[N - 1]);
    for (size_t k = N - 1; k-- > 0;)
      acc = mulAdd(acc, x, f(coeffs[k]));
    return acc;
  }

  /// 2^n for integer n in [-252, 254], as the product of two normal powers of
  /// two, so results in the subnormal range are rounded only once.
  std::pair<Value *, Value *> powerOfTwoPair(Value *n) {
    Value *half = b_.CreateAShr(n, i(1));
    Value *rest = b_.CreateSub(n, half);
    auto pow2 = [&](Value *e) { return fromBits(b_.CreateShl(b_.CreateAdd(e, i(127)), i(23))); };
    return {pow2(half), pow2(rest)};
  }

  /// e^(hi + lo) for an argument carried as two floats (lo = nullptr for
  /// none); lo joins only after the exact part of the reduction, so it adds
  /// no rounding of its own at hi's magnitude. Clamping by ordered compares
  /// keeps NaN as NaN.
  Value *exp(Value *hi, Value *lo = nullptr) {
    Value *x = lo ? add(hi, lo) : hi;
    Value *tooLarge = greater(x, f(ExpMaxInput));
    Value *tooSmall = less(x, f(ExpMinInput));
    hi = select(tooLarge, f(ExpMaxInput), select(tooSmall, f(ExpMinInput), hi));
    x = select(tooLarge, f(ExpMaxInput), select(tooSmall, f(ExpMinInput), x));
    Value *shifted = mulAdd(x, f(Log2E), f(RoundingShifter));
    Value *n = sub(shifted, f(RoundingShifter));
    Value *nInt = b_.CreateSub(bits(shifted), bits(f(RoundingShifter)));
    // n * Ln2Hi is exact (at most 17 significant bits), so the difference is
    // rounded at most once, and not at all when lo is absent.
    Value *r = mulAdd(n, f(-Ln2Hi), hi);
    if (lo)
      r = add(r, select(b_.CreateOr(tooLarge, tooSmall), f(0.0f), lo));
    r = mulAdd(n, f(-Ln2Lo), r);
    Value *p = polynomial(r, ExpTail);
    p = mulAdd(mulAdd(p, r, f(1.0f)), r, f(1.0f));
    auto [scaleA, scaleB] = powerOfTwoPair(nInt);
    return mul(mul(p, scaleA), scaleB);
  }

  Value *log(Value *x);
  /// erf(a) for a in [0, ErfSplit) and erfc(a) for a >= ErfSplit (0 past
  /// ErfLimit), given a^2 = squareHi + squareLo exactly.
  std::pair<Value *, Value *> erfParts(Value *a, Value *squareHi, Value *squareLo);
  Value *sigmoid(Value *x);

  /// hi + lo = x * x exactly where the target fuses fmuladd (lo = 0 without).
  std::pair<Value *, Value *> exactSquare(Value *x) {
    Value *hi = mul(x, x);
    return {hi, mulAdd(x, x, b_.CreateFNeg(hi))};
  }

  IRBuilderBase &builder() { return b_; }

private:
  IRBuilderBase &b_;
  Type *floatTy_;
  Type *intTy_ = nullptr;
  IRBuilderBase::FastMathFlagGuard guard_;
};

Value *MathEmitter::log(Value *x) {
  // Subnormals are scaled into the normal range first; their exponent is
  // corrected below.
  Value *isSubnormal = less(x, f(0x1p-126f));
  Value *scaled = select(isSubnormal, mul(x, f(0x1p23f)), x);
  Value *exponentBias = b_.CreateSelect(isSubnormal, i(23), i(0));
  // Subtracting the bits of sqrt(1/2) makes the exponent field count from a
  // mantissa in [sqrt(1/2), sqrt(2)), which keeps log(1+f) centered on 0.
  Value *offsetBits = b_.CreateSub(bits(scaled), bits(f(0x1.6a09e6p-1f)));
  Value *exponent = b_.CreateAShr(offsetBits, i(23));
  Value *mantissa = fromBits(b_.CreateSub(bits(scaled), b_.CreateShl(exponent, i(23))));
  Value *e = b_.CreateSIToFP(b_.CreateSub(exponent, exponentBias), floatTy_);
  Value *fr = sub(mantissa, f(1.0f)); // exact: mantissa is within a factor 2 of 1
  Value *fr2 = mul(fr, fr);
  Value *tail = mul(fr2, mul(fr, polynomial(fr, LogTail)));
  tail = mulAdd(fr2, f(-0.5f), tail);
  tail = mulAdd(e, f(Ln2Lo), tail);
  Value *result = mulAdd(e, f(Ln2Hi), add(fr, tail));
  result = select(equal(x, f(Infinity)), f(Infinity), result);
  result = select(equal(x, f(0.0f)), f(-Infinity), result);
  // Unordered-or-less: negative inputs and NaN both give NaN.
  return select(b_.CreateFCmpULT(x, f(0.0f)), f(QuietNaN), result);
}

std::pair<Value *, Value *> MathEmitter::erfParts(Value *a, Value *squareHi, Value *squareLo) {
  // a * c0 + a^3 * q(a^2) with the leading product fused into the last add:
  // the a^3 term is under a quarter of the result, so its rounding matters less.
  Value *erfSmall =
      mulAdd(a, f(ErfSmall[0]), mul(mul(a, squareHi), polynomial(squareHi, ErfSmallTail)));
  // erfc(a) = exp(-a^2 + k(a)); -a^2 enters exp as two floats so that its
  // rounding (up to 1e-6 absolute near a = 4.5) does not become relative error.
  Value *clamped = select(greater(a, f(ErfLimit)), f(ErfLimit), a);
  Value *k = polynomial(sub(clamped, f(ErfCenter)), ErfcLog);
  Value *limitSquare = f(ErfLimit * ErfLimit);
  Value *beyond = greater(a, f(ErfLimit));
  Value *hi = select(beyond, limitSquare, squareHi);
  Value *lo = select(beyond, f(0.0f), squareLo);
  Value *erfcLarge = exp(b_.CreateFNeg(hi), sub(k, lo));
  erfcLarge = select(beyond, f(0.0f), erfcLarge);
  return {erfSmall, erfcLarge};
}

Value *MathEmitter::sigmoid(Value *x) {
  // e^-|x| never overflows; for x < 0 the result e/(1+e) then keeps full
  // relative accuracy down to the subnormal range instead of 1/(1+huge).
  Value *e = exp(b_.CreateFNeg(abs(x)));
  Value *numerator = select(less(x, f(0.0f)), e, f(1.0f));
  return div(numerator, add(f(1.0f), e));
}

} // namespace

Value *emitExp(IRBuilderBase &builder, Value *x) { return MathEmitter(builder, x).exp(x); }

Value *emitLog(IRBuilderBase &builder, Value *x) { return MathEmitter(builder, x).log(x); }

Value *emitErf(IRBuilderBase &builder, Value *x) {
  MathEmitter m(builder, x);
  Value *a = m.abs(x);
  auto [hi, lo] = m.exactSquare(a);
  auto [erfSmall, erfcLarge] = m.erfParts(a, hi, lo);
  Value *result = m.select(m.less(a, m.f(ErfSplit)), erfSmall, m.sub(m.f(1.0f), erfcLarge));
  return m.copySign(result, x);
}

Value *emitTanh(IRBuilderBase &builder, Value *x) {
  MathEmitter m(builder, x);
  Value *a = m.abs(x);
  Value *a2 = m.mul(a, a);
  Value *small = m.mulAdd(m.mul(a, a2), m.polynomial(a2, TanhSmall), a);
  // 1 - 2/(e^2a + 1) saturates to 1 when e^2a overflows, and near TanhSplit
  // loses under one ulp to cancellation.
  Value *e = m.exp(m.add(a, a));
  Value *large = m.sub(m.f(1.0f), m.div(m.f(2.0f), m.add(e, m.f(1.0f))));
  Value *result = m.select(m.less(a, m.f(TanhSplit)), small, large);
  return m.copySign(result, x);
}

Value *emitSigmoid(IRBuilderBase &builder, Value *x) { return MathEmitter(builder, x).sigmoid(x); }

Value *emitGeluErf(IRBuilderBase &builder, Value *x) {
  // x/2 + x/2 * erf(x / sqrt 2) with erf rational on a clamped x: no exp, one
  // division. The fused add cancels exactly for negative x, so the error is
  // erf's absolute error times |x|/2 (<= 8e-7, docs/KERNEL_ACCURACY.md), not
  // relative to a y that fades toward 0: the price of skipping erfc's exp.
  MathEmitter m(builder, x);
  Value *below = m.less(x, m.f(-GeluErfLimit));
  // Ordered compares leave NaN unclamped, so it reaches the result.
  Value *clamped = m.select(m.greater(x, m.f(GeluErfLimit)), m.f(GeluErfLimit),
                            m.select(below, m.f(-GeluErfLimit), x));
  Value *square = m.mul(clamped, clamped);
  Value *ratio =
      m.div(m.polynomial(square, GeluErfNumerator), m.polynomial(square, GeluErfDenominator));
  Value *halfX = m.mul(x, m.f(0.5f));
  Value *result = m.mulAdd(halfX, m.mul(clamped, ratio), halfX);
  // Past the limit erf rounds to -1, but the rational may miss it by an ulp
  // that |x|/2 would magnify; GELU is -0 there (and at -inf).
  return m.select(below, m.f(-0.0f), result);
}

Value *emitGeluTanh(IRBuilderBase &builder, Value *x) {
  MathEmitter m(builder, x);
  constexpr float TwoSqrtTwoOverPi = 0x1.988454p+0f; // 2 * sqrt(2/pi)
  constexpr float CubicCoefficient = 0.044715f * TwoSqrtTwoOverPi;
  Value *x2 = m.mul(x, x);
  Value *twiceInner = m.mul(x, m.mulAdd(x2, m.f(CubicCoefficient), m.f(TwoSqrtTwoOverPi)));
  Value *result = m.mul(x, m.sigmoid(twiceInner));
  return m.select(m.equal(x, m.f(-Infinity)), m.f(-0.0f), result);
}

Value *emitMathFunction(IRBuilderBase &builder, MathFunction function, Value *x) {
  switch (function) {
  case MathFunction::Exp:
    return emitExp(builder, x);
  case MathFunction::Log:
    return emitLog(builder, x);
  case MathFunction::Erf:
    return emitErf(builder, x);
  case MathFunction::Tanh:
    return emitTanh(builder, x);
  case MathFunction::Sigmoid:
    return emitSigmoid(builder, x);
  case MathFunction::GeluErf:
    return emitGeluErf(builder, x);
  case MathFunction::GeluTanh:
    return emitGeluTanh(builder, x);
  }
  assert(false && "unknown math function");
  return nullptr;
}

std::string_view mathFunctionName(MathFunction function) {
  switch (function) {
  case MathFunction::Exp:
    return "exp";
  case MathFunction::Log:
    return "log";
  case MathFunction::Erf:
    return "erf";
  case MathFunction::Tanh:
    return "tanh";
  case MathFunction::Sigmoid:
    return "sigmoid";
  case MathFunction::GeluErf:
    return "gelu_erf";
  case MathFunction::GeluTanh:
    return "gelu_tanh";
  }
  return "unknown";
}

} // namespace onnxc::vmath
