//===- ir/shape/Dim.cpp - Symbolic tensor dimensions ------------------------------===//
#include "ir/shape/Dim.h"

#include "ir/Error.h"

#include <algorithm>
#include <cassert>
#include <cctype>

namespace onnxc {

Dim::Dim(int64_t value) : unknown_(false) {
  if (value != 0)
    terms_[{}] = value;
}

Dim Dim::symbol(const std::string &name) {
  Dim d;
  d.unknown_ = false;
  d.terms_[{name}] = 1;
  return d;
}

bool Dim::isConstant() const {
  return !unknown_ && (terms_.empty() || (terms_.size() == 1 && terms_.begin()->first.empty()));
}

bool Dim::isSymbol() const {
  return !unknown_ && terms_.size() == 1 && terms_.begin()->first.size() == 1 &&
         terms_.begin()->second == 1;
}

std::optional<int64_t> Dim::constant() const {
  if (!isConstant())
    return std::nullopt;
  return terms_.empty() ? 0 : terms_.begin()->second;
}

const std::string &Dim::symbolName() const {
  assert(isSymbol());
  return terms_.begin()->first.front();
}

void Dim::normalize() {
  for (auto it = terms_.begin(); it != terms_.end();)
    it = it->second == 0 ? terms_.erase(it) : std::next(it);
}

bool Dim::accumulate(const Dim &b, int sign) {
  for (const auto &[mono, coeff] : b.terms_) {
    int64_t &sum = terms_[mono];
    bool overflow = sign > 0 ? __builtin_add_overflow(sum, coeff, &sum)
                             : __builtin_sub_overflow(sum, coeff, &sum);
    if (overflow)
      return false;
  }
  normalize();
  return true;
}

std::optional<Dim> Dim::combine(const Dim &a, char op, const Dim &b, bool &tooLarge) {
  tooLarge = false;
  if (a.unknown_ || b.unknown_)
    return Dim();
  if (op != '*') {
    Dim r = a;
    if (!r.accumulate(b, op == '+' ? +1 : -1))
      return std::nullopt;
    tooLarge = r.terms_.size() > kMaxTerms;
    return tooLarge ? std::nullopt : std::optional<Dim>(r);
  }
  Dim r(0);
  // Both have at most kMaxTerms terms, so this loop is bounded; a result
  // past the limits is refused.
  for (const auto &[ma, ca] : a.terms_) {
    for (const auto &[mb, cb] : b.terms_) {
      if (ma.size() + mb.size() > kMaxDegree) {
        tooLarge = true;
        return std::nullopt;
      }
      Dim::Monomial m = ma;
      m.insert(m.end(), mb.begin(), mb.end());
      std::sort(m.begin(), m.end());
      int64_t product;
      if (__builtin_mul_overflow(ca, cb, &product))
        return std::nullopt;
      int64_t &sum = r.terms_[m];
      if (__builtin_add_overflow(sum, product, &sum))
        return std::nullopt;
    }
  }
  r.normalize();
  tooLarge = r.terms_.size() > kMaxTerms;
  return tooLarge ? std::nullopt : std::optional<Dim>(r);
}

std::optional<Dim> Dim::tryAdd(const Dim &a, const Dim &b) {
  bool tooLarge;
  return combine(a, '+', b, tooLarge);
}

std::optional<Dim> Dim::trySubtract(const Dim &a, const Dim &b) {
  bool tooLarge;
  return combine(a, '-', b, tooLarge);
}

std::optional<Dim> Dim::tryMultiply(const Dim &a, const Dim &b, bool *tooLarge) {
  bool large;
  std::optional<Dim> r = combine(a, '*', b, large);
  if (tooLarge)
    *tooLarge = large;
  return r;
}

namespace {
/// The text of `d`, cut short for an error line.
std::string excerpt(const Dim &d) {
  std::string text = d.str();
  return text.size() <= 120 ? text : text.substr(0, 100) + "...";
}
} // namespace

Dim Dim::checked(const Dim &a, char op, const Dim &b) {
  bool tooLarge;
  if (std::optional<Dim> r = combine(a, op, b, tooLarge))
    return *r;
  std::string operands = ": (" + excerpt(a) + ") " + op + " (" + excerpt(b) + ")";
  if (tooLarge)
    throw SizeError("dimension expression past " + std::to_string(kMaxTerms) + " terms or degree " +
                    std::to_string(kMaxDegree) + operands);
  throw SizeError("dimension arithmetic overflows int64" + operands);
}

Dim operator+(const Dim &a, const Dim &b) { return Dim::checked(a, '+', b); }
Dim operator-(const Dim &a, const Dim &b) { return Dim::checked(a, '-', b); }
Dim operator*(const Dim &a, const Dim &b) { return Dim::checked(a, '*', b); }

std::optional<Dim> Dim::divideExactly(const Dim &divisor) const {
  if (unknown_ || divisor.unknown_ || divisor.terms_.size() != 1)
    return std::nullopt;
  const auto &[divMono, divCoeff] = *divisor.terms_.begin();
  Dim r(0);
  for (const auto &[mono, coeff] : terms_) {
    // INT64_MIN / -1 does not fit (and traps on x86).
    if (divCoeff == -1 && coeff == INT64_MIN)
      return std::nullopt;
    if (coeff % divCoeff != 0)
      return std::nullopt;
    // Remove divMono's symbols from mono (both sorted multisets).
    Monomial rest;
    if (!std::includes(mono.begin(), mono.end(), divMono.begin(), divMono.end()))
      return std::nullopt;
    std::set_difference(mono.begin(), mono.end(), divMono.begin(), divMono.end(),
                        std::back_inserter(rest));
    // Distinct monomials stay distinct once divMono is removed from each.
    r.terms_[rest] = coeff / divCoeff;
  }
  r.normalize();
  return r;
}

bool Dim::operator==(const Dim &other) const {
  return unknown_ == other.unknown_ && terms_ == other.terms_;
}

std::optional<int64_t> Dim::evaluate(const std::map<std::string, int64_t> &bindings) const {
  if (unknown_)
    return std::nullopt;
  int64_t total = 0;
  for (const auto &[mono, coeff] : terms_) {
    int64_t term = coeff;
    for (const std::string &sym : mono) {
      auto it = bindings.find(sym);
      if (it == bindings.end())
        return std::nullopt;
      if (__builtin_mul_overflow(term, it->second, &term))
        throw SizeError("dimension " + str() + " overflows int64 for " + sym + " = " +
                        std::to_string(it->second));
    }
    if (__builtin_add_overflow(total, term, &total))
      throw SizeError("dimension " + str() + " overflows int64 for the bound symbols");
  }
  return total;
}

Dim Dim::substitute(const std::map<std::string, int64_t> &bindings) const {
  if (unknown_)
    return Dim();
  Dim result(0);
  for (const auto &[mono, coeff] : terms_) {
    Dim term(coeff);
    for (const std::string &sym : mono) {
      auto it = bindings.find(sym);
      term = term * (it == bindings.end() ? Dim::symbol(sym) : Dim(it->second));
    }
    result = result + term;
  }
  return result;
}

Dim Dim::substitute(const std::string &symbol, const Dim &replacement) const {
  if (unknown_)
    return Dim();
  Dim result(0);
  for (const auto &[mono, coeff] : terms_) {
    Dim term(coeff);
    for (const std::string &sym : mono)
      term = term * (sym == symbol ? replacement : Dim::symbol(sym));
    result = result + term;
  }
  return result;
}

std::vector<std::string> Dim::symbols() const {
  std::vector<std::string> result;
  for (const auto &[mono, coeff] : terms_)
    for (const std::string &sym : mono)
      if (std::find(result.begin(), result.end(), sym) == result.end())
        result.push_back(sym);
  return result;
}

// Printing order: higher-degree monomials first, then lexicographic; the
// constant term last. Each term prints as "a*b*coeff" ("seq*12"), coefficient
// omitted when 1.
std::string Dim::str() const {
  if (unknown_)
    return "?";
  if (terms_.empty())
    return "0";
  std::vector<std::pair<Monomial, int64_t>> ordered(terms_.begin(), terms_.end());
  std::stable_sort(ordered.begin(), ordered.end(),
                   [](const auto &x, const auto &y) { return x.first.size() > y.first.size(); });
  std::string out;
  bool first = true;
  for (const auto &[mono, coeff] : ordered) {
    // Unsigned, so that INT64_MIN prints as itself.
    uint64_t magnitude = coeff < 0 ? 0 - uint64_t(coeff) : uint64_t(coeff);
    if (coeff < 0)
      out += "-";
    else if (!first)
      out += "+";
    first = false;
    std::string term;
    for (const std::string &sym : mono)
      term += (term.empty() ? "" : "*") + sym;
    if (term.empty())
      term = std::to_string(magnitude);
    else if (magnitude != 1)
      term += "*" + std::to_string(magnitude);
    out += term;
  }
  return out;
}

namespace {
// Recursive-descent parser: expr := term (('+'|'-') term)*;
// term := factor ('*' factor)*; factor := '-' factor | int | ident | '(' expr ')'.
// Nesting ('(' and unary '-') is limited so that no text can exhaust the
// stack, and the arithmetic throws SizeError past Dim's size limits, so the
// time stays near linear in the text; whatever Dim::str prints parses.
class DimParser {
public:
  explicit DimParser(const std::string &text) : text_(text) {}

