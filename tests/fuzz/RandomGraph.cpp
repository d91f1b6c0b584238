//===- tests/fuzz/RandomGraph.cpp - Small valid graphs from fuzz bytes -----===//
//
// The builder keeps, for every value, its dtype, its dims and whether it
// still holds exactly what the inputs and constants held (no rounding
// happened on the way). Comparisons, Floor, Cast to an integer and the like
// are discontinuous, so they only take exact values: a rounding difference
// of one ulp between the compiled code and the evaluator could otherwise
// flip them and look like a bug.
//
//===----------------------------------------------------------------------===//
#include "RandomGraph.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <numeric>
#include <sstream>

namespace onnxc::fuzz {

namespace {

constexpr int64_t kSymbolMax = 5;
constexpr int64_t kMaxElements = 4096;
constexpr int64_t kStaticSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};

/// A dim: a constant, or a named one (a symbol, or a dim computed from one
/// that the generator does not model, like a slice of n) with an upper bound.
struct GenDim {
  std::string name;
  int64_t size = 1;
  bool isStatic() const { return name.empty(); }
  bool operator==(const GenDim &other) const {
    return name == other.name && (!isStatic() || size == other.size);
  }
};
using GenDims = std::vector<GenDim>;

enum class Kind { F32, I64, Bool };

struct GenValue {
  std::string name;
  Kind kind;
  GenDims dims;
  bool exact;
  std::string inputType; // the declared type, for graph inputs
};

const char *kindName(Kind kind) {
  switch (kind) {
  case Kind::F32:
    return "f32";
  case Kind::I64:
    return "i64";
  case Kind::Bool:
    return "bool";
  }
  return "?";
}

int64_t upperElements(const GenDims &dims) {
  int64_t count = 1;
  for (const GenDim &d : dims)
    count = std::min(count * std::max<int64_t>(d.size, 1), kMaxElements + 1);
  return count;
}

/// Numpy broadcast of two dim lists; false when they do not broadcast
/// for every binding of the named dims. With `assume`, a named dim facing a
/// constant c > 1 broadcasts to c, as shape inference lets it (the compiled
/// model must then check at run time that the dim is 1 or c).
bool broadcastDims(const GenDims &a, const GenDims &b, GenDims &out, bool assume = false) {
  size_t rank = std::max(a.size(), b.size());
  out.assign(rank, GenDim());
  for (size_t i = 0; i < rank; ++i) {
    const GenDim *x = i < rank - a.size() ? nullptr : &a[i - (rank - a.size())];
    const GenDim *y = i < rank - b.size() ? nullptr : &b[i - (rank - b.size())];
    if (!x || (x->isStatic() && x->size == 1))
      out[i] = y ? *y : *x;
    else if (!y || (y->isStatic() && y->size == 1) || *x == *y)
      out[i] = *x;
    else if (assume && x->isStatic() != y->isStatic())
      out[i] = x->isStatic() ? *x : *y;
    else
      return false;
  }
  return true;
}

std::string intList(const std::vector<int64_t> &values) {
  std::string text = "[";
  for (size_t i = 0; i < values.size(); ++i)
    text += (i ? ", " : "") + std::to_string(values[i]);
  return text + "]";
}

class Builder {
public:
  explicit Builder(ByteReader &in) : in_(in) {}

  RandomCase build() {
    RandomCase result;
    assumeBroadcasts_ = in_.below(4) == 0;
    unsigned numSymbols = in_.below(3);
    for (unsigned s = 0; s < numSymbols; ++s)
      symbols_.push_back(s == 0 ? "n" : "m");
    unsigned numInputs = 1 + in_.below(3);
    for (unsigned i = 0; i < numInputs; ++i)
      addInput();
    unsigned numOps = 1 + in_.below(8);
    for (unsigned i = 0; i < numOps && !in_.atEnd(); ++i)
      addOp();
    // Make sure something was computed, so a graph is never just its inputs.
    if (values_.size() == numInputs)
      unary(values_[0].kind == Kind::F32 ? values_[0] : castToF32(values_[0]));
    chooseOutputs();
    result.irText = text();

    unsigned runs = 1 + in_.below(2);
    for (unsigned r = 0; r < runs; ++r) {
      std::map<std::string, int64_t> binding;
      for (const std::string &symbol : symbols_)
        binding[symbol] = in_.below(8) == 0 ? 0 : 1 + in_.below(kSymbolMax);
      result.bindings.push_back(binding);
    }
    result.dataSeed = uint32_t(in_.byte()) | uint32_t(in_.byte()) << 8 |
                      uint32_t(in_.byte()) << 16;
    result.specialValues = in_.below(4) == 0;
    result.threads = 1 + in_.below(2);
    return result;
  }

private:
  // --- values and text --------------------------------------------------------
  std::string freshName() { return "v" + std::to_string(next_++); }
  GenDim opaqueDim(int64_t upper) {
    return {"d" + std::to_string(opaque_++), std::max<int64_t>(upper, 1)};
  }

