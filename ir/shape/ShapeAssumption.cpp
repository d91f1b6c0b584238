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

namespace {

/// The value an equality `a*symbol + b == 0` fixes its one symbol to (a
/// dim: 0 or more): the symbol and value; nullopt when it is not of that
/// form. Throws when no dim satisfies it.
std::optional<std::pair<std::string, int64_t>> fixedValue(const ShapeAssumption &assumption) {
  std::vector<std::string> symbols = assumption.expr.symbols();
  if (assumption.kind != ShapeAssumption::Kind::Zero || symbols.size() != 1)
    return std::nullopt;
  const std::string &symbol = symbols[0];
  auto at = [&](int64_t value) { return assumption.expr.substitute({{symbol, value}}).constant(); };
  std::optional<int64_t> b = at(0), ab = at(1), two = at(2), three = at(3);
  if (!b || !ab || !two || !three)
    return std::nullopt;
  int64_t a = *ab - *b;
  if (*two != 2 * a + *b || *three != 3 * a + *b || a == 0)
    return std::nullopt; // not linear (or constant: refuted() covers it)
  if (*b % a != 0 || -*b / a < 0)
    fail("the assumption '", assumption.message, "' (", assumption.expr.str(),
         " == 0) holds for no dimension ", symbol);
  return std::pair{symbol, -*b / a};
}

} // namespace

void checkAssumptionsCanHold(const std::vector<ShapeAssumption> &assumptions) {
  std::map<std::string, std::pair<int64_t, const ShapeAssumption *>> fixed;
  for (const ShapeAssumption &assumption : assumptions) {
    if (assumption.refuted())
      fail("the assumption '", assumption.message, "' (", assumption.expr.str(),
           assumption.kind == ShapeAssumption::Kind::Zero ? " == 0" : " >= 0", ") never holds");
    std::optional<std::pair<std::string, int64_t>> value = fixedValue(assumption);
    if (!value)
      continue;
    auto [it, fresh] = fixed.emplace(value->first, std::pair{value->second, &assumption});
    if (!fresh && it->second.first != value->second)
      fail("the assumptions '", it->second.second->message, "' and '", assumption.message,
           "' contradict: one needs ", value->first, " = ", it->second.first, ", the other ",
           value->first, " = ", value->second);
  }
  std::map<std::string, int64_t> bindings;
  std::string fixedText;
  for (const auto &[symbol, value] : fixed) {
    bindings[symbol] = value.first;
    fixedText += (fixedText.empty() ? "" : ", ") + symbol + " = " + std::to_string(value.first);
  }
  for (const ShapeAssumption &assumption : assumptions) {
    ShapeAssumption bound = assumption;
    bound.expr = assumption.expr.substitute(bindings);
    if (bound.refuted())
      fail("the assumption '", assumption.message, "' never holds with what the others fix (",
           fixedText, "): ", assumption.expr.str(), " becomes ", bound.expr.str());
  }
}

} // namespace onnxc