  std::optional<Dim> parseAll() {
    skipSpace();
    if (text_ == "?")
      return Dim::unknown();
    std::optional<Dim> d = parseExpr();
    skipSpace();
    if (!d || pos_ != text_.size())
      return std::nullopt;
    return d;
  }

private:
  void skipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool consume(char c) {
    skipSpace();
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  std::optional<Dim> parseExpr() {
    std::optional<Dim> lhs = parseTerm();
    while (lhs) {
      if (consume('+')) {
        std::optional<Dim> rhs = parseTerm();
        if (!rhs)
          return std::nullopt;
        lhs = *lhs + *rhs;
      } else if (consume('-')) {
        std::optional<Dim> rhs = parseTerm();
        if (!rhs)
          return std::nullopt;
        lhs = *lhs - *rhs;
      } else {
        break;
      }
    }
    return lhs;
  }
  std::optional<Dim> parseTerm() {
    std::optional<Dim> lhs = parseFactor();
    while (lhs && consume('*')) {
      skipSpace();
      // 2^63 fits only as the magnitude of a negative coefficient, which is
      // how Dim::str prints n*INT64_MIN: "-n*9223372036854775808".
      static const std::string kLowestMagnitude = "9223372036854775808";
      if (text_.compare(pos_, kLowestMagnitude.size(), kLowestMagnitude) == 0 &&
          (pos_ + kLowestMagnitude.size() == text_.size() ||
           !std::isdigit(static_cast<unsigned char>(text_[pos_ + kLowestMagnitude.size()])))) {
        pos_ += kLowestMagnitude.size();
        lhs = (-*lhs) * Dim(INT64_MIN);
        continue;
      }
      std::optional<Dim> rhs = parseFactor();
      if (!rhs)
        return std::nullopt;
      lhs = *lhs * *rhs;
    }
    return lhs;
  }
  static constexpr unsigned kMaxNesting = 64;

  /// Digits at pos_ as a magnitude up to 2^63 (so "-9223372036854775808",
  /// which Dim::str prints for INT64_MIN, reads back).
  std::optional<uint64_t> parseMagnitude() {
    uint64_t value = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      unsigned digit = unsigned(text_[pos_++] - '0');
      if (value > (uint64_t(1) << 63) / 10 || value * 10 + digit > uint64_t(1) << 63)
        return std::nullopt;
      value = value * 10 + digit;
    }
    return value;
  }

