//===- codegen/lower/elementwise/ElementwiseOps.h - One elementwise op on registers -===//
//
// What each elementwise op computes, as IR over operand values that are
// already in registers: scalars of FunctionBuilder::computeType, or vectors
// of `width` such lanes. The kernels of ElementwiseLowering.cpp (one op or a
// fused chain) load the operands and store the result; this file only maps
// operands to a result, mirroring ir/eval/ElementwiseKernels.cpp op by op
// (same dtypes, same integer wrapping, same NaN and rounding choices).
//
// Where the reference computes f32 in double (Pow, Sin, Cos), so does this
// file; exp/log/erf/tanh/sigmoid/GELU of float types use codegen/kernels/VectorMath,
// of f64 the C library. Integer Div and Mod by zero, which the evaluator
// reports as an error, are recorded as divisor checks (takeDivisorChecks):
// the kernel must fail when one holds (KernelBuilder::failIf).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "codegen/lower/FunctionBuilder.h"
#include "ir/Node.h"
#include "ir/OpKind.h"

#include "llvm/ADT/ArrayRef.h"

#include <string>
#include <vector>

namespace onnxc::lower {

/// Whether `kind` is one of the ops lowered by this family (every op of
/// ir/eval/ElementwiseKernels.cpp).
bool isElementwiseOp(OpKind kind);

/// Empty when `node` (an elementwise op) can be compiled; otherwise why not
/// (a dtype the evaluator does not accept, a bad attribute, ...).
std::string elementwiseUnsupportedReason(const Node &node);

/// Whether the op can only be emitted one element at a time (integer Pow,
/// whose loop count depends on the exponent).
bool needsScalarEmission(const Node &node);

/// Whether the op is expensive per element (a libm call, a polynomial, an
/// integer division), which makes smaller tasks worthwhile.
bool isExpensiveElementwiseOp(const Node &node);

/// Emits elementwise ops on `width`-lane values (width 1: scalars).
class ElementEmitter {
public:
  ElementEmitter(FunctionBuilder &f, unsigned width) : f_(f), width_(width) {}

  unsigned width() const { return width_; }
  /// computeType(type), as a vector when width > 1.
  llvm::Type *computeType(DType type);
  /// A scalar broadcast to every lane (itself when width is 1).
  llvm::Value *splat(llvm::Value *scalar);
  /// A constant of computeType(type) in every lane.
  llvm::Value *constant(DType type, double value);

  /// ONNX Cast of a `from` value to `to`, as the evaluator's convertNumber:
  /// float -> int truncates and saturates (NaN -> 0), -> bool is != 0, and
  /// f32 results of wide integers round through double as the evaluator's
  /// double compute type does.
  llvm::Value *cast(llvm::Value *value, DType from, DType to);

  /// The result of `node` from its operand values (null for an absent
  /// optional operand or one the op does not read, CastLike's second).
  llvm::Value *emit(const Node &node, llvm::ArrayRef<llvm::Value *> operands);

  /// An integer Div or Mod emitted since the last take: `isZero` (i1, or
  /// per lane) holds where its divisor is 0, which the evaluator rejects.
  struct DivisorCheck {
    const Node *node;
    llvm::Value *isZero;
  };
  std::vector<DivisorCheck> takeDivisorChecks() { return std::move(divisorChecks_); }

private:
  llvm::IRBuilder<> &b() { return f_.ir(); }
  /// cast() for any target but i4/u4.
  llvm::Value *castToWide(llvm::Value *value, DType from, DType to);
  llvm::Value *fold(const Node &node, llvm::ArrayRef<llvm::Value *> operands);
  llvm::Value *binary(OpKind kind, DType type, llvm::Value *a, llvm::Value *c, const Node &node);
  llvm::Value *divide(DType type, llvm::Value *a, llvm::Value *c);
  llvm::Value *modulo(DType type, llvm::Value *a, llvm::Value *c, bool fmod);
  llvm::Value *extremum(bool isMax, DType type, llvm::Value *a, llvm::Value *c);
  llvm::Value *unary(const Node &node, DType type, llvm::Value *x);
  llvm::Value *transcendental(OpKind kind, DType type, llvm::Value *x, bool geluTanh);
  llvm::Value *doubleMath(OpKind kind, llvm::Value *x, bool geluTanh);
  /// e^x - 1, accurate near 0 (Elu's negative branch).
  llvm::Value *expMinusOne(DType type, llvm::Value *x);
  /// Sign: -1, 0 or 1 (NaN stays NaN; unsigned types have no -1).
  llvm::Value *sign(DType type, llvm::Value *x);
  /// IsInf with its detect_negative / detect_positive attributes.
  llvm::Value *isInf(const Node &node, DType type, llvm::Value *x);
  llvm::Value *compare(OpKind kind, DType type, llvm::Value *a, llvm::Value *c);
  llvm::Value *power(DType baseType, DType exponentType, llvm::Value *base, llvm::Value *exponent);
  llvm::Value *integerPower(DType type, llvm::Value *base, llvm::Value *exponent);
  llvm::Value *clip(DType type, llvm::Value *x, llvm::Value *low, llvm::Value *high);
  /// A C library function of doubles (e.g. "erf") applied to every lane.
  llvm::Value *callDouble(const char *name, llvm::ArrayRef<llvm::Value *> args);
  llvm::Value *intrinsic(unsigned id, llvm::Value *x);

  FunctionBuilder &f_;
  unsigned width_;
  std::vector<DivisorCheck> divisorChecks_;
};

/// The failure message of a kernel computing integer Div/Mod `node`: names
/// the node and its divisor operand.
std::string divisionByZeroMessage(const Node &node);

} // namespace onnxc::lower
