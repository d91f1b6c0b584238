//===- ir/shape/Dim.h - Symbolic tensor dimensions --------------------------------===//
//
// A dimension is an integer polynomial over named symbols ("batch", "seq"):
// a constant (384), a symbol (seq), or a simple expression (batch*seq,
// seq*12, seq+1). It may also be unknown ("?"), meaning nothing is known.
// The polynomial is kept in canonical form, so structural equality is
// mathematical equality and printing is deterministic.
//
// Coefficients are int64 and every operation is checked: +, -, * and
// evaluate() throw SizeError (ir/Error.h) rather than wrap, and the
// try* forms return nullopt instead, for callers to whom an overflowing
// value simply means "not known" (the contents of shape tensors). The
// size of the polynomial is checked the same way: real shapes need a few
// terms of low degree, while a product of sums grows exponentially, so a
// result past kMaxTerms terms or kMaxDegree symbols in a term is refused.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace onnxc {

class Dim {
public:
  /// A monomial: the symbols multiplied together, sorted, with repetition.
  using Monomial = std::vector<std::string>;

  /// The most terms a dimension may have, and symbols in one term.
  static constexpr size_t kMaxTerms = 256;
  static constexpr size_t kMaxDegree = 256;

  /// The unknown dimension.
  Dim() = default;
  /// A constant dimension.
  Dim(int64_t value);
  static Dim unknown() { return Dim(); }
  static Dim symbol(const std::string &name);

  bool isUnknown() const { return unknown_; }
  bool isConstant() const;
  /// A single symbol with coefficient 1 (e.g. "seq").
  bool isSymbol() const;
  /// The value of a constant dimension; nullopt otherwise.
  std::optional<int64_t> constant() const;
  /// The symbol name of a single-symbol dimension.
  const std::string &symbolName() const;

  /// Checked arithmetic: throws SizeError when a coefficient overflows or
  /// the result is past kMaxTerms or kMaxDegree.
  friend Dim operator+(const Dim &a, const Dim &b);
  friend Dim operator-(const Dim &a, const Dim &b);
  friend Dim operator*(const Dim &a, const Dim &b);
  Dim operator-() const { return Dim(0) - *this; }

  /// The same operations, with nullopt where the operators throw.
  static std::optional<Dim> tryAdd(const Dim &a, const Dim &b);
  static std::optional<Dim> trySubtract(const Dim &a, const Dim &b);
  /// `tooLarge`, when given, tells a result past the size limits from an
  /// overflow.
  static std::optional<Dim> tryMultiply(const Dim &a, const Dim &b, bool *tooLarge = nullptr);

  /// Exact division: defined when the divisor is a nonzero constant or a
  /// single monomial that divides every term exactly; nullopt otherwise
  /// (also when the quotient overflows: INT64_MIN / -1).
  std::optional<Dim> divideExactly(const Dim &divisor) const;

  /// Structural (= mathematical) equality; unknown equals only unknown.
  bool operator==(const Dim &other) const;
  bool operator!=(const Dim &other) const { return !(*this == other); }
  /// True when both are known and equal: safe for proving shapes match.
  bool provablyEqual(const Dim &other) const { return !unknown_ && *this == other; }

  /// Substitutes values for symbols; nullopt if unknown or a symbol is
  /// unbound. Throws SizeError when the value does not fit in int64.
  std::optional<int64_t> evaluate(const std::map<std::string, int64_t> &bindings) const;
  /// This dimension with the bound symbols replaced by their values (the
  /// others kept). Throws SizeError on overflow.
  Dim substitute(const std::map<std::string, int64_t> &bindings) const;
  /// This dimension with every occurrence of `symbol` replaced by
  /// `replacement` (unknown stays unknown). Throws SizeError on overflow.
  Dim substitute(const std::string &symbol, const Dim &replacement) const;
  /// The symbols occurring in this dimension.
  std::vector<std::string> symbols() const;

  /// Text form: "384", "seq", "batch*seq", "seq*12", "seq+1", "?".
  std::string str() const;
  /// Parses the text form; nullopt on a syntax error. Throws Error when
  /// '(' and unary '-' nest deeper than 64, SizeError when the value
  /// overflows or passes the size limits.
  static std::optional<Dim> parse(const std::string &text);

  /// Terms of the polynomial (monomial -> nonzero coefficient).
  const std::map<Monomial, int64_t> &terms() const { return terms_; }

private:
  void normalize();
  /// Adds sign * b's terms into this one; false on overflow.
  bool accumulate(const Dim &b, int sign);
  /// a op b for op '+', '-' or '*'; nullopt on overflow or past the size
  /// limits (then `tooLarge` says which).
  static std::optional<Dim> combine(const Dim &a, char op, const Dim &b, bool &tooLarge);
  /// combine, throwing SizeError that says why.
  static Dim checked(const Dim &a, char op, const Dim &b);

  bool unknown_ = true;
  std::map<Monomial, int64_t> terms_;
};

} // namespace onnxc