  GenDim randomDim() {
    if (!symbols_.empty() && in_.below(3) == 0) {
      const std::string &name = symbols_[in_.below(unsigned(symbols_.size()))];
      return {name, kSymbolMax};
    }
    return {"", kStaticSizes[in_.below(std::size(kStaticSizes))]};
  }

  void addInput() {
    static const Kind kinds[] = {Kind::F32, Kind::F32, Kind::F32, Kind::F32,
                                 Kind::F32, Kind::F32, Kind::I64, Kind::Bool};
    Kind kind = kinds[in_.below(std::size(kinds))];
    unsigned rank = in_.below(5);
    GenDims dims;
    for (unsigned d = 0; d < rank; ++d)
      dims.push_back(randomDim());
    while (upperElements(dims) > 512)
      dims.pop_back();
    // The first input carries every symbol, so each is bound by an input dim.
    if (values_.empty())
      for (const std::string &symbol : symbols_)
        if (std::none_of(dims.begin(), dims.end(), [&](const GenDim &d) { return d.name == symbol; }))
          dims.push_back({symbol, kSymbolMax});
    std::string name = "x" + std::to_string(values_.size());
    std::string dimsText;
    for (size_t i = 0; i < dims.size(); ++i)
      dimsText += (i ? ", " : "") + (dims[i].isStatic() ? std::to_string(dims[i].size) : dims[i].name);
    std::string type = std::string(kindName(kind)) + "[" + dimsText + "]";
    inputsText_ += (inputsText_.empty() ? "%" : ", %") + name + ": " + type;
    values_.push_back({name, kind, dims, true, type});
  }

  /// A constant of static dims; f32 contents are multiples of 1/64 in
  /// [lo, hi] (exact in text), i64 contents integers in [lo, hi].
  std::string constant(Kind kind, const std::vector<int64_t> &dims, double lo, double hi) {
    int64_t count = 1;
    for (int64_t d : dims)
      count *= d;
    std::string values;
    for (int64_t i = 0; i < count; ++i) {
      double v = lo + (hi - lo) * in_.byte() / 255.0;
      std::string item;
      if (kind == Kind::F32) {
        item = std::to_string(std::round(v * 64) / 64);
      } else if (kind == Kind::I64) {
        item = std::to_string(int64_t(std::llround(v)));
      } else {
        item = in_.flag() ? "true" : "false";
      }
      values += (i ? ", " : "") + item;
    }
    return constantText(kind, dims, dims.empty() ? values : "[" + values + "]");
  }
  std::string intConstant(const std::vector<int64_t> &dims, const std::vector<int64_t> &values) {
    return constantText(Kind::I64, dims, dims.empty() ? std::to_string(values[0]) : intList(values));
  }
  std::string constantText(Kind kind, const std::vector<int64_t> &dims, const std::string &body) {
    std::string name = "c" + std::to_string(next_++);
    std::vector<int64_t> shown = dims;
    std::string dimsText = intList(shown);
    constantsText_ += "  const %" + name + ": " + kindName(kind) + dimsText + " = dense<" + body + ">\n";
    return name;
  }

  const GenValue &emit(const std::string &op, const std::vector<std::string> &operands,
                       const std::string &attributes, Kind kind, GenDims dims, bool exact) {
    std::string name = freshName();
    std::string line = "  %" + name + " = " + op + "(";
    for (size_t i = 0; i < operands.size(); ++i)
      line += (i ? ", " : "") + (operands[i] == "_" ? "_" : "%" + operands[i]);
    line += ")";
    if (!attributes.empty())
      line += " {" + attributes + "}";
    // What the generator believes the shape is, for whoever reads a finding.
    std::string believed;
    for (const GenDim &d : dims)
      believed += (believed.empty() ? "" : ", ") + (d.isStatic() ? std::to_string(d.size) : d.name);
    bodyText_ += line + "  # [" + believed + "]\n";
    values_.push_back({name, kind, std::move(dims), exact});
    return values_.back();
  }

  std::string text() const {
    std::string outputs, returns;
    for (const GenValue &value : outputs_) {
      // Inputs are typed; node results are left to inference.
      std::string type = value.inputType.empty() ? "unknown[*]" : value.inputType;
      outputs += (outputs.empty() ? "%o_" : ", %o_") + value.name + ": " + type;
      returns += (returns.empty() ? "%" : ", %") + value.name;
    }
    return "graph @fuzz(" + inputsText_ + ") -> (" + outputs + ") {\n" + constantsText_ + bodyText_ +
           "  return " + returns + "\n}\n";
  }

  void chooseOutputs() {
    outputs_.push_back(values_.back());
    if (values_.size() > 1 && in_.flag())
      outputs_.push_back(values_[in_.below(unsigned(values_.size() - 1))]);
  }

