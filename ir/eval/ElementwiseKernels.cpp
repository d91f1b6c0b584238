//===- ir/eval/ElementwiseKernels.cpp - Elementwise reference kernels -----===//
//
// Arithmetic, unary math, comparison, logic, Where, Clip: every op maps
// broadcast operand elements to one result element (Cast, CastLike and
// BitCast are CastKernels.cpp's). Each op is a small
// functor (constructed from the node, so it can read attributes) over the
// compute type of ElementTraits; a few templates do the broadcasting loops.
// Integer arithmetic wraps modulo 2^bits as ONNX Runtime does, without the
// undefined behaviour of signed overflow in C++.
//
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/eval/Broadcast.h"
#include "ir/eval/Kernels.h"

#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

namespace onnxc {

namespace {

void requireSameDType(const Node &node, const Tensor &a, const Tensor &b, size_t indexB) {
  if (a.dtype() != b.dtype())
    fail(node.describe(), ": operand ", indexB, " is ", dtypeName(b.dtype()), " but operand 0 is ",
         dtypeName(a.dtype()));
}

// --- integer helpers --------------------------------------------------------

/// `a op b` with integers wrapping modulo 2^bits: the arithmetic goes through
/// uint64_t, which wraps modulo 2^64, and converting back to a narrower or
/// signed type keeps the low bits (defined since C++20). Floating-point
/// arithmetic is plain.
template <typename Operation, typename T> T wrapping(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(Operation()(uint64_t(a), uint64_t(b)));
  else
    return Operation()(a, b);
}
template <typename T> T wrapAdd(T a, T b) { return wrapping<std::plus<>>(a, b); }
template <typename T> T wrapSub(T a, T b) { return wrapping<std::minus<>>(a, b); }
template <typename T> T wrapMul(T a, T b) { return wrapping<std::multiplies<>>(a, b); }

/// Names the divisor as the compiled kernels do (a guard of an importer
/// names its divisor after the condition it checks).
template <typename T> void checkDivisor(const Node &node, T b) {
  if (b != T(0))
    return;
  const Value *divisor = node.numOperands() > 1 ? node.operand(1) : nullptr;
  if (divisor && !divisor->name().empty())
    fail(node.describe(), ": integer division by zero: an element of the divisor '",
         divisor->name(), "' is 0");
  fail(node.describe(), ": integer division by zero");
}

/// Integer power by squaring; negative exponents give the truncated
/// reciprocal (0 unless the base is 1 or -1).
template <typename T> T integerPower(T base, int64_t exponent) {
  if (exponent < 0) {
    if (base == T(1))
      return T(1);
    if constexpr (std::is_signed_v<T>)
      if (base == T(-1))
        return (exponent % 2) ? T(-1) : T(1);
    return T(0);
  }
  T result = T(1);
  while (exponent) {
    if (exponent & 1)
      result = wrapMul(result, base);
    base = wrapMul(base, base);
    exponent >>= 1;
  }
  return result;
}

// --- kernel shapes ------------------------------------------------------------

template <DType D> using StorageOf = typename ElementTraits<D>::Storage;

/// Every operand, each required, of a dtype in `types`, and all of one dtype.
std::vector<const Tensor *>
sameDTypeOperands(const Node &node, const std::vector<const Tensor *> &operands, unsigned types) {
  std::vector<const Tensor *> ins;
  for (size_t i = 0; i < operands.size(); ++i) {
    ins.push_back(&requireOperand(node, operands, i));
    requireDType(node, *ins.back(), types, i);
    requireSameDType(node, *ins[0], *ins.back(), i);
  }
  return ins;
}

/// Same-dtype n-ary op producing its operands' dtype: combines the operands
/// left to right with op(acc, x) and finishes with op.finish(acc, n).
template <typename Op>
void foldKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  std::vector<const Tensor *> ins = sameDTypeOperands(node, operands, Op::kTypes);
  if (ins.empty())
    fail(node.describe(), ": op ", node.opName(), " needs at least one operand");
  std::vector<int64_t> outDims = broadcastOperands(node, ins);
  Op op(node);
  dispatchDType(ins[0]->dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, Op::kTypes)) {
      using T = ElementTraits<D>;
      Tensor out(D, outDims);
      StorageOf<D> *dst = out.data<StorageOf<D>>();
      forEachBroadcast(outDims, ins, [&](int64_t i, const int64_t *offsets) {
        auto acc = T::load(ins[0]->data<StorageOf<D>>()[offsets[0]]);
        for (size_t k = 1; k < ins.size(); ++k)
          acc = op(acc, T::load(ins[k]->data<StorageOf<D>>()[offsets[k]]));
        dst[i] = T::store(op.finish(acc, ins.size()));
      });
      results[0] = std::move(out);
    }
  });
}

