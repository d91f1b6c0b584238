//===- ir/Tensor.cpp - Concrete tensors -------------------------------------===//
#include "ir/Tensor.h"

#include "ir/ElementTraits.h"
#include "ir/Error.h"

#include <cstring>
#include <new>

namespace onnxc {

namespace {
// Storage is 64-byte aligned so kernels may use aligned vector loads.
std::shared_ptr<uint8_t[]> allocateZeroed(size_t bytes) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  void *p = ::operator new[](rounded, std::align_val_t(64));
  std::memset(p, 0, rounded);
  return std::shared_ptr<uint8_t[]>(static_cast<uint8_t *>(p), [](uint8_t *q) {
    ::operator delete[](q, std::align_val_t(64));
  });
}

int64_t checkedElementCount(const std::vector<int64_t> &dims) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      fail("negative tensor dimension ", d);
    if (d != 0 && n > (int64_t(1) << 40) / d)
      fail("tensor of more than 2^40 elements is not supported");
    n *= d;
  }
  return n;
}

/// Element i of `t` loaded as its compute type (as the kernels load it),
/// then converted to R with a plain C++ cast.
template <typename R> R convertedElement(const Tensor &t, int64_t i) {
  if (t.dtype() == DType::Unknown)
    fail("element of a tensor of unknown type");
  return dispatchDType(t.dtype(), [&]<DType D>() {
    using Traits = ElementTraits<D>;
    return R(Traits::load(t.data<typename Traits::Storage>()[i]));
  });
}
} // namespace

Tensor::Tensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  int64_t n = checkedElementCount(dims_);
  buffer_ = allocateZeroed(size_t(n) * dtypeSize(dtype_));
}

Tensor Tensor::fromBytes(DType dtype, std::vector<int64_t> dims, const void *data, size_t bytes) {
  Tensor t(dtype, std::move(dims));
  if (bytes != t.byteSize())
    fail("tensor data has ", bytes, " bytes, expected ", t.byteSize(), " for ", t.typeString());
  if (bytes)
    std::memcpy(t.rawData(), data, bytes);
  return t;
}

Tensor Tensor::elided(DType dtype, std::vector<int64_t> dims) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  checkedElementCount(t.dims_);
  return t;
}

Tensor Tensor::boolScalar(bool value) {
  Tensor t(DType::Bool, {});
  t.data<uint8_t>()[0] = value ? 1 : 0;
  return t;
}

int64_t Tensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims_)
    n *= d;
  return n;
}

double Tensor::elementAsDouble(int64_t i) const { return convertedElement<double>(*this, i); }

int64_t Tensor::elementAsInt64(int64_t i) const { return convertedElement<int64_t>(*this, i); }

/// The inverse of convertedElement: a cast to the compute type, then a store.
void Tensor::setElementFromDouble(int64_t i, double v) {
  if (dtype_ == DType::Unknown)
    fail("store into a tensor of unknown type");
  dispatchDType(dtype_, [&]<DType D>() {
    using Traits = ElementTraits<D>;
    data<typename Traits::Storage>()[i] = Traits::store(typename Traits::Compute(v));
  });
}

std::vector<int64_t> Tensor::toInt64Vector() const {
  if (!hasData())
    fail("contents of an elided constant are not available");
  std::vector<int64_t> out(static_cast<size_t>(numElements()));
  for (int64_t i = 0; i < numElements(); ++i)
    out[size_t(i)] = elementAsInt64(i);
  return out;
}

Tensor Tensor::clone() const {
  if (!hasData())
    return elided(dtype_, dims_);
  return fromBytes(dtype_, dims_, rawData(), byteSize());
}

Tensor Tensor::reshaped(std::vector<int64_t> dims) const {
  Tensor t = *this;
  t.dims_ = std::move(dims);
  assert(t.numElements() == numElements());
  return t;
}

bool Tensor::identicalTo(const Tensor &other) const {
  if (dtype_ != other.dtype_ || dims_ != other.dims_ || hasData() != other.hasData())
    return false;
  return !hasData() || std::memcmp(rawData(), other.rawData(), byteSize()) == 0;
}

std::string Tensor::typeString() const {
  std::string out = std::string(dtypeName(dtype_)) + "[";
  for (size_t i = 0; i < dims_.size(); ++i)
    out += (i ? ", " : "") + std::to_string(dims_[i]);
  return out + "]";
}

} // namespace onnxc
