//===- ir/shape/ShapeAssumption.cpp - What shape inference took on trust --------===//
#include "ir/shape/ShapeAssumption.h"

#include "ir/Error.h"

namespace onnxc {

std::optional<bool> ShapeAssumption::holds(const std::map<std::string, int64_t> &bindings) const {
  std::optional<int64_t> value;
  try {
    value = expr.evaluate(bindings);
  } catch (const SizeError &) {
    return false;
  }
  if (!value)
    return std::nullopt;
  return kind == Kind::Zero ? *value == 0 : *value >= 0;
}

bool ShapeAssumption::provable() const {
  if (expr.isUnknown())
    return false;
  if (std::optional<int64_t> c = expr.constant())
    return kind == Kind::Zero ? *c == 0 : *c >= 0;
  if (kind == Kind::Zero)
    return false;
  // Symbols are dimensions, never negative: nonnegative coefficients
  // everywhere make the polynomial nonnegative.
  for (const auto &[monomial, coefficient] : expr.terms())
    if (coefficient < 0)
      return false;
  return true;
}

bool ShapeAssumption::refuted() const {
  std::optional<int64_t> c = expr.constant();
  return c && !provable();
}

} // namespace onnxc
