//===- ir/infer/KnownContents.cpp - Data propagation of shape chains ------===//
//
// Computes the contents of small integer results from the contents of their
// operands, element by element, as Dims. Anything not provable leaves an
// unknown element (or no contents at all); nothing here throws: the shape
// rules have already rejected malformed nodes.
//
//===----------------------------------------------------------------------===//
#include "ir/infer/KnownContents.h"

#include "ir/Node.h"

#include <algorithm>
#include <functional>

namespace onnxc {

using Contents = std::vector<Dim>;

bool hasTrackableDType(DType type) { return isInteger(type) || type == DType::Bool; }

std::optional<Contents> contentsOfTensor(const Tensor &tensor) {
  if (!hasTrackableDType(tensor.dtype()) || !tensor.hasData() || tensor.rank() > 1 ||
      tensor.numElements() > kMaxKnownElements)
    return std::nullopt;
  Contents out;
  for (int64_t i = 0; i < tensor.numElements(); ++i)
    out.emplace_back(tensor.elementAsInt64(i));
  return out;
}

const Tensor *constantTensorOf(const Value *value) {
  if (!value)
    return nullptr;
  if (value->isConstant())
    return value->constantValue().hasData() ? &value->constantValue() : nullptr;
  const Node *producer = value->definingNode();
  if (!producer || producer->kind() != OpKind::Constant)
    return nullptr;
  const Attribute *attr = producer->findAttr("value");
  if (!attr || attr->kind() != Attribute::Kind::Tensor || !attr->asTensor().hasData())
    return nullptr;
  return &attr->asTensor();
}

std::optional<std::vector<int64_t>> constantContents(const InferenceContext &context,
                                                     const Value *value) {
  const Contents *contents = value ? context.knownContents(value) : nullptr;
  if (!contents)
    return std::nullopt;
  std::vector<int64_t> out;
  for (const Dim &d : *contents) {
    if (!d.isConstant())
      return std::nullopt;
    out.push_back(*d.constant());
  }
  return out;
}

std::optional<int64_t> staticLength(const Value *value) {
  if (!value || !value->shape().isRanked() || value->shape().rank() > 1)
    return std::nullopt;
  if (value->shape().rank() == 0)
    return 1;
  return value->shape()[0].constant();
}

std::optional<Contents> contentsOrUnknowns(const InferenceContext &context, const Value *value) {
  if (!value)
    return std::nullopt;
  if (const Contents *contents = context.knownContents(value))
    return *contents;
  std::optional<int64_t> length = staticLength(value);
  if (!length || *length < 0 || *length > kMaxKnownElements)
    return std::nullopt;
  return Contents(size_t(*length), Dim::unknown());
}

SliceBounds resolveSliceBounds(int64_t start, int64_t end, int64_t step, int64_t dim) {
  if (dim <= 0)
    return {0, 1, 0};
  if (start < 0)
    start = start < -dim ? 0 : start + dim;
  if (end < 0)
    end = end < -dim ? -1 : end + dim;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
  } else {
    start = std::clamp<int64_t>(start, 0, dim - 1);
    end = std::clamp<int64_t>(end, -1, dim - 1);
  }
  // Written to avoid overflow for steps near the int64 limits.
  int64_t length = 0;
  if (step > 0 && end > start)
    length = (end - start - 1) / step + 1;
  else if (step < 0 && start > end)
    length = step == INT64_MIN ? 1 : (start - end - 1) / -step + 1;
  // A single element needs no step; this keeps stride * step from overflowing.
  return {start, length > 1 ? step : 1, length};
}

std::pair<int64_t, int64_t> shapeOpRange(const Node &node, int64_t rank) {
  auto normalize = [rank](int64_t position) {
    if (position < 0)
      position += rank;
    return std::clamp<int64_t>(position, 0, rank);
  };
  int64_t first = normalize(node.getInt("start", 0));
  int64_t last = normalize(node.getInt("end", rank));
  return {first, std::max(first, last)};
}