  // --- picking operands -----------------------------------------------------------
  /// A value (copied: emitting may grow values_); prefers recent ones.
  GenValue pick() {
    size_t count = values_.size();
    size_t back = in_.below(unsigned(std::min<size_t>(count, 4)));
    return in_.flag() ? values_[count - 1 - back] : values_[in_.below(unsigned(count))];
  }
  /// A value satisfying `accept`, searched from a random start; null if none.
  template <typename Accept> const GenValue *pickWhere(Accept accept) {
    size_t count = values_.size(), start = in_.below(unsigned(count));
    for (size_t k = 0; k < count; ++k) {
      const GenValue &v = values_[(start + count - k) % count];
      if (accept(v))
        return &v;
    }
    return nullptr;
  }

  /// Another operand broadcastable with `a`: `a`, a value of the pool, or a
  /// new constant over a suffix of `a`'s dims (some set to 1).
  bool secondOperand(const GenValue &a, Kind kind, double lo, double hi, std::string &name,
                     GenDims &dims, bool &exact, bool allowValues = true) {
    unsigned mode = in_.below(4);
    if (allowValues && mode == 0) {
      name = a.name;
      dims = a.dims;
      exact = a.exact;
      return true;
    }
    if (allowValues && mode == 1) {
      GenDims out;
      const GenValue *b = pickWhere([&](const GenValue &v) {
        return v.kind == kind && broadcast(a.dims, v.dims, out) &&
               upperElements(out) <= kMaxElements;
      });
      if (b) {
        name = b->name;
        dims = b->dims;
        exact = b->exact;
        return true;
      }
    }
    size_t keep = in_.below(unsigned(a.dims.size() + 1));
    std::vector<int64_t> constantDims;
    dims.clear();
    for (size_t i = a.dims.size() - keep; i < a.dims.size(); ++i) {
      const GenDim &d = a.dims[i];
      int64_t size = d.isStatic() && in_.below(3) != 0 ? d.size : 1;
      constantDims.push_back(size);
      dims.push_back({"", size});
    }
    name = constant(kind, constantDims, lo, hi);
    exact = true;
    return true;
  }

  // --- ops ------------------------------------------------------------------------
  void addOp() {
    switch (in_.below(15)) {
    case 0:
    case 1:
      return unary(pickFloat());
    case 2:
    case 3:
      return binary();
    case 4:
      return compare();
    case 5:
      return selectOrLogic();
    case 6:
      return transpose();
    case 7:
      return reshapeOrFlatten();
    case 8:
      return slice();
    case 9:
      return concatOrGather();
    case 10:
      return unsqueezeOrSqueeze();
    case 11:
      return expandOrTile();
    case 12:
      return reduce();
    case 13:
      return normalize();
    case 14:
      return matmul();
    }
  }

  GenValue pickFloat() {
    GenValue v = pick();
    return v.kind == Kind::F32 ? v : castToF32(v);
  }

  GenValue castToF32(const GenValue &v) {
    return emit("Cast", {v.name}, "to = 1", Kind::F32, v.dims, v.exact);
  }

  void unary(const GenValue &v) {
    static const char *const smooth[] = {"Relu", "Neg",  "Abs", "Tanh",      "Sigmoid", "Erf",
                                         "Exp",  "Gelu", "Sin", "Cos",       "LeakyRelu",
                                         "Sqrt", "Log",  "Reciprocal", "Clip", "Gelu"};
    static const char *const stepwise[] = {"Floor", "Ceil", "Sign", "IsNaN", "IsInf"};
    if (v.exact && in_.below(4) == 0) {
      std::string op = stepwise[in_.below(std::size(stepwise))];
      bool toBool = op == "IsNaN" || op == "IsInf";
      emit(op, {v.name}, "", toBool ? Kind::Bool : Kind::F32, v.dims, true);
      return;
    }
    std::string op = smooth[in_.below(std::size(smooth))];
    std::string operand = v.name;
    // Keep the argument where the function is well conditioned: sqrt of |x|,
    // log and reciprocal of |x| + 1.
    if (op == "Sqrt" || op == "Log" || op == "Reciprocal") {
      operand = emit("Abs", {operand}, "", Kind::F32, v.dims, v.exact).name;
      if (op != "Sqrt")
        operand = emit("Add", {operand, constant(Kind::F32, {}, 1, 1)}, "", Kind::F32, v.dims, false)
                      .name;
    }
    bool exact = v.exact && (op == "Relu" || op == "Neg" || op == "Abs" || op == "Clip");
    if (op == "Clip") {
      std::string lo = constant(Kind::F32, {}, -1.5, 0), hi = constant(Kind::F32, {}, 0, 1.5);
      // Clip(x, lo, hi), Clip(x, _, hi) or Clip(x, lo): no trailing absent operand.
      unsigned form = in_.below(3);
      std::vector<std::string> operands = {operand, form == 1 ? "_" : lo};
      if (form != 2)
        operands.push_back(hi);
      emit(op, operands, "", Kind::F32, v.dims, exact);
      return;
    }
    std::string attributes;
    if (op == "LeakyRelu")
      attributes = "alpha = 0.125";
    if (op == "Gelu" && in_.flag())
      attributes = "approximate = \"tanh\"";
    emit(op, {operand}, attributes, Kind::F32, v.dims, exact);
  }

