//===- tests/fuzz/RandomGraphBuilder.h - The generator's state, for its files ===//
//
// Internal to RandomGraph.cpp (values, constants, text, operands) and
// RandomGraphOps.cpp (one member per kind of op it writes).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "RandomGraph.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace onnxc::fuzz::gen {

inline constexpr int64_t kSymbolMax = 5;
inline constexpr int64_t kMaxElements = 4096;
inline constexpr int64_t kStaticSizes[] = {1, 2, 3, 4, 5, 7, 8, 9, 16, 17};

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

const char *kindName(Kind kind);

int64_t upperElements(const GenDims &dims);

/// Numpy broadcast of two dim lists; false when they do not broadcast
/// for every binding of the named dims. With `assume`, a named dim facing a
/// constant c > 1 broadcasts to c, as shape inference lets it (the compiled
/// model must then check at run time that the dim is 1 or c).
bool broadcastDims(const GenDims &a, const GenDims &b, GenDims &out, bool assume = false);

std::string intList(const std::vector<int64_t> &values);

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
    result.dataSeed = uint32_t(in_.byte()) | uint32_t(in_.byte()) << 8 | uint32_t(in_.byte()) << 16;
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
        if (std::none_of(dims.begin(), dims.end(),
                         [&](const GenDim &d) { return d.name == symbol; }))
          dims.push_back({symbol, kSymbolMax});
    std::string name = "x" + std::to_string(values_.size());
    std::string dimsText;
    for (size_t i = 0; i < dims.size(); ++i)
      dimsText +=
          (i ? ", " : "") + (dims[i].isStatic() ? std::to_string(dims[i].size) : dims[i].name);
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
    return constantText(Kind::I64, dims,
                        dims.empty() ? std::to_string(values[0]) : intList(values));
  }
  std::string constantText(Kind kind, const std::vector<int64_t> &dims, const std::string &body) {
    std::string name = "c" + std::to_string(next_++);
    std::vector<int64_t> shown = dims;
    std::string dimsText = intList(shown);
    constantsText_ +=
        "  const %" + name + ": " + kindName(kind) + dimsText + " = dense<" + body + ">\n";
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
    values_.push_back({name, kind, std::move(dims), exact, ""});
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
    return "graph @fuzz(" + inputsText_ + ") -> (" + outputs + ") {\n" + constantsText_ +
           bodyText_ + "  return " + returns + "\n}\n";
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

  // --- ops (RandomGraphOps.cpp) ----------------------------------------------
  void addOp();
  GenValue pickFloat();
  GenValue castToF32(const GenValue &v);
  void unary(const GenValue &v);
  void binary();
  void compare();
  void selectOrLogic();
  void transpose();
  /// Splits `total` into up to `parts` factors (each > 1 except a leading 1).
  std::vector<int64_t> factorize(int64_t total, unsigned parts);
  void reshapeOrFlatten();
  /// The ONNX Slice length of a dim of size `d` for one start/end/step.
  static int64_t sliceLength(int64_t d, int64_t start, int64_t end, int64_t step);
  int64_t sliceBound(int64_t d);
  void slice();
  void concatOrGather();
  void unsqueezeOrSqueeze();
  void expandOrTile();
  void reduce();
  void normalize();
  void matmul();

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

} // namespace onnxc::fuzz::gen
