//===- tests/fuzz/RandomGraphOps.cpp - The ops the graph generator writes ===//
//
// Each member reads a few bytes, picks operands whose dims make the op well
// typed (or, with assumeBroadcasts_, dims shape inference only assumes
// compatible), and emits the node with the dims it will have.
//
//===----------------------------------------------------------------------===//
#include "RandomGraphBuilder.h"

#include <limits>
#include <numeric>

namespace onnxc::fuzz::gen {

void Builder::addOp() {
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

GenValue Builder::pickFloat() {
  GenValue v = pick();
  return v.kind == Kind::F32 ? v : castToF32(v);
}

GenValue Builder::castToF32(const GenValue &v) {
  return emit("Cast", {v.name}, "to = 1", Kind::F32, v.dims, v.exact);
}

void Builder::unary(const GenValue &v) {
  static const char *const smooth[] = {"Relu", "Neg",        "Abs",  "Tanh", "Sigmoid",   "Erf",
                                       "Exp",  "Gelu",       "Sin",  "Cos",  "LeakyRelu", "Sqrt",
                                       "Log",  "Reciprocal", "Clip", "Gelu"};
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
      operand =
          emit("Add", {operand, constant(Kind::F32, {}, 1, 1)}, "", Kind::F32, v.dims, false).name;
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

void Builder::binary() {
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

void Builder::compare() {
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

void Builder::selectOrLogic() {
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

void Builder::transpose() {
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
std::vector<int64_t> Builder::factorize(int64_t total, unsigned parts) {
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

void Builder::reshapeOrFlatten() {
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
      bool allStatic =
          std::all_of(part.begin(), part.end(), [](const GenDim &d) { return d.isStatic(); });
      if (part.size() == 1)
        dims.push_back(part[0]);
      else
        dims.push_back(allStatic ? GenDim{"", upperElements(part)}
                                 : opaqueDim(upperElements(part)));
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
int64_t Builder::sliceLength(int64_t d, int64_t start, int64_t end, int64_t step) {
  auto clampTo = [](int64_t x, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, x)); };
  if (start < 0)
    start = start <= std::numeric_limits<int64_t>::min() + d ? std::numeric_limits<int64_t>::min()
                                                             : start + d;
  if (end < 0)
    end = end <= std::numeric_limits<int64_t>::min() + d ? std::numeric_limits<int64_t>::min()
                                                         : end + d;
  if (step > 0) {
    start = clampTo(start, 0, d);
    end = clampTo(end, 0, d);
    return end > start ? (end - start + step - 1) / step : 0;
  }
  start = clampTo(start, 0, d - 1);
  end = clampTo(end, -1, d - 1);
  return start > end ? (start - end - step - 1) / -step : 0;
}

int64_t Builder::sliceBound(int64_t d) {
  static const int64_t special[] = {std::numeric_limits<int64_t>::max(),
                                    std::numeric_limits<int64_t>::min(), -1, 0};
  if (in_.below(5) == 0)
    return special[in_.below(std::size(special))];
  return int64_t(in_.below(unsigned(2 * d + 5))) - d - 2;
}

void Builder::slice() {
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
    dims[size_t(axis)] =
        d.isStatic() ? GenDim{"", sliceLength(d.size, start, end, 1)} : opaqueDim(d.size);
  emit("Slice", operands, "", v.kind, dims, v.exact);
}

void Builder::concatOrGather() {
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
    bool allStatic =
        std::all_of(v.dims.begin(), v.dims.end(), [](const GenDim &x) { return x.isStatic(); });
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
    emit("Concat", {v.name, b}, "axis = " + std::to_string(in_.flag() ? axis - rank : axis), v.kind,
         dims, exact);
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

void Builder::unsqueezeOrSqueeze() {
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
    emit("Squeeze", {v.name, intConstant({1}, {in_.flag() ? axis - rank : axis})}, "", v.kind, dims,
         v.exact);
    return;
  }
  int64_t outRank = int64_t(v.dims.size()) + 1;
  int64_t axis = int64_t(in_.below(unsigned(outRank)));
  GenDims dims = v.dims;
  dims.insert(dims.begin() + axis, GenDim{"", 1});
  emit("Unsqueeze", {v.name, intConstant({1}, {in_.flag() ? axis - outRank : axis})}, "", v.kind,
       dims, v.exact);
}

void Builder::expandOrTile() {
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

void Builder::reduce() {
  GenValue v = pick();
  if (v.kind == Kind::Bool)
    v = castToF32(v);
  static const char *const ops[] = {"ReduceSum",  "ReduceMean", "ReduceMax", "ReduceMin",
                                    "ReduceProd", "ReduceSum",  "CumSum"};
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

void Builder::normalize() {
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
  std::string attributes =
      "axis = " + std::to_string(in_.flag() ? axis - rank : axis) + ", epsilon = 1e-05";
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

void Builder::matmul() {
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
    std::string t =
        emit("Transpose", {a.name}, "perm = " + intList(perm), Kind::F32, tDims, a.exact).name;
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

} // namespace onnxc::fuzz::gen