namespace {

/// The sign of a - b when provable. Symbols stand for dimensions, which are
/// never negative, so a polynomial with nonnegative coefficients and a
/// positive constant term is positive (seq + 1 > 0, hence seq != -1).
std::optional<int> compareDims(const Dim &a, const Dim &b) {
  std::optional<Dim> exact = Dim::trySubtract(a, b);
  if (!exact || exact->isUnknown())
    return std::nullopt;
  const Dim &difference = *exact;
  if (std::optional<int64_t> c = difference.constant())
    return *c > 0 ? 1 : (*c < 0 ? -1 : 0);
  bool allNonNegative = true, allNonPositive = true;
  int64_t constantTerm = 0;
  for (const auto &[monomial, coefficient] : difference.terms()) {
    allNonNegative &= coefficient >= 0;
    allNonPositive &= coefficient <= 0;
    if (monomial.empty())
      constantTerm = coefficient;
  }
  if (allNonNegative && constantTerm > 0)
    return 1;
  if (allNonPositive && constantTerm < 0)
    return -1;
  return std::nullopt;
}

Dim boolDim(bool value) { return Dim(int64_t(value ? 1 : 0)); }

/// Applies `f` element-wise with numpy broadcasting of 0-D / 1-D operands.
/// `arity` is the number of operands `f` reads (0: any nonzero number).
std::optional<Contents> mapBroadcast(const std::vector<Contents> &operands, size_t arity,
                                     const std::function<Dim(const std::vector<Dim> &)> &f) {
  if (operands.empty() || (arity && operands.size() != arity))
    return std::nullopt;
  size_t length = 1;
  for (const Contents &c : operands) {
    if (c.size() != 1 && length != 1 && c.size() != length)
      return std::nullopt;
    if (c.size() != 1)
      length = c.size();
  }
  Contents out;
  for (size_t i = 0; i < length; ++i) {
    std::vector<Dim> elements;
    for (const Contents &c : operands)
      elements.push_back(c.size() == 1 ? c[0] : c[i]);
    out.push_back(f(elements));
  }
  return out;
}

/// An overflowing element is not known: the kernels wrap, and nothing
/// should build a shape on a wrapped value.
Dim knownOrUnknown(std::optional<Dim> d) { return d ? *d : Dim::unknown(); }

Dim divideDims(const Dim &a, const Dim &b) {
  std::optional<int64_t> x = a.constant(), y = b.constant();
  if (x && y) {
    if (*y == 0 || (*y == -1 && *x == INT64_MIN)) // no value, or one that traps
      return Dim::unknown();
    return Dim(*x / *y); // integer Div truncates
  }
  if (std::optional<Dim> q = a.divideExactly(b))
    return *q;
  return Dim::unknown();
}

Dim compareElements(OpKind kind, const Dim &a, const Dim &b) {
  std::optional<int> sign = compareDims(a, b);
  if (!sign)
    return kind == OpKind::Equal && a.provablyEqual(b) ? boolDim(true) : Dim::unknown();
  switch (kind) {
  case OpKind::Equal:
    return boolDim(*sign == 0);
  case OpKind::Less:
    return boolDim(*sign < 0);
  case OpKind::Greater:
    return boolDim(*sign > 0);
  case OpKind::LessOrEqual:
    return boolDim(*sign <= 0);
  default:
    return boolDim(*sign >= 0);
  }
}

Dim extremum(bool wantMax, const std::vector<Dim> &elements) {
  Dim best = elements[0];
  for (size_t i = 1; i < elements.size(); ++i) {
    std::optional<int> sign = compareDims(elements[i], best);
    if (!sign)
      return Dim::unknown();
    if (wantMax ? *sign > 0 : *sign < 0)
      best = elements[i];
  }
  return best;
}

class Propagator {
public:
  Propagator(const Node &node, InferenceContext &context) : node_(node), context_(context) {}

  std::optional<Contents> run();

private:
  std::optional<Contents> operand(size_t i) const {
    return contentsOrUnknowns(context_, node_.operand(i));
  }
  std::optional<std::vector<int64_t>> constantOperand(size_t i) const {
    return constantContents(context_, node_.operand(i));
  }
  std::vector<Contents> allOperands() const;

  std::optional<Contents> shapeOf() const;
  std::optional<Contents> gather() const;
  std::optional<Contents> slice() const;
  std::optional<Contents> concat() const;
  std::optional<Contents> cast() const;
  std::optional<Contents> range() const;
  std::optional<Contents> constantOfShape() const;
  std::optional<Contents> constant() const;