/// Unary op keeping the dtype.
template <typename Op>
void unaryKernel(const Node &node, const std::vector<const Tensor *> &operands,
                 std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, Op::kTypes, 0);
  Op op(node);
  dispatchDType(x.dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, Op::kTypes)) {
      using T = ElementTraits<D>;
      Tensor out(D, x.dims());
      const StorageOf<D> *src = x.data<StorageOf<D>>();
      StorageOf<D> *dst = out.data<StorageOf<D>>();
      for (int64_t i = 0, n = x.numElements(); i < n; ++i)
        dst[i] = T::store(op(T::load(src[i])));
      results[0] = std::move(out);
    }
  });
}

/// Binary or unary op producing bool: comparisons and IsNaN/IsInf.
template <typename Op>
void predicateKernel(const Node &node, const std::vector<const Tensor *> &operands,
                     std::vector<Tensor> &results) {
  std::vector<const Tensor *> ins = sameDTypeOperands(node, operands, Op::kTypes);
  std::vector<int64_t> outDims = broadcastOperands(node, ins);
  Op op(node);
  Tensor out(DType::Bool, outDims);
  uint8_t *dst = out.data<uint8_t>();
  dispatchDType(ins[0]->dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, Op::kTypes)) {
      using T = ElementTraits<D>;
      forEachBroadcast(outDims, ins, [&](int64_t i, const int64_t *offsets) {
        if constexpr (Op::kArity == 1)
          dst[i] = op(T::load(ins[0]->data<StorageOf<D>>()[offsets[0]]));
        else
          dst[i] = op(T::load(ins[0]->data<StorageOf<D>>()[offsets[0]]),
                      T::load(ins[1]->data<StorageOf<D>>()[offsets[1]]));
      });
    }
  });
  results[0] = std::move(out);
}

// --- op functors ------------------------------------------------------------

struct NoAttrs {
  explicit NoAttrs(const Node &) {}
  template <typename C> C finish(C acc, size_t) const { return acc; }
};

/// Binary ops without attributes, listed once: name, dtypes, body over `a`
/// and `b` of compute type C.
#define ONNXC_BINARY(Name, Types, Expr)                                                            \
  struct Name##Op : NoAttrs {                                                                      \
    static constexpr unsigned kTypes = Types;                                                      \
    using NoAttrs::NoAttrs;                                                                        \
    template <typename C> C operator()(C a, C b) const { return Expr; }                            \
  };
ONNXC_BINARY(Add, kNumericTypes, wrapAdd(a, b))
ONNXC_BINARY(Sub, kNumericTypes, wrapSub(a, b))
ONNXC_BINARY(Mul, kNumericTypes, wrapMul(a, b))
ONNXC_BINARY(And, kBoolType, a &&b)
ONNXC_BINARY(Or, kBoolType, a || b)
ONNXC_BINARY(Xor, kBoolType, a != b)
#undef ONNXC_BINARY