  std::optional<Dim> parseFactor() {
    skipSpace();
    if (pos_ >= text_.size())
      return std::nullopt;
    if (nesting_ >= kMaxNesting)
      throw Error("dimension expression nests deeper than " + std::to_string(kMaxNesting) +
                  " levels of '(' and '-'");
    char c = text_[pos_];
    if (c == '-') {
      ++pos_;
      if (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        std::optional<uint64_t> magnitude = parseMagnitude();
        if (!magnitude)
          return std::nullopt;
        return Dim(int64_t(0 - *magnitude));
      }
      ++nesting_;
      std::optional<Dim> inner = parseFactor();
      --nesting_;
      return inner ? std::optional<Dim>(-*inner) : std::nullopt;
    }
    if (c == '(') {
      ++pos_;
      ++nesting_;
      std::optional<Dim> inner = parseExpr();
      --nesting_;
      if (!inner || !consume(')'))
        return std::nullopt;
      return inner;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      std::optional<uint64_t> magnitude = parseMagnitude();
      if (!magnitude || *magnitude > uint64_t(INT64_MAX))
        return std::nullopt;
      return Dim(int64_t(*magnitude));
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t start = pos_;
      while (pos_ < text_.size() &&
             (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_'))
        ++pos_;
      return Dim::symbol(text_.substr(start, pos_ - start));
    }
    return std::nullopt;
  }

  const std::string &text_;
  size_t pos_ = 0;
  unsigned nesting_ = 0;
};
} // namespace

std::optional<Dim> Dim::parse(const std::string &text) { return DimParser(text).parseAll(); }

} // namespace onnxc