  const Node &node_;
  InferenceContext &context_;
};

std::vector<Contents> Propagator::allOperands() const {
  std::vector<Contents> out;
  for (size_t i = 0; i < node_.numOperands(); ++i) {
    std::optional<Contents> c = operand(i);
    if (!c)
      return {};
    out.push_back(std::move(*c));
  }
  return out;
}

std::optional<Contents> Propagator::shapeOf() const {
  const Shape &shape = node_.operand(0)->shape();
  if (!shape.isRanked())
    return std::nullopt;
  auto [first, last] = shapeOpRange(node_, int64_t(shape.rank()));
  return Contents(shape.dims().begin() + first, shape.dims().begin() + last);
}

std::optional<Contents> Propagator::gather() const {
  std::optional<Contents> data = operand(0);
  std::optional<std::vector<int64_t>> indices = constantOperand(1);
  if (!data || !indices || node_.operand(0)->shape().rank() != 1 ||
      (node_.getInt("axis", 0) != 0 && node_.getInt("axis", 0) != -1))
    return std::nullopt;
  Contents out;
  int64_t n = int64_t(data->size());
  for (int64_t index : *indices) {
    if (index < -n || index >= n)
      return std::nullopt;
    out.push_back((*data)[size_t(index < 0 ? index + n : index)]);
  }
  return out;
}

std::optional<Contents> Propagator::slice() const {
  std::optional<Contents> data = operand(0);
  std::optional<std::vector<int64_t>> starts = constantOperand(1), ends = constantOperand(2);
  if (!data || !starts || !ends || starts->size() != ends->size() ||
      node_.operand(0)->shape().rank() != 1)
    return std::nullopt;
  std::vector<int64_t> axes(starts->size(), 0), steps(starts->size(), 1);
  if (node_.hasOperand(3)) {
    std::optional<std::vector<int64_t>> given = constantOperand(3);
    if (!given)
      return std::nullopt;
    axes = *given;
  }
  if (node_.hasOperand(4)) {
    std::optional<std::vector<int64_t>> given = constantOperand(4);
    if (!given)
      return std::nullopt;
    steps = *given;
  }
  if (axes.size() != starts->size() || steps.size() != starts->size())
    return std::nullopt;
  int64_t n = int64_t(data->size());
  SliceBounds bounds{0, 1, n};
  for (size_t i = 0; i < axes.size(); ++i) {
    if (axes[i] != 0 && axes[i] != -1)
      return std::nullopt;
    if (steps[i] == 0)
      return std::nullopt;
    bounds = resolveSliceBounds((*starts)[i], (*ends)[i], steps[i], n);
  }
  Contents out;
  for (int64_t k = 0; k < bounds.length; ++k)
    out.push_back((*data)[size_t(bounds.start + k * bounds.step)]);
  return out;
}

std::optional<Contents> Propagator::concat() const {
  std::vector<Contents> parts = allOperands();
  if (parts.empty())
    return std::nullopt;
  Contents out;
  for (const Contents &part : parts)
    out.insert(out.end(), part.begin(), part.end());
  return out;
}

std::optional<Contents> Propagator::cast() const {
  DType to = node_.result()->dtype();
  const Value *input = node_.operand(0);
  if (isFloat(input->dtype())) {
    // Float contents are not tracked, but a float constant can be read directly.
    const Tensor *tensor = constantTensorOf(input);
    if (!tensor || tensor->rank() > 1 || tensor->numElements() > kMaxKnownElements)
      return std::nullopt;
    Contents out;
    for (int64_t i = 0; i < tensor->numElements(); ++i)
      out.emplace_back(narrowInteger(int64_t(tensor->elementAsDouble(i)), to));
    return out;
  }
  std::optional<Contents> in = operand(0);
  if (!in)
    return std::nullopt;
  for (Dim &d : *in) {
    if (std::optional<int64_t> c = d.constant())
      d = Dim(narrowInteger(*c, to));
    else if (to == DType::Bool)
      d = Dim::unknown(); // a symbolic dimension may or may not be zero
  }
  return in;
}

std::optional<Contents> Propagator::range() const {
  std::optional<std::vector<int64_t>> start = constantOperand(0), limit = constantOperand(1),
                                      delta = constantOperand(2);
  if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 ||
      delta->size() != 1 || (*delta)[0] == 0)
    return std::nullopt;
  Contents out;
  int64_t step = (*delta)[0];
  for (int64_t v = (*start)[0]; step > 0 ? v < (*limit)[0] : v > (*limit)[0];) {
    if (int64_t(out.size()) >= kMaxKnownElements)
      return std::nullopt;
    out.emplace_back(v);
    if (__builtin_add_overflow(v, step, &v))
      break;
  }
  return out;
}

std::optional<Contents> Propagator::constantOfShape() const {
  std::optional<std::vector<int64_t>> shape = constantOperand(0);
  const Attribute *value = node_.findAttr("value");
  if (!shape || !value || value->kind() != Attribute::Kind::Tensor)
    return std::nullopt;
  std::optional<Contents> fill = contentsOfTensor(value->asTensor());
  if (!fill || fill->size() != 1)
    return std::nullopt;
  int64_t count = 1;
  for (int64_t d : *shape) {
    if (d < 0 || (d != 0 && count > kMaxKnownElements / d + 1))
      return std::nullopt;
    count *= d;
  }
  if (count > kMaxKnownElements)
    return std::nullopt;
  return Contents(size_t(count), (*fill)[0]);
}

