//===- ir/Tensor.cpp - Concrete tensors -------------------------------------===//
#include "ir/Tensor.h"

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

double Tensor::elementAsDouble(int64_t i) const {
  switch (dtype_) {
  case DType::F32: return data<float>()[i];
  case DType::F64: return data<double>()[i];
  case DType::F16: return halfToFloat(data<uint16_t>()[i]);
  case DType::BF16: return bfloat16ToFloat(data<uint16_t>()[i]);
  case DType::I8: return data<int8_t>()[i];
  case DType::U8: return data<uint8_t>()[i];
  case DType::I16: return data<int16_t>()[i];
  case DType::U16: return data<uint16_t>()[i];
  case DType::I32: return data<int32_t>()[i];
  case DType::U32: return data<uint32_t>()[i];
  case DType::I64: return double(data<int64_t>()[i]);
  case DType::U64: return double(data<uint64_t>()[i]);
  case DType::Bool: return data<uint8_t>()[i] ? 1.0 : 0.0;
  case DType::Unknown: break;
  }
  fail("element of a tensor of unknown type");
}

int64_t Tensor::elementAsInt64(int64_t i) const {
  switch (dtype_) {
  case DType::I8: return data<int8_t>()[i];
  case DType::U8: return data<uint8_t>()[i];
  case DType::I16: return data<int16_t>()[i];
  case DType::U16: return data<uint16_t>()[i];
  case DType::I32: return data<int32_t>()[i];
  case DType::U32: return data<uint32_t>()[i];
  case DType::I64: return data<int64_t>()[i];
  case DType::U64: return int64_t(data<uint64_t>()[i]);
  case DType::Bool: return data<uint8_t>()[i] ? 1 : 0;
  default: return int64_t(elementAsDouble(i));
  }
}

void Tensor::setElementFromDouble(int64_t i, double v) {
  switch (dtype_) {
  case DType::F32: data<float>()[i] = float(v); return;
  case DType::F64: data<double>()[i] = v; return;
  case DType::F16: data<uint16_t>()[i] = floatToHalf(float(v)); return;
  case DType::BF16: data<uint16_t>()[i] = floatToBfloat16(float(v)); return;
  case DType::I8: data<int8_t>()[i] = int8_t(v); return;
  case DType::U8: data<uint8_t>()[i] = uint8_t(v); return;
  case DType::I16: data<int16_t>()[i] = int16_t(v); return;
  case DType::U16: data<uint16_t>()[i] = uint16_t(v); return;
  case DType::I32: data<int32_t>()[i] = int32_t(v); return;
  case DType::U32: data<uint32_t>()[i] = uint32_t(v); return;
  case DType::I64: data<int64_t>()[i] = int64_t(v); return;
  case DType::U64: data<uint64_t>()[i] = uint64_t(v); return;
  case DType::Bool: data<uint8_t>()[i] = v != 0.0; return;
  case DType::Unknown: break;
  }
  fail("store into a tensor of unknown type");
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