struct DivOp {
  static constexpr unsigned kTypes = kNumericTypes;
  const Node &node;
  explicit DivOp(const Node &n) : node(n) {}
  template <typename C> C finish(C acc, size_t) const { return acc; }
  // Integer division truncates toward zero, like C and ONNX Runtime.
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_integral_v<C>) {
      checkDivisor(node, b);
      if constexpr (std::is_signed_v<C>)
        if (b == C(-1))
          return wrapSub(C(0), a);
      return C(a / b);
    } else {
      return a / b;
    }
  }
};
struct ModOp {
  static constexpr unsigned kTypes = kNumericTypes;
  const Node &node;
  bool fmod;
  explicit ModOp(const Node &n) : node(n), fmod(n.getInt("fmod", 0) != 0) {}
  template <typename C> C finish(C acc, size_t) const { return acc; }
  // fmod = 1: the dividend's sign (C fmod); fmod = 0: the divisor's (Python's %, defined on
  // floats since opset 28: the exact fmod remainder moved by B, a zero signed like B).
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>) {
      C r = std::fmod(a, b);
      if (fmod)
        return r;
      if (r == 0)
        return std::copysign(C(0), b);
      return std::signbit(r) != std::signbit(b) ? r + b : r;
    } else {
      checkDivisor(node, b);
      if constexpr (std::is_signed_v<C>) {
        if (b == C(-1))
          return C(0);
        C r = C(a % b);
        if (!fmod && r != 0 && ((r < 0) != (b < 0)))
          r = wrapAdd(r, b);
        return r;
      } else {
        return C(a % b);
      }
    }
  }
};
/// Max (kMax) or Min. NaN propagates, as numpy's maximum/minimum (the ONNX
/// reference) do.
template <bool kMax> struct ExtremumOp : NoAttrs {
  static constexpr unsigned kTypes = kNumericTypes;
  using NoAttrs::NoAttrs;
  template <typename C> C operator()(C a, C b) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(a) || std::isnan(b))
        return std::numeric_limits<C>::quiet_NaN();
    return (kMax ? a < b : b < a) ? b : a;
  }
};
using MaxOp = ExtremumOp<true>;
using MinOp = ExtremumOp<false>;
struct SumOp : AddOp {
  static constexpr unsigned kTypes = kFloatTypes;
  using AddOp::AddOp;
};
struct MeanOp : SumOp {
  using SumOp::SumOp;
  template <typename C> C finish(C acc, size_t n) const { return acc / C(n); }
};

/// Unary float functions, listed once: name, body over `x` of type C.
#define ONNXC_FLOAT_UNARY(Name, Expr)                                                              \
  struct Name##Op : NoAttrs {                                                                      \
    static constexpr unsigned kTypes = kFloatTypes;                                                \
    using NoAttrs::NoAttrs;                                                                        \
    template <typename C> C operator()(C x) const { return Expr; }                                 \
  };
ONNXC_FLOAT_UNARY(Sqrt, std::sqrt(x))
ONNXC_FLOAT_UNARY(Reciprocal, C(1) / x)
ONNXC_FLOAT_UNARY(Floor, std::floor(x))
ONNXC_FLOAT_UNARY(Ceil, std::ceil(x))
ONNXC_FLOAT_UNARY(Exp, std::exp(x))
ONNXC_FLOAT_UNARY(Log, std::log(x))
ONNXC_FLOAT_UNARY(Erf, std::erf(x))
ONNXC_FLOAT_UNARY(Tanh, std::tanh(x))
ONNXC_FLOAT_UNARY(Sin, std::sin(x))
ONNXC_FLOAT_UNARY(Cos, std::cos(x))
// Two branches so that neither exp overflows for large |x|.
ONNXC_FLOAT_UNARY(Sigmoid,
                  x >= C(0) ? C(1) / (C(1) + std::exp(-x)) : std::exp(x) / (C(1) + std::exp(x)))
#undef ONNXC_FLOAT_UNARY

