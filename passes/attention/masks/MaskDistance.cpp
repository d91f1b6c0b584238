//===- passes/attention/masks/MaskDistance.cpp - A mask element as a function of i - j ---===//
#include "passes/attention/masks/MaskDistance.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <unordered_map>

namespace onnxc::mask {

namespace {

using Wide = __int128;

constexpr int64_t kMaxBreakpointDistance = int64_t(1) << 21;

Wide wideAbs(Wide v) { return v < 0 ? -v : v; }

Wide floorDivide(Wide a, Wide b) {
  Wide q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Wide ceilDivide(Wide a, Wide b) { return -floorDivide(-a, b); }

int64_t checkedBreakpoint(Wide t) {
  if (t > kMaxBreakpointDistance)
    notProvable("the mask changes further than 2^21 positions from the diagonal");
  return t < 0 ? 0 : int64_t(t);
}

/// A value converted as a Cast to `to` stores it (float and bool sources).
double convertNumber(double v, DType to) {
  if (to == DType::Bool)
    return v != 0 ? 1.0 : 0.0;
  if (isFloat(to))
    return roundToDType(to, v);
  double t = std::trunc(v);
  if (!(t >= double(minOf(to)) && t <= double(maxOf(to))))
    notProvable("the mask converts an out-of-range value to an integer");
  return t;
}

/// The behavior of a node for t = side * d >= bound: affine a*t + b
/// (integers), a constant (everything else), or undefined.
struct Tail {
  enum Kind { Linear, Constant, Undefined } kind = Constant;
  Wide a = 0, b = 0;
  double value = 0;
  int64_t bound = 0;
};

/// The sign a*t + b keeps for every t >= the returned threshold.
std::pair<int, int64_t> eventualSign(Wide a, Wide b) {
  if (a == 0)
    return {b > 0 ? 1 : (b < 0 ? -1 : 0), 0};
  if (a > 0)
    return {1, checkedBreakpoint(floorDivide(-b, a) + 1)};
  return {-1, checkedBreakpoint(floorDivide(b, -a) + 1)};
}

void guardWide(const Tail &t) {
  const Wide limit = Wide(1) << 100;
  if (wideAbs(t.a) > limit || wideAbs(t.b) > limit)
    notProvable("integer arithmetic of the mask overflows int64");
}

struct Interval {
  Wide low = 0, high = 0;
};

/// A node, and the dtypes of its operands.
struct NodeView {
  const Expr &e;
  std::vector<DType> operandTypes;
  bool integerOperands() const { return !operandTypes.empty() && isMaskInteger(operandTypes[0]); }
};

double floatArithmetic(ExprKind kind, DType dtype, double p, double q) {
  switch (kind) {
  case ExprKind::Add:
    return roundToDType(dtype, p + q);
  case ExprKind::Sub:
    return roundToDType(dtype, p - q);
  case ExprKind::Mul:
    return roundToDType(dtype, p * q);
  case ExprKind::Div:
    return roundToDType(dtype, p / q);
  default:
    // ONNX Min and Max propagate NaN.
    if (std::isnan(p) || std::isnan(q))
      return std::nan("");
    return kind == ExprKind::Min ? std::min(p, q) : std::max(p, q);
  }
}

bool compare(ExprKind kind, int sign) {
  switch (kind) {
  case ExprKind::Less:
    return sign == -1;
  case ExprKind::LessOrEqual:
    return sign == -1 || sign == 0;
  default:
    return sign == 0;
  }
}

/// -1, 0, 1, or 2 when unordered (NaN).
int compareNumbers(double p, double q) { return p < q ? -1 : p > q ? 1 : p == q ? 0 : 2; }

bool logic(ExprKind kind, bool p, bool q) {
  return kind == ExprKind::And ? (p && q) : kind == ExprKind::Or ? (p || q) : p != q;
}

NodeView viewOf(const std::vector<const Expr *> &order,
                const std::vector<std::vector<size_t>> &inputs, size_t n) {
  NodeView node{*order[n], {}};
  for (size_t i : inputs[n])
    node.operandTypes.push_back(order[i]->dtype);
  return node;
}

// --- step 3: ranges -----------------------------------------------------------

Interval integerRange(const NodeView &node, const std::vector<Interval> &in) {
  const Expr &e = node.e;
  switch (e.kind) {
  case ExprKind::Affine: {
    Wide c = e.affine.coefficient(kQueryVariable), k = *e.affine.offset.constant();
    return {k - wideAbs(c) * kMaxDistance, k + wideAbs(c) * kMaxDistance};
  }
  case ExprKind::Series: {
    auto [low, high] = std::minmax_element(e.series.begin(), e.series.end());
    return {Wide(int64_t(*low)), Wide(int64_t(*high))};
  }
  case ExprKind::Add:
    return {in[0].low + in[1].low, in[0].high + in[1].high};
  case ExprKind::Sub:
    return {in[0].low - in[1].high, in[0].high - in[1].low};
  case ExprKind::Mul:
  case ExprKind::Div: {
    if (e.kind == ExprKind::Div && in[1].low <= 0 && in[1].high >= 0)
      notProvable("the mask divides by a value that may be zero");
    std::vector<Wide> corners;
    for (Wide p : {in[0].low, in[0].high})
      for (Wide q : {in[1].low, in[1].high})
        corners.push_back(e.kind == ExprKind::Mul ? p * q : p / q);
    auto [low, high] = std::minmax_element(corners.begin(), corners.end());
    return {*low, *high};
  }
  case ExprKind::Neg:
    return {-in[0].high, -in[0].low};
  case ExprKind::Abs:
    if (in[0].low >= 0)
      return in[0];
    if (in[0].high <= 0)
      return {-in[0].high, -in[0].low};
    return {0, std::max(-in[0].low, in[0].high)};
  case ExprKind::Min:
    return {std::min(in[0].low, in[1].low), std::min(in[0].high, in[1].high)};
  case ExprKind::Max:
    return {std::max(in[0].low, in[1].low), std::max(in[0].high, in[1].high)};
  case ExprKind::Select:
    return {std::min(in[1].low, in[2].low), std::max(in[1].high, in[2].high)};
  case ExprKind::Cast: {
    if (isFloat(node.operandTypes[0]))
      notProvable("the mask converts floating-point values to integers");
    Interval r = node.operandTypes[0] == DType::Bool ? Interval{0, 1} : in[0];
    if (r.low < minOf(e.dtype) || r.high > maxOf(e.dtype))
      notProvable("a narrowing Cast of the mask may wrap");
    return r;
  }
  default:
    notProvable("the mask has a node the proof does not follow");
  }
}

/// Conversions the graph computes inexactly (or differently) are refused.
void checkConversion(const NodeView &node, const std::vector<Interval> &in) {
  if (node.e.kind != ExprKind::Cast)
    return;
  DType from = node.operandTypes[0], to = node.e.dtype;
  if (from == DType::F64 && (to == DType::F16 || to == DType::BF16))
    notProvable("an f64 value of the mask is rounded to half precision");
  const Wide exact = Wide(1) << 53;
  if (isMaskInteger(from) && isFloat(to) && (in[0].low < -exact || in[0].high > exact))
    notProvable("a large integer of the mask is converted to floating point");
}

// --- step 4: tails --------------------------------------------------------------

/// The tail of one node from its operands' tails (none undefined), t = side * d.
class TailRule {
public:
  TailRule(const NodeView &node, const std::vector<const Tail *> &in, int side)
      : node_(node), e_(node.e), in_(in), side_(side) {
    for (const Tail *t : in)
      bound_ = std::max(bound_, t->bound);
  }

  Tail run() {
    Tail t = compute();
    t.bound = std::max(t.bound, bound_);
    guardWide(t);
    return t;
  }

private:
  /// The sign a*t + b settles to; the bound grows to where it has.
  int settle(Wide a, Wide b) {
    auto [sign, threshold] = eventualSign(a, b);
    bound_ = std::max(bound_, threshold);
    return sign;
  }
  static Tail linear(Wide a, Wide b) {
    Tail t;
    t.kind = Tail::Linear;
    t.a = a;
    t.b = b;
    return t;
  }
  static Tail constant(double v) {
    Tail t;
    t.value = v;
    return t;
  }

  Tail compute();
  Tail integerArithmetic();
  Tail cast();

  const NodeView &node_;
  const Expr &e_;
  const std::vector<const Tail *> &in_;
  int side_;
  int64_t bound_ = 0;
};

Tail TailRule::integerArithmetic() {
  const Tail &x = *in_[0], &y = *in_[1];
  switch (e_.kind) {
  case ExprKind::Add:
    return linear(x.a + y.a, x.b + y.b);
  case ExprKind::Sub:
    return linear(x.a - y.a, x.b - y.b);
  case ExprKind::Mul:
    if (x.a != 0 && y.a != 0)
      notProvable("the mask multiplies two positions");
    return linear(x.a * y.b + y.a * x.b, x.b * y.b);
  case ExprKind::Div: {
    if (y.a != 0)
      notProvable("the mask divides by a position");
    if (x.a % y.b != 0)
      notProvable("the mask divides a distance by a constant that does not divide it");
    Wide a = x.a / y.b;
    if (a == 0)
      return linear(0, x.b / y.b);
    // Once the numerator's sign (hence the quotient's) settles, truncation
    // rounds the constant part one way.
    settle(x.a, x.b);
    return linear(a, a > 0 ? floorDivide(x.b, y.b) : ceilDivide(x.b, y.b));
  }
  default: { // Min, Max
    bool firstIsLess = settle(x.a - y.a, x.b - y.b) < 0;
    const Tail &pick = (e_.kind == ExprKind::Min) == firstIsLess ? x : y;
    return linear(pick.a, pick.b);
  }
  }
}

Tail TailRule::cast() {
  const Tail &x = *in_[0];
  DType to = e_.dtype;
  if (!node_.integerOperands()) {
    double v = convertNumber(x.value, to);
    return isMaskInteger(to) ? linear(0, Wide(int64_t(v))) : constant(v);
  }
  if (isMaskInteger(to))
    return linear(x.a, x.b);
  if (to == DType::Bool)
    return constant(settle(x.a, x.b) != 0 ? 1 : 0);
  if (x.a != 0)
    notProvable("the mask converts a growing position to floating point");
  return constant(roundToDType(to, double(int64_t(x.b))));
}

Tail TailRule::compute() {
  bool integral = isMaskInteger(e_.dtype);
  switch (e_.kind) {
  case ExprKind::Number:
    return constant(e_.number);
  case ExprKind::Affine:
    return linear(Wide(side_) * e_.affine.coefficient(kQueryVariable),
                  *e_.affine.offset.constant());
  case ExprKind::Series: {
    // Undefined from the first d past the tabulated ones.
    Tail t;
    t.kind = Tail::Undefined;
    t.bound = checkedBreakpoint(side_ > 0 ? Wide(e_.seriesStart) + Wide(e_.series.size())
                                          : 1 - Wide(e_.seriesStart));
    return t;
  }
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul:
  case ExprKind::Div:
  case ExprKind::Min:
  case ExprKind::Max:
    if (integral)
      return integerArithmetic();
    return constant(floatArithmetic(e_.kind, e_.dtype, in_[0]->value, in_[1]->value));
  case ExprKind::Neg:
    return integral ? linear(-in_[0]->a, -in_[0]->b) : constant(-in_[0]->value);
  case ExprKind::Abs:
    if (!integral)
      return constant(std::fabs(in_[0]->value));
    if (settle(in_[0]->a, in_[0]->b) < 0)
      return linear(-in_[0]->a, -in_[0]->b);
    return linear(in_[0]->a, in_[0]->b);
  case ExprKind::Less:
  case ExprKind::LessOrEqual:
  case ExprKind::Equal: {
    const Tail &x = *in_[0], &y = *in_[1];
    int sign =
        node_.integerOperands() ? settle(x.a - y.a, x.b - y.b) : compareNumbers(x.value, y.value);
    return constant(compare(e_.kind, sign) ? 1 : 0);
  }
  case ExprKind::Not:
    return constant(in_[0]->value == 0 ? 1 : 0);
  case ExprKind::And:
  case ExprKind::Or:
  case ExprKind::Xor:
    return constant(logic(e_.kind, in_[0]->value != 0, in_[1]->value != 0) ? 1 : 0);
  case ExprKind::Select:
    return *(in_[0]->value != 0 ? in_[1] : in_[2]);
  case ExprKind::Cast:
    return cast();
  default:
    notProvable("the mask has a node the proof does not follow");
  }
}

// --- step 5: values ---------------------------------------------------------------

DistanceValue integerValue(int64_t v) {
  DistanceValue r;
  r.integer = v;
  r.number = double(v);
  return r;
}

DistanceValue numberValue(double v) {
  DistanceValue r;
  r.number = v;
  return r;
}

/// The node's value at d from its operands' (all defined) values. Integer
/// results are exact: every one fits its dtype (checkRanges).
DistanceValue valueOf(const NodeView &node, const std::vector<const DistanceValue *> &in,
                      int64_t d) {
  const Expr &e = node.e;
  bool integral = isMaskInteger(e.dtype);
  switch (e.kind) {
  case ExprKind::Number:
    return numberValue(e.number);
  case ExprKind::Affine:
    return integerValue(
        int64_t(Wide(e.affine.coefficient(kQueryVariable)) * d + *e.affine.offset.constant()));
  case ExprKind::Series: {
    Wide slot = Wide(d) - e.seriesStart;
    if (slot < 0 || slot >= Wide(e.series.size())) {
      DistanceValue undefined;
      undefined.defined = false;
      return undefined;
    }
    double v = e.series[size_t(slot)];
    return integral ? integerValue(int64_t(v)) : numberValue(v);
  }
  case ExprKind::Add:
  case ExprKind::Sub:
  case ExprKind::Mul:
  case ExprKind::Div:
  case ExprKind::Min:
  case ExprKind::Max: {
    if (!integral)
      return numberValue(floatArithmetic(e.kind, e.dtype, in[0]->number, in[1]->number));
    Wide p = in[0]->integer, q = in[1]->integer;
    Wide r = e.kind == ExprKind::Add   ? p + q
             : e.kind == ExprKind::Sub ? p - q
             : e.kind == ExprKind::Mul ? p * q
             : e.kind == ExprKind::Div ? p / q
             : e.kind == ExprKind::Min ? std::min(p, q)
                                       : std::max(p, q);
    return integerValue(int64_t(r));
  }
  case ExprKind::Neg:
    return integral ? integerValue(-in[0]->integer) : numberValue(-in[0]->number);
  case ExprKind::Abs:
    return integral ? integerValue(in[0]->integer < 0 ? -in[0]->integer : in[0]->integer)
                    : numberValue(std::fabs(in[0]->number));
  case ExprKind::Less:
  case ExprKind::LessOrEqual:
  case ExprKind::Equal: {
    int sign = node.integerOperands()
                   ? (in[0]->integer < in[1]->integer ? -1 : in[0]->integer > in[1]->integer)
                   : compareNumbers(in[0]->number, in[1]->number);
    return numberValue(compare(e.kind, sign) ? 1 : 0);
  }
  case ExprKind::Not:
    return numberValue(in[0]->number == 0 ? 1 : 0);
  case ExprKind::And:
  case ExprKind::Or:
  case ExprKind::Xor:
    return numberValue(logic(e.kind, in[0]->number != 0, in[1]->number != 0) ? 1 : 0);
  case ExprKind::Select:
    return *(in[0]->number != 0 ? in[1] : in[2]);
  case ExprKind::Cast: {
    if (!node.integerOperands()) {
      double x = convertNumber(in[0]->number, e.dtype);
      return integral ? integerValue(int64_t(x)) : numberValue(x);
    }
    int64_t x = in[0]->integer;
    if (integral)
      return integerValue(x);
    return numberValue(e.dtype == DType::Bool ? (x != 0 ? 1 : 0)
                                              : roundToDType(e.dtype, double(x)));
  }
  default:
    notProvable("the mask has a node the proof does not follow");
  }
}

} // namespace

DistanceFunction::DistanceFunction(const ExprPtr &root) {
  std::unordered_map<const Expr *, size_t> slots;
  std::vector<std::pair<const Expr *, size_t>> stack{{root.get(), 0}};
  while (!stack.empty()) {
    auto &[e, next] = stack.back();
    if (slots.count(e)) {
      stack.pop_back();
      continue;
    }
    if (next < e->operands.size()) {
      const Expr *operand = e->operands[next++].get();
      if (!slots.count(operand))
        stack.push_back({operand, 0});
      continue;
    }
    std::vector<size_t> in;
    for (const ExprPtr &operand : e->operands)
      in.push_back(slots.at(operand.get()));
    slots[e] = order_.size();
    order_.push_back(e);
    inputs_.push_back(std::move(in));
    stack.pop_back();
  }
  for (const Expr *e : order_)
    if (e->kind == ExprKind::Lookup)
      notProvable("a stored table is read at positions other than i or j plus a constant");
  checkRanges();
  horizon_ = std::max(tailBound(1), tailBound(-1));
  values_.resize(order_.size());
}

void DistanceFunction::checkRanges() {
  std::vector<Interval> range(order_.size());
  for (size_t n = 0; n < order_.size(); ++n) {
    NodeView node = viewOf(order_, inputs_, n);
    std::vector<Interval> in;
    for (size_t i : inputs_[n])
      in.push_back(range[i]);
    checkConversion(node, in);
    if (!isMaskInteger(node.e.dtype))
      continue;
    Interval r = integerRange(node, in);
    if (r.low < minOf(node.e.dtype) || r.high > maxOf(node.e.dtype))
      notProvable("the mask's integer arithmetic may overflow its type");
    range[n] = r;
  }
}

int64_t DistanceFunction::tailBound(int side) {
  std::vector<Tail> tails(order_.size());
  int64_t horizon = 0;
  for (size_t n = 0; n < order_.size(); ++n) {
    std::vector<const Tail *> in;
    Tail undefined;
    undefined.kind = Tail::Undefined;
    for (size_t i : inputs_[n]) {
      in.push_back(&tails[i]);
      undefined.bound = std::max(undefined.bound, tails[i].bound);
      if (tails[i].kind == Tail::Undefined)
        in.back() = nullptr;
    }
    bool anyUndefined = std::find(in.begin(), in.end(), nullptr) != in.end();
    // Past a table every node reading it is undefined (the graph fails there).
    tails[n] = anyUndefined ? undefined : TailRule(viewOf(order_, inputs_, n), in, side).run();
    horizon = std::max(horizon, tails[n].bound);
  }
  return horizon;
}

DistanceValue DistanceFunction::at(int64_t d) const {
  for (size_t n = 0; n < order_.size(); ++n) {
    std::vector<const DistanceValue *> in;
    bool undefined = false;
    for (size_t i : inputs_[n]) {
      in.push_back(&values_[i]);
      undefined |= !values_[i].defined;
    }
    if (undefined) {
      values_[n] = DistanceValue{};
      values_[n].defined = false;
      continue;
    }
    values_[n] = valueOf(viewOf(order_, inputs_, n), in, d);
  }
  return values_.back();
}

} // namespace onnxc::mask
