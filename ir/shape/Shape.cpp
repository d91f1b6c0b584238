//===- ir/shape/Shape.cpp - Tensor shapes with symbolic dimensions ----------------===//
#include "ir/shape/Shape.h"

namespace onnxc {

Shape Shape::fromConstants(const std::vector<int64_t> &dims) {
  std::vector<Dim> out;
  out.reserve(dims.size());
  for (int64_t d : dims)
    out.emplace_back(d);
  return Shape(std::move(out));
}

bool Shape::isStatic() const {
  if (!ranked_)
    return false;
  for (const Dim &d : dims_)
    if (!d.isConstant())
      return false;
  return true;
}

std::optional<std::vector<int64_t>> Shape::staticDims() const {
  if (!isStatic())
    return std::nullopt;
  std::vector<int64_t> out;
  out.reserve(dims_.size());
  for (const Dim &d : dims_)
    out.push_back(*d.constant());
  return out;
}

Dim Shape::numElements() const {
  if (!ranked_)
    return Dim::unknown();
  Dim product(1);
  for (const Dim &d : dims_)
    product = product * d;
  return product;
}

std::string Shape::str() const {
  if (!ranked_)
    return "[*]";
  std::string out = "[";
  for (size_t i = 0; i < dims_.size(); ++i)
    out += (i ? ", " : "") + dims_[i].str();
  return out + "]";
}

std::string TensorType::str() const { return std::string(dtypeName(dtype)) + shape.str(); }

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

} // namespace onnxc