struct NegOp : NoAttrs {
  static constexpr unsigned kTypes = kFloatTypes | kSignedTypes;
  using NoAttrs::NoAttrs;
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_integral_v<C>)
      return wrapSub(C(0), x);
    else
      return -x;
  }
};
struct AbsOp : NoAttrs {
  static constexpr unsigned kTypes = kNumericTypes;
  using NoAttrs::NoAttrs;
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_unsigned_v<C>)
      return x;
    else if constexpr (std::is_integral_v<C>)
      return x < 0 ? wrapSub(C(0), x) : x;
    else
      return std::fabs(x);
  }
};
struct SignOp : NoAttrs {
  static constexpr unsigned kTypes = kNumericTypes;
  using NoAttrs::NoAttrs;
  template <typename C> C operator()(C x) const {
    if constexpr (std::is_floating_point_v<C>)
      if (std::isnan(x))
        return x;
    return x > C(0) ? C(1) : (x < C(0) ? C(-1) : C(0));
  }
};
struct ReluOp : NoAttrs {
  static constexpr unsigned kTypes = kFloatTypes | kSignedTypes;
  using NoAttrs::NoAttrs;
  template <typename C> C operator()(C x) const { return x < C(0) ? C(0) : x; }
};
struct NotOp : NoAttrs {
  static constexpr unsigned kTypes = kBoolType;
  using NoAttrs::NoAttrs;
  template <typename C> C operator()(C x) const { return !x; }
};
struct LeakyReluOp {
  static constexpr unsigned kTypes = kFloatTypes;
  double alpha;
  explicit LeakyReluOp(const Node &n) : alpha(n.getFloat("alpha", 0.01f)) {}
  template <typename C> C operator()(C x) const { return x < C(0) ? C(alpha) * x : x; }
};
struct EluOp {
  static constexpr unsigned kTypes = kFloatTypes;
  double alpha;
  explicit EluOp(const Node &n) : alpha(n.getFloat("alpha", 1.0f)) {}
  // expm1 rather than exp(x) - 1: no cancellation for x near 0.
  template <typename C> C operator()(C x) const {
    return x < C(0) ? C(alpha * std::expm1(double(x))) : x;
  }
};
struct GeluOp {
  static constexpr unsigned kTypes = kFloatTypes;
  bool tanhApproximation;
  explicit GeluOp(const Node &n) {
    std::string approximate = n.getString("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      fail(n.describe(), ": Gelu approximate must be \"none\" or \"tanh\", got \"", approximate,
           "\"");
    tanhApproximation = approximate == "tanh";
  }
  template <typename C> C operator()(C x) const {
    double v = double(x);
    if (tanhApproximation) {
      const double k = std::sqrt(2.0 / M_PI);
      return C(0.5 * v * (1.0 + std::tanh(k * (v + 0.044715 * v * v * v))));
    }
    return C(0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0))));
  }
};

// Predicates (bool results).
#define ONNXC_COMPARISON(Name, Types, Expr)                                                        \
  struct Name##Op : NoAttrs {                                                                      \
    static constexpr unsigned kTypes = Types;                                                      \
    static constexpr int kArity = 2;                                                               \
    using NoAttrs::NoAttrs;                                                                        \
    template <typename C> bool operator()(C a, C b) const { return Expr; }                         \
  };
ONNXC_COMPARISON(Equal, kAllTypes, a == b)
ONNXC_COMPARISON(Less, kNumericTypes, a < b)
ONNXC_COMPARISON(Greater, kNumericTypes, a > b)
ONNXC_COMPARISON(LessOrEqual, kNumericTypes, a <= b)
ONNXC_COMPARISON(GreaterOrEqual, kNumericTypes, a >= b)
#undef ONNXC_COMPARISON

struct IsNaNOp : NoAttrs {
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr int kArity = 1;
  using NoAttrs::NoAttrs;
  template <typename C> bool operator()(C x) const { return std::isnan(x); }
};
struct IsInfOp {
  static constexpr unsigned kTypes = kFloatTypes;
  static constexpr int kArity = 1;
  bool negative, positive;
  explicit IsInfOp(const Node &n)
      : negative(n.getInt("detect_negative", 1) != 0),
        positive(n.getInt("detect_positive", 1) != 0) {}
  template <typename C> bool operator()(C x) const {
    return std::isinf(x) && (x > 0 ? positive : negative);
  }
};

// --- Pow, Clip, Where -------------------------------------------------------