std::optional<Contents> Propagator::constant() const {
  if (const Attribute *value = node_.findAttr("value"))
    return value->kind() == Attribute::Kind::Tensor ? contentsOfTensor(value->asTensor())
                                                    : std::nullopt;
  if (const Attribute *value = node_.findAttr("value_int"))
    return value->isInt() ? std::optional<Contents>(Contents{Dim(value->asInt())}) : std::nullopt;
  if (const Attribute *value = node_.findAttr("value_ints")) {
    if (value->kind() != Attribute::Kind::Ints)
      return std::nullopt;
    Contents out(value->asInts().begin(), value->asInts().end());
    return out;
  }
  return std::nullopt;
}

std::optional<Contents> Propagator::run() {
  OpKind kind = node_.kind();
  if (kind != OpKind::Constant && !node_.operand(0))
    return std::nullopt;
  switch (kind) {
  case OpKind::Shape:
    return shapeOf();
  case OpKind::Size:
    return node_.operand(0)->shape().isRanked()
               ? std::optional<Contents>(Contents{node_.operand(0)->shape().numElements()})
               : std::nullopt;
  case OpKind::Gather:
    return gather();
  case OpKind::Slice:
    return slice();
  case OpKind::Concat:
    return concat();
  case OpKind::Unsqueeze:
  case OpKind::Squeeze:
  case OpKind::Reshape:
  case OpKind::Flatten:
  case OpKind::Identity:
  case OpKind::Dropout:
    return operand(0);
  case OpKind::Cast:
    return cast();
  case OpKind::Neg: {
    std::optional<Contents> in = operand(0);
    if (in)
      for (Dim &d : *in)
        d = knownOrUnknown(Dim::trySubtract(Dim(0), d));
    return in;
  }
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
    return mapBroadcast(allOperands(), 2, [kind](const std::vector<Dim> &e) {
      switch (kind) {
      case OpKind::Add:
        return knownOrUnknown(Dim::tryAdd(e[0], e[1]));
      case OpKind::Sub:
        return knownOrUnknown(Dim::trySubtract(e[0], e[1]));
      case OpKind::Mul:
        return knownOrUnknown(Dim::tryMultiply(e[0], e[1]));
      default:
        return divideDims(e[0], e[1]);
      }
    });
  case OpKind::Max:
  case OpKind::Min:
    return mapBroadcast(allOperands(), 0, [kind](const std::vector<Dim> &e) {
      return extremum(kind == OpKind::Max, e);
    });
  case OpKind::Equal:
  case OpKind::Less:
  case OpKind::Greater:
  case OpKind::LessOrEqual:
  case OpKind::GreaterOrEqual:
    return mapBroadcast(allOperands(), 2, [kind](const std::vector<Dim> &e) {
      return compareElements(kind, e[0], e[1]);
    });
  case OpKind::Where:
    return mapBroadcast(allOperands(), 3, [](const std::vector<Dim> &e) {
      std::optional<int64_t> condition = e[0].constant();
      return condition ? (*condition ? e[1] : e[2]) : Dim::unknown();
    });
  case OpKind::Range:
    return range();
  case OpKind::ConstantOfShape:
    return constantOfShape();
  case OpKind::Constant:
    return constant();
  default:
    return std::nullopt;
  }
}

} // namespace

void propagateKnownContents(const Node &node, InferenceContext &context) {
  if (node.numResults() != 1 && node.kind() != OpKind::Dropout)
    return;
  const Value *result = node.result(0);
  if (!hasTrackableDType(result->dtype()))
    return;
  std::optional<int64_t> length = staticLength(result);
  if (!length || *length > kMaxKnownElements)
    return;
  for (const Value *operand : node.operands())
    if (operand && operand->dtype() == DType::Unknown)
      return;
  std::optional<Contents> contents = Propagator(node, context).run();
  // A length that disagrees with the inferred shape means the node is
  // malformed in a way its rule tolerated; knowing nothing is then safest.
  if (!contents || int64_t(contents->size()) != *length)
    return;
  if (std::all_of(contents->begin(), contents->end(), [](const Dim &d) { return d.isUnknown(); }))
    return;
  context.setKnownContents(result, std::move(*contents));
}

} // namespace onnxc
