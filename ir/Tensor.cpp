//===- ir/Tensor.cpp - Concrete tensors -------------------------------------===//
#include "ir/Tensor.h"

#include "ir/ElementTraits.h"
#include "ir/Error.h"
#include "ir/MemoryBudget.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <sys/mman.h>

namespace onnxc {

namespace {
/// Blocks from this size on come straight from mmap: the kernel hands out
/// zero pages lazily, so a large zero-filled tensor costs nothing until its
/// pages are written, and no byte is touched ahead of use.
constexpr size_t kMappedBytes = size_t(1) << 20;

/// Storage for `bytes`, 64-byte aligned (kernels may use aligned vector
/// loads), counted against the memory budget, zero-filled when `zeroed`.
std::shared_ptr<uint8_t[]> allocate(size_t bytes, bool zeroed) {
  size_t rounded = (bytes + 63) / 64 * 64;
  if (rounded == 0)
    rounded = 64;
  reserveTensorBytes(int64_t(rounded));
  if (rounded >= kMappedBytes) {
    void *p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
      releaseTensorBytes(int64_t(rounded));
      throw SizeError("cannot map " + formatBytes(int64_t(rounded)) + " for a tensor");
    }
    return std::shared_ptr<uint8_t[]>(static_cast<uint8_t *>(p), [rounded](uint8_t *q) {
      munmap(q, rounded);
      releaseTensorBytes(int64_t(rounded));
    });
  }
  void *p;
  try {
    p = ::operator new[](rounded, std::align_val_t(64));
  } catch (...) {
    releaseTensorBytes(int64_t(rounded));
    throw;
  }
  if (zeroed)
    std::memset(p, 0, rounded);
  return std::shared_ptr<uint8_t[]>(static_cast<uint8_t *>(p), [rounded](uint8_t *q) {
    ::operator delete[](q, std::align_val_t(64));
    releaseTensorBytes(int64_t(rounded));
  });
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string text = "[";
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text + "]";
}

int64_t checkedElementCount(const std::vector<int64_t> &dims) {
  for (int64_t d : dims)
    if (d < 0)
      fail("negative tensor dimension ", d, " in ", dimsText(dims));
  // A zero-size tensor (an empty KV cache [b, h, 0, d]) holds nothing, so the
  // element limit, which is about memory, does not apply; its strides are
  // products of the other dims and must still fit in int64 (numpy's rule).
  if (std::find(dims.begin(), dims.end(), 0) != dims.end()) {
    int64_t strides = 1;
    for (int64_t d : dims)
      if (d != 0 && __builtin_mul_overflow(strides, d, &strides))
        throw SizeError("a tensor of shape " + dimsText(dims) +
                        " has nonzero dims whose product int64 cannot count");
    return 0;
  }
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d != 0 && n > (int64_t(1) << 40) / d)
      throw SizeError("a tensor of shape " + dimsText(dims) +
                      " has more than 2^40 elements, which onnxc does not support");
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
  buffer_ = allocate(size_t(n) * dtypeSize(dtype_), /*zeroed=*/true);
}

Tensor Tensor::fromBytes(DType dtype, std::vector<int64_t> dims, const void *data, size_t bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  checkedElementCount(t.dims_);
  if (bytes != t.byteSize())
    fail("tensor data has ", bytes, " bytes, expected ", t.byteSize(), " for ", t.typeString());
  t.buffer_ = allocate(bytes, /*zeroed=*/false);
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

std::string Tensor::typeString() const { return std::string(dtypeName(dtype_)) + dimsText(dims_); }

} // namespace onnxc
