//===- passes/attention/masks/MaskExpr.cpp - Element expressions: constructors and folding ---===//
#include "passes/attention/masks/MaskExpr.h"

#include <cassert>
#include <cmath>
#include <functional>
#include <limits>
#include <unordered_map>

namespace onnxc::mask {

namespace {

bool isArithmetic(ExprKind kind) {
  switch (kind) {
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul:
  case ExprKind::Div:
  case ExprKind::Abs:
  case ExprKind::Min:
  case ExprKind::Max:
    return true;
  default:
    return false;
  }
}

bool isComparison(ExprKind kind) {
  return kind == ExprKind::Less || kind == ExprKind::LessOrEqual || kind == ExprKind::Equal;
}

ExprPtr make(ExprKind kind, DType dtype, std::vector<ExprPtr> operands) {
  auto e = std::make_shared<Expr>();
  e->kind = kind;
  e->dtype = dtype;
  e->operands = std::move(operands);
  return e;
}

ExprPtr boolean(bool value) { return constant(DType::Bool, value ? 1.0 : 0.0); }

std::optional<int64_t> integerValue(const ExprPtr &e) {
  return e->kind == ExprKind::Affine ? e->affine.constantValue() : std::nullopt;
}

/// Folds a comparison whose operands differ by `difference` (a - b), when
/// its sign decides it.
std::optional<bool> decideComparison(ExprKind kind, const Dim &difference) {
  Signs s = possibleSigns(difference);
  switch (kind) {
  case ExprKind::Less:
    if (!s.zero && !s.positive)
      return true;
    if (!s.negative)
      return false;
    break;
  case ExprKind::LessOrEqual:
    if (!s.positive)
      return true;
    if (!s.negative && !s.zero)
      return false;
    break;
  default:
    if (!s.negative && !s.positive)
      return true;
    if (!s.zero)
      return false;
    break;
  }
  return std::nullopt;
}

int64_t truncatingDivide(int64_t a, int64_t b) {
  if (b == 0)
    notProvable("the mask divides by zero");
  if (b == -1)
    return checkedMultiply(a, -1);
  return a / b;
}

/// f32/f64 arithmetic of two constants, rounded as the dtype stores it.
double foldFloat(ExprKind kind, DType dtype, double a, double b) {
  double r = 0;
  switch (kind) {
  case ExprKind::Add:
    r = a + b;
    break;
  case ExprKind::Sub:
    r = a - b;
    break;
  case ExprKind::Mul:
    r = a * b;
    break;
  case ExprKind::Div:
    r = a / b;
    break;
  case ExprKind::Min:
  case ExprKind::Max:
    if (std::isnan(a) || std::isnan(b))
      notProvable("the mask computes NaN");
    r = kind == ExprKind::Min ? std::min(a, b) : std::max(a, b);
    break;
  default:
    assert(false && "not a float binary op");
  }
  if (std::isnan(r))
    notProvable("the mask computes NaN");
  return roundToDType(dtype, r);
}

ExprPtr foldIntegerArithmetic(ExprKind kind, const ExprPtr &a, const ExprPtr &b) {
  if (a->kind != ExprKind::Affine || b->kind != ExprKind::Affine)
    return nullptr;
  const Affine &x = a->affine, &y = b->affine;
  DType dtype = a->dtype;
  std::optional<int64_t> cx = x.constantValue(), cy = y.constantValue();
  switch (kind) {
  case ExprKind::Add:
    return integer(dtype, x + y);
  case ExprKind::Sub:
    return integer(dtype, x - y);
  case ExprKind::Mul:
    if (cx)
      return integer(dtype, scaled(y, *cx));
    if (cy)
      return integer(dtype, scaled(x, *cy));
    if (!x.hasVariables() && !y.hasVariables())
      return integer(dtype, Affine::ofDim(multiplyDims(x.offset, y.offset)));
    return nullptr;
  case ExprKind::Div: {
    if (cx && cy)
      return integer(dtype, Affine::constant(truncatingDivide(*cx, *cy)));
    // An exact quotient of shape arithmetic truncates to itself. With
    // positions, the dividend may leave its dtype where the quotient would
    // not: the node stays for the proof to bound.
    if (!cy || *cy == 0 || x.hasVariables())
      return nullptr;
    Affine q;
    for (const auto &[index, coefficient] : x.coefficients) {
      if (coefficient % *cy != 0)
        return nullptr;
      q.coefficients[index] = coefficient / *cy;
    }
    std::optional<Dim> offset = x.offset.divideExactly(Dim(*cy));
    if (!offset)
      return nullptr;
    q.offset = *offset;
    return integer(dtype, q);
  }
  case ExprKind::Min:
  case ExprKind::Max: {
    if (x.hasVariables() || y.hasVariables())
      return nullptr; // the proof bounds positions first (MaskProof.h)
    Affine difference = x - y;
    std::optional<bool> less = decideComparison(ExprKind::LessOrEqual, difference.offset);
    if (!less)
      return nullptr;
    return (*less == (kind == ExprKind::Min)) ? a : b;
  }
  default:
    return nullptr;
  }
}

ExprPtr foldComparison(ExprKind kind, const ExprPtr &a, const ExprPtr &b) {
  if (a == b && isMaskInteger(a->dtype))
    return boolean(kind != ExprKind::Less);
  if (a->kind == ExprKind::Affine && b->kind == ExprKind::Affine) {
    // Only shape arithmetic is decided here: forms with positions may wrap
    // in the graph, so the proof bounds them before comparing (MaskProof.h).
    if (a->affine.hasVariables() || b->affine.hasVariables())
      return nullptr;
    Affine difference = a->affine - b->affine;
    std::optional<bool> decided = decideComparison(kind, difference.offset);
    return decided ? boolean(*decided) : nullptr;
  }
  std::optional<double> x = constantValue(a), y = constantValue(b);
  if (!x || !y)
    return nullptr;
  bool r = kind == ExprKind::Less ? *x < *y : kind == ExprKind::LessOrEqual ? *x <= *y : *x == *y;
  return boolean(r);
}

ExprPtr foldLogic(ExprKind kind, const ExprPtr &a, const ExprPtr &b) {
  std::optional<double> x = constantValue(a), y = constantValue(b);
  if (x && y) {
    bool p = *x != 0, q = *y != 0;
    return boolean(kind == ExprKind::And ? (p && q) : kind == ExprKind::Or ? (p || q) : (p != q));
  }
  if (!x && y)
    return foldLogic(kind, b, a);
  if (!x)
    return a == b && kind != ExprKind::Xor ? a : nullptr;
  bool p = *x != 0;
  switch (kind) {
  case ExprKind::And:
    return p ? b : boolean(false);
  case ExprKind::Or:
    return p ? boolean(true) : b;
  default:
    return p ? unary(ExprKind::Not, b) : b;
  }
}

/// Converts an integer constant to `to`; nullopt when no exact rule applies.
ExprPtr castIntegerConstant(int64_t v, DType to) {
  if (isMaskInteger(to))
    return integer(to, Affine::constant(v));
  if (to == DType::Bool)
    return boolean(v != 0);
  if (v > (int64_t(1) << 53) || v < -(int64_t(1) << 53))
    notProvable("a large integer of the mask is converted to floating point");
  return constant(to, double(v));
}

ExprPtr castNumber(double v, DType from, DType to) {
  if (to == DType::Bool)
    return boolean(v != 0);
  if (isFloat(to)) {
    bool narrowFromDouble = from == DType::F64 && (to == DType::F16 || to == DType::BF16);
    if (narrowFromDouble && double(float(v)) != v)
      notProvable("an f64 value of the mask is rounded to half precision");
    return constant(to, v);
  }
  if (!isMaskInteger(to))
    notProvable("the mask converts to an unsupported type");
  double t = std::trunc(v);
  if (!(t >= double(minOf(to)) && t <= double(maxOf(to))))
    notProvable("the mask converts an out-of-range value to an integer");
  return integer(to, Affine::constant(int64_t(t)));
}

bool isWidening(DType from, DType to) {
  if (!isMaskInteger(from) || !isMaskInteger(to))
    return false;
  return minOf(to) <= minOf(from) && maxOf(to) >= maxOf(from);
}

} // namespace

// --- constructors -----------------------------------------------------------

ExprPtr constant(DType dtype, double value) {
  if (isMaskInteger(dtype)) {
    if (value != std::trunc(value) || std::fabs(value) > double(int64_t(1) << 53))
      notProvable("an integer constant is not exact");
    return integer(dtype, Affine::constant(int64_t(value)));
  }
  if (!isFloat(dtype) && dtype != DType::Bool)
    notProvable("the mask uses an unsupported element type");
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::Number;
  e->dtype = dtype;
  e->number = roundToDType(dtype, value);
  return e;
}

ExprPtr integer(DType dtype, const Affine &form) {
  if (!isMaskInteger(dtype))
    notProvable("the mask uses an unsupported integer type");
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::Affine;
  e->dtype = dtype;
  e->affine = form;
  if (std::optional<int64_t> c = form.constantValue())
    e->affine = Affine::constant(narrowInteger(*c, dtype));
  return e;
}

ExprPtr lookup(const Tensor &table, std::vector<Affine> indices) {
  assert(indices.size() == table.rank());
  bool allConstant = true;
  int64_t flat = 0;
  for (size_t k = 0; k < indices.size(); ++k) {
    std::optional<int64_t> index = indices[k].constantValue();
    if (!index) {
      allConstant = false;
      continue;
    }
    if (*index < 0 || *index >= table.dims()[k])
      notProvable("a stored table is read out of its bounds");
    flat = flat * table.dims()[k] + *index;
  }
  if (allConstant) {
    if (isMaskInteger(table.dtype()))
      return integer(table.dtype(), Affine::constant(table.elementAsInt64(flat)));
    return constant(table.dtype(), table.elementAsDouble(flat));
  }
  if (!isMaskInteger(table.dtype()) && !isFloat(table.dtype()) && table.dtype() != DType::Bool)
    notProvable("a stored table has an unsupported element type");
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::Lookup;
  e->dtype = table.dtype();
  e->table = table;
  e->indices = std::move(indices);
  return e;
}

ExprPtr series(DType dtype, std::vector<double> values, int64_t start) {
  auto e = std::make_shared<Expr>();
  e->kind = ExprKind::Series;
  e->dtype = dtype;
  e->series = std::move(values);
  e->seriesStart = start;
  return e;
}

ExprPtr binary(ExprKind kind, const ExprPtr &a, const ExprPtr &b) {
  if (a->dtype != b->dtype)
    notProvable("a mask op mixes element types");
  DType dtype = a->dtype;
  if (kind == ExprKind::And || kind == ExprKind::Or || kind == ExprKind::Xor) {
    if (dtype != DType::Bool)
      notProvable("a logical op of the mask reads non-bool values");
    if (ExprPtr folded = foldLogic(kind, a, b))
      return folded;
    return make(kind, DType::Bool, {a, b});
  }
  if (isComparison(kind)) {
    if (ExprPtr folded = foldComparison(kind, a, b))
      return folded;
    return make(kind, DType::Bool, {a, b});
  }
  assert(isArithmetic(kind) && "not a binary op");
  if (dtype == DType::Bool)
    notProvable("the mask does arithmetic on bool values");
  if (isMaskInteger(dtype)) {
    if (ExprPtr folded = foldIntegerArithmetic(kind, a, b))
      return folded;
    return make(kind, dtype, {a, b});
  }
  if (dtype != DType::F32 && dtype != DType::F64)
    notProvable("the mask does half-precision arithmetic");
  std::optional<double> x = constantValue(a), y = constantValue(b);
  if (x && y)
    return constant(dtype, foldFloat(kind, dtype, *x, *y));
  return make(kind, dtype, {a, b});
}

ExprPtr unary(ExprKind kind, const ExprPtr &a) {
  std::optional<double> value = constantValue(a);
  switch (kind) {
  case ExprKind::Not:
    if (a->dtype != DType::Bool)
      notProvable("Not of a non-bool mask value");
    if (value)
      return boolean(*value == 0);
    if (a->kind == ExprKind::Not)
      return a->operands[0];
    return make(kind, DType::Bool, {a});
  case ExprKind::Neg:
    if (a->kind == ExprKind::Affine)
      return integer(a->dtype, scaled(a->affine, -1));
    if (a->dtype == DType::Bool)
      notProvable("the mask does arithmetic on bool values");
    if (value)
      return constant(a->dtype, -*value);
    return make(kind, a->dtype, {a});
  case ExprKind::Abs:
    if (a->dtype == DType::Bool)
      notProvable("the mask does arithmetic on bool values");
    if (std::optional<int64_t> c = integerValue(a))
      return integer(a->dtype, Affine::constant(checkedMultiply(*c, *c < 0 ? -1 : 1)));
    if (value && isFloat(a->dtype))
      return constant(a->dtype, std::fabs(*value));
    return make(kind, a->dtype, {a});
  default:
    assert(false && "not a unary op");
    return a;
  }
}

ExprPtr select(const ExprPtr &condition, const ExprPtr &onTrue, const ExprPtr &onFalse) {
  if (condition->dtype != DType::Bool)
    notProvable("a Where condition of the mask is not bool");
  if (onTrue->dtype != onFalse->dtype)
    notProvable("a Where of the mask mixes element types");
  if (std::optional<double> c = constantValue(condition))
    return *c != 0 ? onTrue : onFalse;
  if (onTrue == onFalse)
    return onTrue;
  return make(ExprKind::Select, onTrue->dtype, {condition, onTrue, onFalse});
}

ExprPtr cast(const ExprPtr &a, DType to) {
  if (a->dtype == to)
    return a;
  if (!isMaskInteger(to) && !isFloat(to) && to != DType::Bool)
    notProvable("the mask converts to an unsupported type");
  if (std::optional<int64_t> c = integerValue(a))
    return castIntegerConstant(*c, to);
  if (a->kind == ExprKind::Number)
    return castNumber(a->number, a->dtype, to);
  if (a->kind == ExprKind::Affine && !a->affine.hasVariables() && isWidening(a->dtype, to))
    return integer(to, a->affine);
  return make(ExprKind::Cast, to, {a});
}

ExprPtr substitute(const ExprPtr &root, const std::vector<Affine> &replacement) {
  std::unordered_map<const Expr *, ExprPtr> done;
  std::function<ExprPtr(const ExprPtr &)> visit = [&](const ExprPtr &e) -> ExprPtr {
    auto found = done.find(e.get());
    if (found != done.end())
      return found->second;
    ExprPtr r;
    std::vector<ExprPtr> ops;
    for (const ExprPtr &operand : e->operands)
      ops.push_back(visit(operand));
    switch (e->kind) {
    case ExprKind::Number:
    case ExprKind::Series:
      r = e;
      break;
    case ExprKind::Affine:
      r = integer(e->dtype, substitute(e->affine, replacement));
      break;
    case ExprKind::Lookup: {
      std::vector<Affine> indices;
      for (const Affine &index : e->indices)
        indices.push_back(substitute(index, replacement));
      r = lookup(e->table, std::move(indices));
      break;
    }
    case ExprKind::Neg:
    case ExprKind::Abs:
    case ExprKind::Not:
      r = unary(e->kind, ops[0]);
      break;
    case ExprKind::Select:
      r = select(ops[0], ops[1], ops[2]);
      break;
    case ExprKind::Cast:
      r = cast(ops[0], e->dtype);
      break;
    default:
      r = binary(e->kind, ops[0], ops[1]);
      break;
    }
    done[e.get()] = r;
    return r;
  };
  return visit(root);
}

std::optional<double> constantValue(const ExprPtr &e) {
  if (e->kind == ExprKind::Number)
    return e->number;
  if (std::optional<int64_t> c = integerValue(e))
    return double(*c);
  return std::nullopt;
}

std::optional<Dim> dimValue(const ExprPtr &e) {
  if (e->kind != ExprKind::Affine || e->affine.hasVariables())
    return std::nullopt;
  return e->affine.offset;
}

} // namespace onnxc::mask