  void binary() {
    GenValue a = pick();
    if (a.kind == Kind::Bool)
      a = castToF32(a);
    static const char *const ops[] = {"Add", "Sub", "Mul", "Div", "Max", "Min", "Add", "Mul"};
    std::string op = ops[in_.below(std::size(ops))];
    bool isInt = a.kind == Kind::I64;
    // Integer products and quotients take small constants only: no overflow,
    // no division by zero.
    bool constantOnly = isInt && (op == "Mul" || op == "Div");
    std::string b;
    GenDims bDims;
    bool bExact;
    if (op == "Div" && !isInt) {
      // Divisors away from zero: a constant in +-[0.5, 2], or |b| + 1.
      if (in_.flag()) {
        secondOperand(a, Kind::F32, 0.5, 2, b, bDims, bExact, false);
      } else {
        secondOperand(a, Kind::F32, -2, 2, b, bDims, bExact);
        b = emit("Abs", {b}, "", Kind::F32, bDims, bExact).name;
        b = emit("Add", {b, constant(Kind::F32, {}, 1, 1)}, "", Kind::F32, bDims, false).name;
      }
    } else if (constantOnly) {
      secondOperand(a, Kind::I64, 1, 3, b, bDims, bExact, false);
    } else {
      secondOperand(a, a.kind, -2, 2, b, bDims, bExact);
    }
    GenDims out;
    if (!broadcast(a.dims, bDims, out) || upperElements(out) > kMaxElements)
      return;
    bool exact = isInt || ((op == "Max" || op == "Min") && a.exact && bExact);
    bool swap = !constantOnly && op != "Div" && in_.flag();
    emit(op, swap ? std::vector<std::string>{b, a.name} : std::vector<std::string>{a.name, b}, "",
         a.kind, out, exact);
  }

