//===- passes/attention/masks/MaskExpr.h - Element expressions of shape-only tensors ---===//
//
// A tensor computed from shapes alone (a causal triangle, a band, a block
// pattern, a Shape vector) is described by its dims and by its element at
// index (x0, x1, ...) as an expression over those axis variables and the
// graph's shape symbols:
//
//   leaves   integer affine forms  c0*x0 + c1*x1 + ... + Dim   (int dtypes)
//            numbers                                          (float, bool)
//            lookups into a stored table at affine indices
//   inside   Add Sub Mul Div Neg Abs Min Max, Less LessOrEqual Equal,
//            Not And Or Xor, Select (Where), Cast
//
// The constructors fold whatever is decided (constant operands, affine sums,
// comparisons of affine forms whose difference has a known sign), so the
// Shape -> Gather -> Concat chains of exported graphs come out as affine
// forms without variables, i.e. Dims. Coefficient arithmetic is checked:
// anything that cannot be represented exactly throws NotProvable, never a
// wrapped number.
//
// Integer values are exact integers, while the graph computes them modulo
// 2^bits of their dtype. Add, Sub, Mul and the affine folds agree with the
// graph modulo 2^bits; the proof (MaskProof.h) checks that every integer
// node stays inside its dtype's range, where the two are equal.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/Tensor.h"
#include "ir/shape/Dim.h"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace onnxc::mask {

/// Thrown when a mask cannot be described or decided exactly; `reason` is
/// what --explain shows after "stays an operand: ".
struct NotProvable {
  std::string reason;
};
[[noreturn]] void notProvable(std::string reason);

/// sum_k coefficients[k] * x_k + offset, where x_k are axis index variables
/// and the offset is a Dim over shape symbols (never unknown).
struct Affine {
  std::map<int, int64_t> coefficients; // nonzero entries only
  Dim offset = Dim(int64_t(0));

  static Affine constant(int64_t value) { return Affine{{}, Dim(value)}; }
  static Affine variable(int index) { return Affine{{{index, 1}}, Dim(int64_t(0))}; }
  /// The Dim as a form without variables; NotProvable when it is unknown.
  static Affine ofDim(const Dim &dim);

  bool hasVariables() const { return !coefficients.empty(); }
  int64_t coefficient(int index) const;
  /// The value of a form without variables and with a constant offset.
  std::optional<int64_t> constantValue() const;
  bool operator==(const Affine &other) const {
    return coefficients == other.coefficients && offset == other.offset;
  }
  /// "x0 - x1 + seq + 3", for diagnostics and tests.
  std::string str() const;
};
Affine operator+(const Affine &a, const Affine &b);
Affine operator-(const Affine &a, const Affine &b);
Affine scaled(const Affine &a, int64_t factor);
/// Replaces variable k by replacement[k] (every variable must have one).
Affine substitute(const Affine &a, const std::vector<Affine> &replacement);

/// Checked Dim arithmetic: NotProvable instead of a wrapped coefficient.
Dim addDims(const Dim &a, const Dim &b);
Dim subtractDims(const Dim &a, const Dim &b);
Dim multiplyDims(const Dim &a, const Dim &b);
/// The sign of a Dim over shape symbols (all >= 0), when it follows from
/// the signs of its coefficients: -1, 0, 1, or nullopt. `orZero` accepts
/// "nonnegative" for 1 and "nonpositive" for -1.
std::optional<int> signOf(const Dim &dim, bool orZero = false);
/// The signs a Dim may take, its symbols being dimensions (>= 0).
struct Signs {
  bool negative, zero, positive;
};
Signs possibleSigns(const Dim &dim);
/// int64 arithmetic that throws NotProvable instead of wrapping.
int64_t checkedAdd(int64_t a, int64_t b);
int64_t checkedMultiply(int64_t a, int64_t b);
inline bool provablyNonNegative(const Dim &dim) {
  std::optional<int> s = signOf(dim, true);
  return s && *s >= 0;
}

enum class ExprKind : uint8_t {
  Number, // float or bool constant
  Affine, // integer affine form
  Lookup, // element of a stored table
  Add,
  Sub,
  Mul,
  Div, // integer division truncates, as in the reference evaluator
  Neg,
  Abs,
  Min,
  Max,
  Less,
  LessOrEqual,
  Equal,
  Not,
  And,
  Or,
  Xor,
  Select, // operands: condition, on true, on false
  Cast,
  Series, // proof stage only: a function of the distance d, tabulated (MaskProof.h)
};

struct Expr;
using ExprPtr = std::shared_ptr<const Expr>;

/// One node of an element expression. Build them with the functions below.
struct Expr {
  ExprKind kind;
  DType dtype;
  double number = 0;           // Number
  Affine affine;               // Affine
  Tensor table;                // Lookup
  std::vector<Affine> indices; // Lookup: one per table axis
  std::vector<double> series;  // Series: values at d = seriesStart, seriesStart + 1, ...
  int64_t seriesStart = 0;
  std::vector<ExprPtr> operands;
};

/// A constant of `dtype` (rounded to it; integers wrap as a Cast would).
ExprPtr constant(DType dtype, double value);
ExprPtr integer(DType dtype, const Affine &form);
ExprPtr lookup(const Tensor &table, std::vector<Affine> indices);
ExprPtr series(DType dtype, std::vector<double> values, int64_t start);
/// Add Sub Mul Div Min Max (operands of one dtype), Less LessOrEqual Equal
/// (bool result), And Or Xor (bool operands).
ExprPtr binary(ExprKind kind, const ExprPtr &a, const ExprPtr &b);
/// Neg Abs Not.
ExprPtr unary(ExprKind kind, const ExprPtr &a);
ExprPtr select(const ExprPtr &condition, const ExprPtr &onTrue, const ExprPtr &onFalse);
ExprPtr cast(const ExprPtr &a, DType to);

/// The expression with variable k replaced by replacement[k] everywhere.
ExprPtr substitute(const ExprPtr &e, const std::vector<Affine> &replacement);

/// The value of a folded constant (Number, or an Affine without variables
/// and with a constant offset).
std::optional<double> constantValue(const ExprPtr &e);
/// The Dim an integer expression without variables stands for.
std::optional<Dim> dimValue(const ExprPtr &e);

/// The value `value` takes when stored as `dtype` (rounding to f32/f16/bf16,
/// wrapping integers, bool as 0/1).
double roundToDType(DType dtype, double value);
/// Integer dtypes whose values fit int64 (not u64), the ones masks may use.
bool isMaskInteger(DType dtype);
/// The range of an integer dtype.
int64_t minOf(DType dtype);
int64_t maxOf(DType dtype);

} // namespace onnxc::mask