template <typename B, typename E> B power(B base, E exponent) {
  if constexpr (std::is_same_v<E, bool>)
    return power(base, int64_t(exponent));
  else if constexpr (std::is_integral_v<B> && std::is_integral_v<E>)
    return integerPower(base, convertNumber<int64_t>(exponent));
  else if constexpr (std::is_integral_v<B>)
    return convertNumber<B>(std::pow(double(base), double(exponent)));
  else
    return B(std::pow(base, B(exponent)));
}

/// Pow: the result has the base's dtype; the exponent may be any numeric type.
void powKernel(const Node &node, const std::vector<const Tensor *> &operands,
               std::vector<Tensor> &results) {
  const Tensor &base = requireOperand(node, operands, 0);
  const Tensor &exponent = requireOperand(node, operands, 1);
  requireDType(node, base, kNumericTypes, 0);
  requireDType(node, exponent, kNumericTypes, 1);
  std::vector<const Tensor *> ins = {&base, &exponent};
  std::vector<int64_t> outDims = broadcastOperands(node, ins);
  dispatchDType(base.dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, kNumericTypes)) {
      dispatchDType(exponent.dtype(), [&]<DType E>() {
        if constexpr (dtypeIn(E, kNumericTypes)) {
          using TB = ElementTraits<D>;
          using TE = ElementTraits<E>;
          Tensor out(D, outDims);
          StorageOf<D> *dst = out.data<StorageOf<D>>();
          const StorageOf<D> *b = base.data<StorageOf<D>>();
          const StorageOf<E> *e = exponent.data<StorageOf<E>>();
          forEachBroadcast(outDims, ins, [&](int64_t i, const int64_t *offsets) {
            dst[i] = TB::store(power(TB::load(b[offsets[0]]), TE::load(e[offsets[1]])));
          });
          results[0] = std::move(out);
        }
      });
    }
  });
}

/// Clip with optional scalar min (operand 1) and max (operand 2). When
/// min > max every element becomes max, as numpy.clip gives; NaN stays NaN.
void clipKernel(const Node &node, const std::vector<const Tensor *> &operands,
                std::vector<Tensor> &results) {
  const Tensor &x = requireOperand(node, operands, 0);
  requireDType(node, x, kNumericTypes, 0);
  for (size_t i = 1; i < operands.size(); ++i) {
    if (!operands[i])
      continue;
    requireSameDType(node, x, *operands[i], i);
    if (operands[i]->numElements() != 1)
      fail(node.describe(), ": Clip ", i == 1 ? "min" : "max", " must be a scalar, got ",
           operands[i]->typeString());
  }
  dispatchDType(x.dtype(), [&]<DType D>() {
    if constexpr (dtypeIn(D, kNumericTypes)) {
      using T = ElementTraits<D>;
      using C = typename T::Compute;
      const Tensor *lowT = operands.size() > 1 ? operands[1] : nullptr;
      const Tensor *highT = operands.size() > 2 ? operands[2] : nullptr;
      Tensor out(D, x.dims());
      const StorageOf<D> *src = x.data<StorageOf<D>>();
      StorageOf<D> *dst = out.data<StorageOf<D>>();
      for (int64_t i = 0, n = x.numElements(); i < n; ++i) {
        C v = T::load(src[i]);
        if (lowT && v < T::load(lowT->data<StorageOf<D>>()[0]))
          v = T::load(lowT->data<StorageOf<D>>()[0]);
        if (highT && v > T::load(highT->data<StorageOf<D>>()[0]))
          v = T::load(highT->data<StorageOf<D>>()[0]);
        dst[i] = T::store(v);
      }
      results[0] = std::move(out);
    }
  });
}