  void compare() {
    const GenValue *a = pickWhere([](const GenValue &v) { return v.exact && v.kind != Kind::Bool; });
    if (!a)
      return unary(pickFloat());
    GenValue first = *a;
    static const char *const ops[] = {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"};
    std::string op = ops[in_.below(std::size(ops))];
    std::string b;
    GenDims bDims;
    bool bExact;
    secondOperand(first, first.kind, -2, 2, b, bDims, bExact);
    GenDims out;
    if (!bExact || !broadcast(first.dims, bDims, out) || upperElements(out) > kMaxElements)
      return;
    emit(op, {first.name, b}, "", Kind::Bool, out, true);
  }

  void selectOrLogic() {
    const GenValue *c = pickWhere([](const GenValue &v) { return v.kind == Kind::Bool; });
    if (!c)
      return compare();
    GenValue cond = *c;
    unsigned form = in_.below(4);
    if (form == 0) {
      emit("Not", {cond.name}, "", Kind::Bool, cond.dims, true);
      return;
    }
    if (form == 1) {
      static const char *const ops[] = {"And", "Or", "Xor"};
      std::string b;
      GenDims bDims, out;
      bool bExact;
      secondOperand(cond, Kind::Bool, 0, 1, b, bDims, bExact);
      if (broadcast(cond.dims, bDims, out) && upperElements(out) <= kMaxElements)
        emit(ops[in_.below(3)], {cond.name, b}, "", Kind::Bool, out, true);
      return;
    }
    if (form == 2) {
      bool toFloat = in_.flag();
      emit("Cast", {cond.name}, toFloat ? "to = 1" : "to = 7", toFloat ? Kind::F32 : Kind::I64,
           cond.dims, true);
      return;
    }
    GenValue x = pick();
    if (x.kind == Kind::Bool)
      x = castToF32(x);
    std::string y;
    GenDims yDims, xy, out;
    bool yExact;
    secondOperand(x, x.kind, -2, 2, y, yDims, yExact);
    if (!broadcast(x.dims, yDims, xy) || !broadcast(cond.dims, xy, out) ||
        upperElements(out) > kMaxElements)
      return;
    emit("Where", {cond.name, x.name, y}, "", x.kind, out, x.exact && yExact);
  }

  void transpose() {
    GenValue v = pick();
    if (v.dims.size() < 2)
      return unary(pickFloat());
    std::vector<int64_t> perm(v.dims.size());
    std::iota(perm.begin(), perm.end(), 0);
    for (size_t i = perm.size() - 1; i > 0; --i)
      std::swap(perm[i], perm[in_.below(unsigned(i + 1))]);
    GenDims dims;
    for (int64_t p : perm)
      dims.push_back(v.dims[size_t(p)]);
    emit("Transpose", {v.name}, "perm = " + intList(perm), v.kind, dims, v.exact);
  }

  /// Splits `total` into up to `parts` factors (each > 1 except a leading 1).
  std::vector<int64_t> factorize(int64_t total, unsigned parts) {
    std::vector<int64_t> factors;
    for (unsigned p = 1; p < parts && total > 1; ++p) {
      std::vector<int64_t> divisors;
      for (int64_t d = 2; d <= total; ++d)
        if (total % d == 0)
          divisors.push_back(d);
      int64_t f = divisors[in_.below(unsigned(divisors.size()))];
      factors.push_back(f);
      total /= f;
    }
    factors.push_back(total);
    return factors;
  }

  void reshapeOrFlatten() {
    GenValue v = pick();
    int64_t staticProduct = 1;
    GenDims named;
    for (const GenDim &d : v.dims)
      (d.isStatic() ? (void)(staticProduct *= d.size) : named.push_back(d));
    if (in_.below(3) == 0) {
      int64_t rank = int64_t(v.dims.size());
      int64_t axis = int64_t(in_.below(unsigned(rank + 1)));
      GenDims dims;
      for (auto [begin, end] : {std::pair<int64_t, int64_t>{0, axis}, {axis, rank}}) {
        GenDims part(v.dims.begin() + begin, v.dims.begin() + end);
        bool allStatic = std::all_of(part.begin(), part.end(), [](const GenDim &d) { return d.isStatic(); });
        if (part.size() == 1)
          dims.push_back(part[0]);
        else
          dims.push_back(allStatic ? GenDim{"", upperElements(part)} : opaqueDim(upperElements(part)));
      }
      bool negative = axis < rank && in_.flag(); // -rank would mean 0, not rank
      emit("Flatten", {v.name}, "axis = " + std::to_string(negative ? axis - rank : axis), v.kind,
           dims, v.exact);
      return;
    }
    // The named dims all go into one -1; the static ones are refactored.
    // With no static element the -1 would be ambiguous.
    if (!named.empty() && staticProduct == 0)
      return;
    std::vector<int64_t> target = factorize(staticProduct, 1 + in_.below(3));
    GenDims dims;
    for (int64_t f : target)
      dims.push_back({"", f});
    if (!named.empty() || (staticProduct > 0 && in_.below(4) == 0)) {
      size_t at = in_.below(unsigned(target.size() + 1));
      target.insert(target.begin() + at, -1);
      GenDim merged = named.size() == 1 ? named[0]
                      : named.empty()   ? GenDim{"", 1}
                                        : opaqueDim(upperElements(named));
      dims.insert(dims.begin() + at, merged);
    }
    std::string shape = intConstant({int64_t(target.size())}, target);
    // A 0 in the target copies the input's dim unless allowzero is set.
    bool zero = std::find(target.begin(), target.end(), 0) != target.end();
    emit("Reshape", {v.name, shape}, zero ? "allowzero = 1" : "", v.kind, dims, v.exact);
  }

  /// The ONNX Slice length of a dim of size `d` for one start/end/step.
  static int64_t sliceLength(int64_t d, int64_t start, int64_t end, int64_t step) {
    auto clampTo = [](int64_t x, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, x)); };
    if (start < 0)
      start = start <= std::numeric_limits<int64_t>::min() + d ? std::numeric_limits<int64_t>::min() : start + d;
    if (end < 0)
      end = end <= std::numeric_limits<int64_t>::min() + d ? std::numeric_limits<int64_t>::min() : end + d;
    if (step > 0) {
      start = clampTo(start, 0, d);
      end = clampTo(end, 0, d);
      return end > start ? (end - start + step - 1) / step : 0;
    }
    start = clampTo(start, 0, d - 1);
    end = clampTo(end, -1, d - 1);
    return start > end ? (start - end - step - 1) / -step : 0;
  }

  int64_t sliceBound(int64_t d) {
    static const int64_t special[] = {std::numeric_limits<int64_t>::max(),
                                      std::numeric_limits<int64_t>::min(), -1, 0};
    if (in_.below(5) == 0)
      return special[in_.below(std::size(special))];
    return int64_t(in_.below(unsigned(2 * d + 5))) - d - 2;
  }

  void slice() {
    GenValue v = pick();
    if (v.dims.empty())
      return unary(pickFloat());
    int64_t rank = int64_t(v.dims.size());
    unsigned form = in_.below(3); // axes and steps given, axes only, neither
    int64_t axis = form == 2 ? 0 : int64_t(in_.below(unsigned(rank)));
    static const int64_t steps[] = {1, 1, 2, 3, -1, -2};
    int64_t step = steps[in_.below(std::size(steps))];
    const GenDim &d = v.dims[size_t(axis)];
    int64_t start = sliceBound(d.size), end = sliceBound(d.size);
    GenDims dims = v.dims;
    if (d.isStatic())
      dims[size_t(axis)] = {"", sliceLength(d.size, start, end, step)};
    else
      dims[size_t(axis)] = opaqueDim(d.size);
    std::vector<std::string> operands = {v.name, intConstant({1}, {start}), intConstant({1}, {end})};
    if (form < 2)
      operands.push_back(intConstant({1}, {in_.flag() ? axis - rank : axis}));
    if (form == 0)
      operands.push_back(intConstant({1}, {step}));
    else if (step != 1)
      dims[size_t(axis)] = d.isStatic() ? GenDim{"", sliceLength(d.size, start, end, 1)} : opaqueDim(d.size);
    emit("Slice", operands, "", v.kind, dims, v.exact);
  }

