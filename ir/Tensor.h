//===- ir/Tensor.h - Concrete tensors (constants and evaluator values) ------===//
#pragma once

#include "ir/DType.h"

#include <cassert>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace onnxc {

/// A dense, row-major tensor with concrete dimensions. Copies share storage
/// (a Tensor is a cheap handle); use clone() for an independent copy. A
/// tensor may have no storage ("elided"): the text IR prints large constants
/// without their contents, and parsing such text gives elided constants that
/// can be inspected but not evaluated.
class Tensor {
public:
  Tensor() = default;
  /// A zero-filled tensor.
  Tensor(DType dtype, std::vector<int64_t> dims);
  /// A tensor with copied contents; `bytes` must be numElements*dtypeSize.
  static Tensor fromBytes(DType dtype, std::vector<int64_t> dims, const void *data, size_t bytes);
  /// A tensor of the right type and shape whose contents are not available.
  static Tensor elided(DType dtype, std::vector<int64_t> dims);

  template <typename T>
  static Tensor fromVector(std::vector<int64_t> dims, const std::vector<T> &values) {
    Tensor t(dtypeOf<T>(), std::move(dims));
    assert(size_t(t.numElements()) == values.size());
    std::copy(values.begin(), values.end(), t.data<T>());
    return t;
  }
  template <typename T> static Tensor scalar(T value) { return fromVector<T>({}, {value}); }
  static Tensor boolScalar(bool value);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t numElements() const;
  size_t byteSize() const { return size_t(numElements()) * dtypeSize(dtype_); }
  bool hasData() const { return buffer_ != nullptr; }
  bool isDefined() const { return dtype_ != DType::Unknown; }

  /// Typed access. T must be the storage type of dtype() (uint8_t for bool,
  /// uint16_t for f16/bf16).
  template <typename T> T *data() {
    assert(buffer_ && sizeof(T) == dtypeSize(dtype_));
    return reinterpret_cast<T *>(buffer_.get());
  }
  template <typename T> const T *data() const {
    assert(buffer_ && sizeof(T) == dtypeSize(dtype_));
    return reinterpret_cast<const T *>(buffer_.get());
  }
  void *rawData() { return buffer_.get(); }
  const void *rawData() const { return buffer_.get(); }

  /// Element i (flat index) converted to double / int64, for any dtype.
  double elementAsDouble(int64_t i) const;
  int64_t elementAsInt64(int64_t i) const;
  /// Stores a double into element i, converting to the dtype.
  void setElementFromDouble(int64_t i, double value);
  /// All elements as int64 (for index-like tensors: shapes, axes, ...).
  std::vector<int64_t> toInt64Vector() const;

  Tensor clone() const;
  /// Same storage, new dims with the same element count.
  Tensor reshaped(std::vector<int64_t> dims) const;
  /// Bitwise equality of type, shape and contents.
  bool identicalTo(const Tensor &other) const;
  /// "f32[2, 3]".
  std::string typeString() const;

private:
  DType dtype_ = DType::Unknown;
  std::vector<int64_t> dims_;
  std::shared_ptr<uint8_t[]> buffer_;
};

} // namespace onnxc