void whereKernel(const Node &node, const std::vector<const Tensor *> &operands,
                 std::vector<Tensor> &results) {
  const Tensor &condition = requireOperand(node, operands, 0);
  const Tensor &x = requireOperand(node, operands, 1);
  const Tensor &y = requireOperand(node, operands, 2);
  requireDType(node, condition, kBoolType, 0);
  requireDType(node, x, kAllTypes, 1);
  if (x.dtype() != y.dtype())
    fail(node.describe(), ": operand 2 is ", dtypeName(y.dtype()), " but operand 1 is ",
         dtypeName(x.dtype()));
  std::vector<const Tensor *> ins = {&condition, &x, &y};
  std::vector<int64_t> outDims = broadcastOperands(node, ins);
  dispatchDType(x.dtype(), [&]<DType D>() {
    Tensor out(D, outDims);
    StorageOf<D> *dst = out.data<StorageOf<D>>();
    const uint8_t *c = condition.data<uint8_t>();
    forEachBroadcast(outDims, ins, [&](int64_t i, const int64_t *offsets) {
      dst[i] =
          c[offsets[0]] ? x.data<StorageOf<D>>()[offsets[1]] : y.data<StorageOf<D>>()[offsets[2]];
    });
    results[0] = std::move(out);
  });
}

} // namespace

void registerElementwiseKernels(KernelTable &table) {
  table.add(OpKind::Add, foldKernel<AddOp>);
  table.add(OpKind::Sub, foldKernel<SubOp>);
  table.add(OpKind::Mul, foldKernel<MulOp>);
  table.add(OpKind::Div, foldKernel<DivOp>);
  table.add(OpKind::Mod, foldKernel<ModOp>);
  table.add(OpKind::Max, foldKernel<MaxOp>);
  table.add(OpKind::Min, foldKernel<MinOp>);
  table.add(OpKind::Sum, foldKernel<SumOp>);
  table.add(OpKind::Mean, foldKernel<MeanOp>);
  table.add(OpKind::And, foldKernel<AndOp>);
  table.add(OpKind::Or, foldKernel<OrOp>);
  table.add(OpKind::Xor, foldKernel<XorOp>);
  table.add(OpKind::Sqrt, unaryKernel<SqrtOp>);
  table.add(OpKind::Reciprocal, unaryKernel<ReciprocalOp>);
  table.add(OpKind::Neg, unaryKernel<NegOp>);
  table.add(OpKind::Abs, unaryKernel<AbsOp>);
  table.add(OpKind::Sign, unaryKernel<SignOp>);
  table.add(OpKind::Floor, unaryKernel<FloorOp>);
  table.add(OpKind::Ceil, unaryKernel<CeilOp>);
  table.add(OpKind::Exp, unaryKernel<ExpOp>);
  table.add(OpKind::Log, unaryKernel<LogOp>);
  table.add(OpKind::Erf, unaryKernel<ErfOp>);
  table.add(OpKind::Tanh, unaryKernel<TanhOp>);
  table.add(OpKind::Sigmoid, unaryKernel<SigmoidOp>);
  table.add(OpKind::Relu, unaryKernel<ReluOp>);
  table.add(OpKind::LeakyRelu, unaryKernel<LeakyReluOp>);
  table.add(OpKind::Elu, unaryKernel<EluOp>);
  table.add(OpKind::Gelu, unaryKernel<GeluOp>);
  table.add(OpKind::Sin, unaryKernel<SinOp>);
  table.add(OpKind::Cos, unaryKernel<CosOp>);
  table.add(OpKind::Not, unaryKernel<NotOp>);
  table.add(OpKind::Equal, predicateKernel<EqualOp>);
  table.add(OpKind::Less, predicateKernel<LessOp>);
  table.add(OpKind::Greater, predicateKernel<GreaterOp>);
  table.add(OpKind::LessOrEqual, predicateKernel<LessOrEqualOp>);
  table.add(OpKind::GreaterOrEqual, predicateKernel<GreaterOrEqualOp>);
  table.add(OpKind::IsNaN, predicateKernel<IsNaNOp>);
  table.add(OpKind::IsInf, predicateKernel<IsInfOp>);
  table.add(OpKind::Pow, powKernel);
  table.add(OpKind::Clip, clipKernel);
  table.add(OpKind::Where, whereKernel);
}

} // namespace onnxc