  void concatOrGather() {
    GenValue v = pick();
    if (v.dims.empty())
      return unary(pickFloat());
    int64_t rank = int64_t(v.dims.size());
    int64_t axis = int64_t(in_.below(unsigned(rank)));
    const GenDim &d = v.dims[size_t(axis)];
    if (in_.flag()) {
      // Concat with itself, with a value equal but for `axis`, or with a constant.
      const GenValue *other = pickWhere([&](const GenValue &w) {
        if (w.kind != v.kind || w.dims.size() != v.dims.size())
          return false;
        for (int64_t i = 0; i < rank; ++i)
          if (i != axis && !(w.dims[size_t(i)] == v.dims[size_t(i)]))
            return false;
        return true;
      });
      std::string b = other ? other->name : v.name;
      GenDim bAxis = other ? other->dims[size_t(axis)] : d;
      bool exact = v.exact && (!other || other->exact);
      bool allStatic = std::all_of(v.dims.begin(), v.dims.end(), [](const GenDim &x) { return x.isStatic(); });
      if (allStatic && in_.flag()) {
        std::vector<int64_t> dims;
        for (const GenDim &x : v.dims)
          dims.push_back(x.size);
        dims[size_t(axis)] = kStaticSizes[in_.below(4)];
        bAxis = {"", dims[size_t(axis)]};
        b = constant(v.kind, dims, -2, 2);
      }
      GenDims dims = v.dims;
      dims[size_t(axis)] = d.isStatic() && bAxis.isStatic() ? GenDim{"", d.size + bAxis.size}
                                                             : opaqueDim(d.size + bAxis.size);
      if (upperElements(dims) > kMaxElements)
        return;
      emit("Concat", {v.name, b}, "axis = " + std::to_string(in_.flag() ? axis - rank : axis),
           v.kind, dims, exact);
      return;
    }
    if (!d.isStatic() || d.size == 0)
      return;
    unsigned indexRank = in_.below(3);
    std::vector<int64_t> indexDims, indices;
    int64_t count = 1;
    for (unsigned i = 0; i < indexRank; ++i) {
      indexDims.push_back(1 + in_.below(4));
      count *= indexDims.back();
    }
    for (int64_t i = 0; i < count; ++i)
      indices.push_back(int64_t(in_.below(unsigned(2 * d.size))) - d.size);
    GenDims dims(v.dims.begin(), v.dims.begin() + axis);
    for (int64_t s : indexDims)
      dims.push_back({"", s});
    dims.insert(dims.end(), v.dims.begin() + axis + 1, v.dims.end());
    if (upperElements(dims) > kMaxElements)
      return;
    emit("Gather", {v.name, intConstant(indexDims, indices)}, "axis = " + std::to_string(axis),
         v.kind, dims, v.exact);
  }

  void unsqueezeOrSqueeze() {
    GenValue v = pick();
    std::vector<int64_t> ones;
    for (size_t i = 0; i < v.dims.size(); ++i)
      if (v.dims[i].isStatic() && v.dims[i].size == 1)
        ones.push_back(int64_t(i));
    if (!ones.empty() && in_.flag()) {
      int64_t axis = ones[in_.below(unsigned(ones.size()))];
      GenDims dims = v.dims;
      dims.erase(dims.begin() + axis);
      int64_t rank = int64_t(v.dims.size());
      emit("Squeeze", {v.name, intConstant({1}, {in_.flag() ? axis - rank : axis})}, "", v.kind,
           dims, v.exact);
      return;
    }
    int64_t outRank = int64_t(v.dims.size()) + 1;
    int64_t axis = int64_t(in_.below(unsigned(outRank)));
    GenDims dims = v.dims;
    dims.insert(dims.begin() + axis, GenDim{"", 1});
    emit("Unsqueeze", {v.name, intConstant({1}, {in_.flag() ? axis - outRank : axis})}, "", v.kind,
         dims, v.exact);
  }

