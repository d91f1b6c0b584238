//===- frontend/SparseTensorProto.cpp - Sparse constants made dense --------===//
//
// Exporters rarely write sparse tensors, but they are legal Constant values
// and initializers. onnxc has no sparse tensors, so they become dense at
// import: a transformer's sparse constants are small masks.
//
//===----------------------------------------------------------------------===//
#include "frontend/TensorProto.h"

#include "ir/Error.h"

#include <cstring>

namespace onnxc {

namespace {

Tensor densify(const onnx::SparseTensorProto &proto, const ModelFolder &modelDir,
               const std::string &context) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  Tensor values = tensorFromProto(proto.values(), modelDir, context + " (values)");
  if (values.rank() != 1)
    fail(context, ": sparse values must be 1-D, got ", values.typeString());
  int64_t count = values.dims()[0];
  // Checks dims (negative or absurd sizes fail here) and the memory budget;
  // the zeros come from lazily mapped pages, so only the values cost memory.
  Tensor dense(values.dtype(), dims);
  int64_t denseCount = dense.numElements();
  if (denseCount == 0 && count > 0)
    fail(context, ": ", count, " sparse values for ", dense.typeString(),
         ", which has no elements");
  // Each stride is at most the element count, so none overflows.
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); denseCount > 0 && i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];

  std::vector<int64_t> indices;
  if (count > 0) {
    Tensor indexTensor = tensorFromProto(proto.indices(), modelDir, context + " (indices)");
    if (indexTensor.dtype() != DType::I64)
      fail(context, ": sparse indices must be i64, got ", indexTensor.typeString());
    indices = indexTensor.toInt64Vector();
    bool linear = indexTensor.rank() == 1 && indexTensor.dims()[0] == count;
    bool coordinates = indexTensor.rank() == 2 && indexTensor.dims()[0] == count &&
                       indexTensor.dims()[1] == int64_t(dims.size());
    if (!linear && !coordinates)
      fail(context, ": sparse indices ", indexTensor.typeString(), " do not match ", count,
           " values of a rank-", dims.size(), " tensor");
    if (coordinates) { // turn [NNZ, rank] coordinates into linear offsets
      std::vector<int64_t> offsets(size_t(count), 0);
      for (int64_t n = 0; n < count; ++n)
        for (size_t axis = 0; axis < dims.size(); ++axis) {
          int64_t coordinate = indices[size_t(n) * dims.size() + axis];
          if (coordinate < 0 || coordinate >= dims[axis])
            fail(context, ": sparse index ", coordinate, " out of range for axis ", axis,
                 " of size ", dims[axis]);
          offsets[size_t(n)] += coordinate * strides[axis];
        }
      indices = std::move(offsets);
    }
  }
  size_t elementSize = dtypeSize(values.dtype());
  auto *out = static_cast<uint8_t *>(dense.rawData());
  const auto *in = static_cast<const uint8_t *>(values.rawData());
  for (int64_t n = 0; n < count; ++n) {
    int64_t offset = indices[size_t(n)];
    if (offset < 0 || offset >= denseCount)
      fail(context, ": sparse index ", offset, " out of range for ", dense.typeString());
    std::memcpy(out + size_t(offset) * elementSize, in + size_t(n) * elementSize, elementSize);
  }
  return dense;
}

} // namespace

Tensor tensorFromSparseProto(const onnx::SparseTensorProto &proto, const ModelFolder &modelDir,
                             const std::string &context) {
  return withSizeContext(context, [&] { return densify(proto, modelDir, context); });
}

} // namespace onnxc
