//===- passes/attention/masks/MaskAffine.cpp - Affine forms, checked Dims, mask dtypes ---===//
#include "passes/attention/masks/MaskExpr.h"

#include <cassert>
#include <cmath>

namespace onnxc::mask {

void notProvable(std::string reason) { throw NotProvable{std::move(reason)}; }

namespace {

/// Coefficients of Dims that mask arithmetic touches stay below this, and
/// Dims have at most kMaxTerms terms, so no product or sum of two of them
/// overflows int64 (8 * 8 products of at most 2^56 each).
constexpr int64_t kMaxDimCoefficient = int64_t(1) << 28;
constexpr size_t kMaxTerms = 8;

void guardDim(const Dim &d) {
  if (d.isUnknown())
    notProvable("a dimension is unknown");
  if (d.terms().size() > kMaxTerms)
    notProvable("shape arithmetic is too large to follow");
  for (const auto &[monomial, coefficient] : d.terms())
    if (coefficient > kMaxDimCoefficient || coefficient < -kMaxDimCoefficient)
      notProvable("shape arithmetic is too large to follow");
}

} // namespace

int64_t checkedAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    notProvable("integer arithmetic of the mask overflows int64");
  return r;
}

int64_t checkedMultiply(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    notProvable("integer arithmetic of the mask overflows int64");
  return r;
}

Signs possibleSigns(const Dim &d) {
  if (std::optional<int64_t> c = d.constant()) {
    int64_t value = *c;
    Signs s;
    s.negative = value < 0;
    s.zero = value == 0;
    s.positive = value > 0;
    return s;
  }
  bool allNonNegative = true, allNonPositive = true;
  int64_t constantTerm = 0;
  for (const auto &[monomial, coefficient] : d.terms()) {
    allNonNegative &= coefficient >= 0;
    allNonPositive &= coefficient <= 0;
    if (monomial.empty())
      constantTerm = coefficient;
  }
  if (allNonNegative)
    return {false, constantTerm == 0, true};
  if (allNonPositive)
    return {true, constantTerm == 0, false};
  return {true, true, true};
}

// --- Affine ---------------------------------------------------------------

Affine Affine::ofDim(const Dim &dim) {
  if (dim.isUnknown())
    notProvable("a dimension is unknown");
  return Affine{{}, dim};
}

int64_t Affine::coefficient(int index) const {
  auto it = coefficients.find(index);
  return it == coefficients.end() ? 0 : it->second;
}

std::optional<int64_t> Affine::constantValue() const {
  return hasVariables() ? std::nullopt : offset.constant();
}

std::string Affine::str() const {
  std::string out;
  for (const auto &[index, c] : coefficients) {
    std::string var = "x" + std::to_string(index);
    if (out.empty())
      out = c == 1 ? var : c == -1 ? "-" + var : std::to_string(c) + "*" + var;
    else
      out += (c < 0 ? " - " : " + ") +
             (c == 1 || c == -1 ? var : std::to_string(c < 0 ? -c : c) + "*" + var);
  }
  std::string rest = offset.str();
  if (out.empty())
    return rest;
  if (rest == "0")
    return out;
  return out + (rest[0] == '-' ? " - " + rest.substr(1) : " + " + rest);
}

Affine operator+(const Affine &a, const Affine &b) {
  Affine r = a;
  for (const auto &[index, c] : b.coefficients) {
    int64_t sum = checkedAdd(r.coefficient(index), c);
    if (sum == 0)
      r.coefficients.erase(index);
    else
      r.coefficients[index] = sum;
  }
  r.offset = addDims(a.offset, b.offset);
  return r;
}

Affine scaled(const Affine &a, int64_t factor) {
  Affine r;
  if (factor == 0)
    return r;
  for (const auto &[index, c] : a.coefficients)
    r.coefficients[index] = checkedMultiply(c, factor);
  r.offset = multiplyDims(a.offset, Dim(factor));
  return r;
}

Affine operator-(const Affine &a, const Affine &b) { return a + scaled(b, -1); }

Affine substitute(const Affine &a, const std::vector<Affine> &replacement) {
  Affine r = Affine::ofDim(a.offset);
  for (const auto &[index, c] : a.coefficients) {
    assert(size_t(index) < replacement.size() && "variable without a replacement");
    r = r + scaled(replacement[size_t(index)], c);
  }
  return r;
}

Dim addDims(const Dim &a, const Dim &b) {
  if (std::optional<int64_t> x = a.constant())
    if (std::optional<int64_t> y = b.constant())
      return Dim(checkedAdd(*x, *y));
  guardDim(a);
  guardDim(b);
  return a + b;
}

Dim subtractDims(const Dim &a, const Dim &b) {
  if (std::optional<int64_t> y = b.constant())
    return addDims(a, Dim(checkedMultiply(*y, -1)));
  return addDims(a, multiplyDims(b, Dim(int64_t(-1))));
}

Dim multiplyDims(const Dim &a, const Dim &b) {
  if (std::optional<int64_t> x = a.constant())
    if (std::optional<int64_t> y = b.constant())
      return Dim(checkedMultiply(*x, *y));
  guardDim(a);
  guardDim(b);
  return a * b;
}

std::optional<int> signOf(const Dim &dim, bool orZero) {
  Signs s = possibleSigns(dim);
  if (!s.negative && !s.positive)
    return 0;
  if (!s.negative && (!s.zero || orZero))
    return 1;
  if (!s.positive && (!s.zero || orZero))
    return -1;
  return std::nullopt;
}

// --- dtypes -----------------------------------------------------------------

bool isMaskInteger(DType dtype) {
  return isInteger(dtype) && dtype != DType::U64 && !isFourBit(dtype);
}

int64_t minOf(DType dtype) {
  switch (dtype) {
  case DType::I8:
    return INT8_MIN;
  case DType::I16:
    return INT16_MIN;
  case DType::I32:
    return INT32_MIN;
  case DType::I64:
    return INT64_MIN;
  default:
    return 0;
  }
}

int64_t maxOf(DType dtype) {
  switch (dtype) {
  case DType::I4:
    return 7;
  case DType::U4:
    return 15;
  case DType::I8:
    return INT8_MAX;
  case DType::U8:
    return UINT8_MAX;
  case DType::I16:
    return INT16_MAX;
  case DType::U16:
    return UINT16_MAX;
  case DType::I32:
    return INT32_MAX;
  case DType::U32:
    return UINT32_MAX;
  case DType::Bool:
    return 1;
  default:
    return INT64_MAX;
  }
}

double roundToDType(DType dtype, double value) {
  switch (dtype) {
  case DType::F32:
    return double(float(value));
  case DType::F16:
    return double(halfToFloat(floatToHalf(float(value))));
  case DType::BF16:
    return double(bfloat16ToFloat(floatToBfloat16(float(value))));
  case DType::Bool:
    return value != 0 ? 1.0 : 0.0;
  default:
    return value;
  }
}

} // namespace onnxc::mask