  void expandOrTile() {
    GenValue v = pick();
    if (in_.flag()) {
      std::vector<int64_t> shape;
      GenDims dims;
      unsigned extra = in_.below(2);
      for (unsigned i = 0; i < extra; ++i) {
        shape.push_back(1 + in_.below(3));
        dims.push_back({"", shape.back()});
      }
      for (const GenDim &d : v.dims) {
        bool grow = d.isStatic() && d.size == 1 && in_.flag();
        shape.push_back(grow ? 1 + in_.below(4) : 1);
        dims.push_back(grow ? GenDim{"", shape.back()} : d);
      }
      if (upperElements(dims) > kMaxElements)
        return;
      emit("Expand", {v.name, intConstant({int64_t(shape.size())}, shape)}, "", v.kind, dims,
           v.exact);
      return;
    }
    if (v.dims.empty())
      return unary(pickFloat());
    std::vector<int64_t> repeats;
    GenDims dims;
    for (const GenDim &d : v.dims) {
      repeats.push_back(1 + in_.below(3));
      dims.push_back(repeats.back() == 1 ? d
                     : d.isStatic()      ? GenDim{"", d.size * repeats.back()}
                                         : opaqueDim(d.size * repeats.back()));
    }
    if (upperElements(dims) > kMaxElements)
      return;
    emit("Tile", {v.name, intConstant({int64_t(repeats.size())}, repeats)}, "", v.kind, dims,
         v.exact);
  }

  void reduce() {
    GenValue v = pick();
    if (v.kind == Kind::Bool)
      v = castToF32(v);
    static const char *const ops[] = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin",
                                      "ReduceProd", "ReduceSum", "CumSum"};
    std::string op = ops[in_.below(std::size(ops))];
    int64_t rank = int64_t(v.dims.size());
    if (op == "CumSum") {
      if (rank == 0)
        return;
      int64_t axis = int64_t(in_.below(unsigned(rank)));
      std::string attributes;
      if (in_.flag())
        attributes = "exclusive = 1";
      if (in_.flag())
        attributes += std::string(attributes.empty() ? "" : ", ") + "reverse = 1";
      emit(op, {v.name, intConstant({}, {in_.flag() ? axis - rank : axis})}, attributes, v.kind,
           v.dims, v.kind == Kind::I64);
      return;
    }
    std::vector<bool> reduced(size_t(rank), false);
    std::vector<int64_t> axes;
    bool allAxes = rank == 0 || in_.below(4) == 0;
    for (int64_t i = 0; i < rank; ++i)
      if (allAxes || in_.flag()) {
        reduced[size_t(i)] = true;
        if (!allAxes)
          axes.push_back(in_.flag() ? i - rank : i);
      }
    if (!allAxes && axes.empty()) {
      reduced[0] = true;
      axes.push_back(0);
    }
    bool keepDims = in_.flag();
    GenDims dims;
    for (int64_t i = 0; i < rank; ++i)
      if (!reduced[size_t(i)])
        dims.push_back(v.dims[size_t(i)]);
      else if (keepDims)
        dims.push_back({"", 1});
    bool exact = v.kind == Kind::I64 ? op != "ReduceMean" && op != "ReduceProd"
                                     : v.exact && (op == "ReduceMax" || op == "ReduceMin");
    std::vector<std::string> operands = {v.name};
    if (!allAxes || in_.flag())
      operands.push_back(allAxes ? intConstant({0}, {}) : intConstant({int64_t(axes.size())}, axes));
    emit(op, operands, keepDims ? "keepdims = 1" : "keepdims = 0", v.kind, dims, exact);
  }

  void normalize() {
    GenValue v = pickFloat();
    int64_t rank = int64_t(v.dims.size());
    if (rank == 0)
      return unary(v);
    unsigned form = in_.below(4);
    if (form < 2) {
      int64_t axis = int64_t(in_.below(unsigned(2 * rank))) - rank;
      emit(form == 0 ? "Softmax" : "LogSoftmax", {v.name}, "axis = " + std::to_string(axis),
           Kind::F32, v.dims, false);
      return;
    }
    // Normalized axes must be static: scale (and bias) are constants over them.
    int64_t axis = rank - 1 - int64_t(in_.below(unsigned(std::min<int64_t>(rank, 2))));
    std::vector<int64_t> normDims;
    for (int64_t i = axis; i < rank; ++i) {
      if (!v.dims[size_t(i)].isStatic())
        return;
      normDims.push_back(v.dims[size_t(i)].size);
    }
    std::string attributes = "axis = " + std::to_string(in_.flag() ? axis - rank : axis) +
                             ", epsilon = 1e-05";
    std::string scale = constant(Kind::F32, normDims, 0.5, 1.5);
    if (form == 2) {
      std::vector<std::string> operands = {v.name, scale};
      if (in_.flag())
        operands.push_back(constant(Kind::F32, normDims, -1, 1));
      emit("LayerNormalization", operands, attributes, Kind::F32, v.dims, false);
    } else {
      emit("RMSNormalization", {v.name, scale}, attributes, Kind::F32, v.dims, false);
    }
  }

  void matmul() {
    GenValue a = pickFloat();
    if (a.dims.empty())
      return unary(a);
    const GenDim &k = a.dims.back();
    // A named k against a constant operand is an assumption of inference.
    bool assumedK = !k.isStatic() && assumeBroadcasts_ && in_.flag();
    if (a.dims.size() >= 2 && !assumedK && (!k.isStatic() || in_.below(3) == 0)) {
      // a @ a^T over the last two axes, the shape of Q @ K^T.
      std::vector<int64_t> perm(a.dims.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      GenDims tDims = a.dims;
      std::swap(tDims[tDims.size() - 1], tDims[tDims.size() - 2]);
      GenDims dims = a.dims;
      dims.back() = a.dims[a.dims.size() - 2];
      if (upperElements(dims) > kMaxElements)
        return;
      std::string t = emit("Transpose", {a.name}, "perm = " + intList(perm), Kind::F32, tDims,
                           a.exact).name;
      emit("MatMul", {a.name, t}, "", Kind::F32, dims, false);
      return;
    }
    if (!k.isStatic() && !assumedK)
      return;
    static const int64_t widths[] = {1, 2, 3, 5, 8, 16, 17, 33};
    int64_t n = widths[in_.below(std::size(widths))];
    int64_t kSize = k.isStatic() ? k.size : 1 + in_.below(kSymbolMax);
    std::vector<int64_t> bDims = {kSize, n};
    GenDims dims;
    if (a.dims.size() == 1) {
      dims = {{"", n}};
    } else {
      GenDims batch(a.dims.begin(), a.dims.end() - 2);
      if (in_.below(3) == 0) {
        // A batched constant operand, broadcast against a's batch dims.
        const GenDim *last = batch.empty() ? nullptr : &batch.back();
        int64_t b0 = last && last->isStatic() && in_.flag() ? last->size : 1;
        bDims.insert(bDims.begin(), b0);
        GenDims merged;
        broadcast(batch, {{"", b0}}, merged);
        batch = merged;
      }
      dims = batch;
      dims.push_back(a.dims[a.dims.size() - 2]);
      dims.push_back({"", n});
    }
    if (upperElements(dims) > kMaxElements)
      return;
    emit("MatMul", {a.name, constant(Kind::F32, bDims, -1, 1)}, "", Kind::F32, dims, false);
  }

  bool broadcast(const GenDims &a, const GenDims &b, GenDims &out) const {
    return broadcastDims(a, b, out, assumeBroadcasts_);
  }

  ByteReader &in_;
  bool assumeBroadcasts_ = false;
  std::vector<std::string> symbols_;
  std::vector<GenValue> values_;
  std::vector<GenValue> outputs_;
  std::string inputsText_, constantsText_, bodyText_;
  int next_ = 0;
  int opaque_ = 0;
};

} // namespace

