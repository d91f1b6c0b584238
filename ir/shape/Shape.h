//===- ir/shape/Shape.h - Tensor shapes with symbolic dimensions ------------------===//
#pragma once

#include "ir/DType.h"
#include "ir/shape/Dim.h"

#include <optional>
#include <string>
#include <vector>

namespace onnxc {

/// The shape of a tensor: unranked (nothing known), or a list of dimensions,
/// each constant, symbolic or unknown. A ranked shape with no dims is a scalar.
class Shape {
public:
  /// An unranked shape.
  Shape() = default;
  explicit Shape(std::vector<Dim> dims) : ranked_(true), dims_(std::move(dims)) {}
  static Shape unranked() { return Shape(); }
  static Shape scalar() { return Shape(std::vector<Dim>{}); }
  static Shape fromConstants(const std::vector<int64_t> &dims);

  bool isRanked() const { return ranked_; }
  size_t rank() const { return dims_.size(); }
  const std::vector<Dim> &dims() const { return dims_; }
  const Dim &operator[](size_t i) const { return dims_[i]; }
  Dim &operator[](size_t i) { return dims_[i]; }

  /// True when ranked and every dimension is a constant.
  bool isStatic() const;
  /// The constant dims of a static shape; nullopt otherwise.
  std::optional<std::vector<int64_t>> staticDims() const;
  /// Product of the dims (unknown Dim if unranked).
  Dim numElements() const;

  bool operator==(const Shape &other) const {
    return ranked_ == other.ranked_ && dims_ == other.dims_;
  }
  bool operator!=(const Shape &other) const { return !(*this == other); }

  /// Text form of the bracket part: "[batch, seq, 384]", "[]", "[*]".
  std::string str() const;

private:
  bool ranked_ = false;
  std::vector<Dim> dims_;
};

/// Element type plus shape: the type of every Value.
struct TensorType {
  DType dtype = DType::Unknown;
  Shape shape;

  bool operator==(const TensorType &o) const { return dtype == o.dtype && shape == o.shape; }
  bool operator!=(const TensorType &o) const { return !(*this == o); }
  /// "f32[batch, seq, 384]"; "unknown[*]" when nothing is known.
  std::string str() const;
};

/// Normalizes a possibly negative axis against a rank; nullopt if out of range.
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace onnxc