RandomCase generateRandomCase(ByteReader &reader) { return Builder(reader).build(); }

namespace {
constexpr std::string_view kCaseMagic = "# onnxc-fuzz-case\n";
} // namespace

std::string caseFileText(const RandomCase &testCase) {
  std::string text(kCaseMagic);
  for (const auto &binding : testCase.bindings) {
    text += "# run:";
    for (const auto &[symbol, value] : binding)
      text += " " + symbol + "=" + std::to_string(value);
    text += "\n";
  }
  text += "# seed: " + std::to_string(testCase.dataSeed) + "\n";
  text += "# specials: " + std::to_string(int(testCase.specialValues)) + "\n";
  text += "# threads: " + std::to_string(testCase.threads) + "\n";
  return text + testCase.irText;
}

bool parseCaseFile(std::string_view text, RandomCase &testCase, std::string &error) {
  if (text.substr(0, kCaseMagic.size()) != kCaseMagic)
    return false;
  testCase = RandomCase();
  size_t pos = kCaseMagic.size();
  auto bad = [&](const std::string &line) {
    if (error.empty())
      error = "malformed case file line: " + line;
  };
  while (pos < text.size() && text[pos] == '#') {
    size_t end = text.find('\n', pos);
    std::string line(text.substr(pos, end == std::string_view::npos ? end : end - pos));
    pos = end == std::string_view::npos ? text.size() : end + 1;
    std::istringstream in(line.substr(1));
    std::string key;
    in >> key;
    if (key == "run:") {
      std::map<std::string, int64_t> binding;
      for (std::string item; in >> item;) {
        size_t eq = item.find('=');
        std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
        if (value.empty() || value.size() > 2 ||
            !std::all_of(value.begin(), value.end(), ::isdigit)) {
          bad(line); // a symbol's value is a small count
          continue;
        }
        binding[item.substr(0, eq)] = std::stoll(value);
      }
      testCase.bindings.push_back(binding);
    } else if (key == "seed:") {
      in >> testCase.dataSeed;
    } else if (key == "specials:") {
      int flag = 0;
      in >> flag;
      testCase.specialValues = flag != 0;
    } else if (key == "threads:") {
      in >> testCase.threads;
    } else {
      bad(line);
    }
    if (in.fail() && key != "run:")
      bad(line);
  }
  if (testCase.bindings.empty())
    testCase.bindings.emplace_back();
  testCase.irText = std::string(text.substr(pos));
  return true;
}

} // namespace onnxc::fuzz
