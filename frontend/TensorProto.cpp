//===- frontend/TensorProto.cpp - onnx::TensorProto -> Tensor ---------------===//
//
// A TensorProto carries its elements in one of three places: raw_data
// (little-endian bytes), a typed repeated field chosen by the dtype, or an
// external file next to the model. Every size is checked against the element
// count before anything is allocated, so a malformed file gives an error, not
// a huge allocation or a read past the end.
//
//===----------------------------------------------------------------------===//
#include "frontend/TensorProto.h"

#include "frontend/ExternalData.h"
#include "ir/Error.h"
#include "ir/MemoryBudget.h"

#include <bit>
#include <cstring>

namespace onnxc {

// raw_data and external files are little-endian; we copy them verbatim.
static_assert(std::endian::native == std::endian::little, "onnxc assumes a little-endian host");

namespace {

/// Above this many elements a tensor is certainly a corrupt header (8 TiB of bytes).
constexpr int64_t kMaxElements = int64_t(1) << 40;

const char *onnxDTypeName(int32_t onnxDataType) {
  switch (onnxDataType) {
  case 0:
    return "undefined";
  case 8:
    return "string";
  case 14:
    return "complex64";
  case 15:
    return "complex128";
  case 17:
    return "float8e4m3fn";
  case 18:
    return "float8e4m3fnuz";
  case 19:
    return "float8e5m2";
  case 20:
    return "float8e5m2fnuz";
  case 21:
    return "uint4";
  case 22:
    return "int4";
  case 23:
    return "float4e2m1";
  default:
    return nullptr;
  }
}

/// The dims of the proto, checked: none negative, product not absurd.
std::vector<int64_t> checkedDims(const onnx::TensorProto &proto, const std::string &context,
                                 int64_t &numElements) {
  std::vector<int64_t> dims(proto.dims().begin(), proto.dims().end());
  numElements = 1;
  for (int64_t d : dims) {
    if (d < 0)
      fail(context, ": negative dimension ", d);
    // Checked before multiplying so the product cannot overflow.
    if (d != 0 && numElements > kMaxElements / d)
      fail(context, ": more than 2^40 elements; the file is corrupt");
    numElements *= d;
  }
  return dims;
}

[[noreturn]] void countMismatch(const std::string &context, const char *field, int64_t expected,
                                int64_t actual) {
  fail(context, ": ", field, " holds ", actual, " elements but the dims give ", expected);
}

/// Copies a repeated field into `out`, converting each element with `convert`.
template <typename Storage, typename Field, typename Convert>
void copyField(Tensor &out, const Field &field, Convert convert) {
  Storage *data = out.data<Storage>();
  for (int i = 0; i < field.size(); ++i)
    data[i] = convert(field.Get(i));
}

/// i4/u4 elements packed two to a byte, the first in the low nibble (an odd
/// count leaves the last high nibble unused), one element per byte in the
/// IR tensor; i4 is sign-extended.
Tensor unpackFourBit(DType dtype, std::vector<int64_t> dims, int64_t numElements,
                     const uint8_t *packed, size_t packedBytes, const char *source,
                     const std::string &context) {
  size_t expected = size_t((numElements + 1) / 2);
  if (packedBytes != expected)
    fail(context, ": ", source, " has ", packedBytes, " bytes but ", dtypeName(dtype), "[",
         numElements, " elements] needs ", expected, " (two elements a byte)");
  Tensor out(dtype, std::move(dims));
  auto *data = static_cast<uint8_t *>(out.rawData());
  for (int64_t i = 0; i < numElements; ++i) {
    uint8_t nibble = (packed[i / 2] >> (4 * (i % 2))) & 0xf;
    data[i] = dtype == DType::I4 ? uint8_t(int8_t((nibble ^ 0x8) - 0x8)) : nibble;
  }
  return out;
}

Tensor fromTypedField(const onnx::TensorProto &proto, DType dtype, std::vector<int64_t> dims,
                      int64_t numElements, const std::string &context) {
  if (isFourBit(dtype)) {
    // int32_data holds one packed byte (two elements) per entry.
    std::vector<uint8_t> packed(proto.int32_data().begin(), proto.int32_data().end());
    return unpackFourBit(dtype, std::move(dims), numElements, packed.data(), packed.size(),
                         "int32_data", context);
  }
  // Pick the field the ONNX spec assigns to this dtype, check its length,
  // then allocate and convert.
  auto checkCount = [&](const char *fieldName, int size) {
    if (int64_t(size) != numElements)
      countMismatch(context, fieldName, numElements, size);
  };
  switch (dtype) {
  case DType::F32:
    checkCount("float_data", proto.float_data_size());
    return Tensor::fromBytes(dtype, std::move(dims), proto.float_data().data(),
                             size_t(numElements) * sizeof(float));
  case DType::F64:
    checkCount("double_data", proto.double_data_size());
    return Tensor::fromBytes(dtype, std::move(dims), proto.double_data().data(),
                             size_t(numElements) * sizeof(double));
  case DType::I64:
    checkCount("int64_data", proto.int64_data_size());
    return Tensor::fromBytes(dtype, std::move(dims), proto.int64_data().data(),
                             size_t(numElements) * sizeof(int64_t));
  case DType::U32:
  case DType::U64: {
    checkCount("uint64_data", proto.uint64_data_size());
    Tensor out(dtype, std::move(dims));
    if (dtype == DType::U32)
      copyField<uint32_t>(out, proto.uint64_data(), [](uint64_t v) { return uint32_t(v); });
    else
      copyField<uint64_t>(out, proto.uint64_data(), [](uint64_t v) { return v; });
    return out;
  }
  default:
    break;
  }
  // Everything narrower than 32 bits (and i32 itself) lives in int32_data;
  // f16 and bf16 keep their bit patterns in the low 16 bits.
  checkCount("int32_data", proto.int32_data_size());
  Tensor out(dtype, std::move(dims));
  const auto &field = proto.int32_data();
  switch (dtype) {
  case DType::I32:
    copyField<int32_t>(out, field, [](int32_t v) { return v; });
    break;
  case DType::I16:
    copyField<int16_t>(out, field, [](int32_t v) { return int16_t(v); });
    break;
  case DType::I8:
    copyField<int8_t>(out, field, [](int32_t v) { return int8_t(v); });
    break;
  case DType::U8:
    copyField<uint8_t>(out, field, [](int32_t v) { return uint8_t(v); });
    break;
  case DType::Bool:
    copyField<uint8_t>(out, field, [](int32_t v) { return uint8_t(v != 0); });
    break;
  case DType::U16:
  case DType::F16:
  case DType::BF16:
    copyField<uint16_t>(out, field, [](int32_t v) { return uint16_t(uint32_t(v) & 0xffff); });
    break;
  default:
    fail(context, ": internal: no typed field for dtype ", dtypeName(dtype));
  }
  return out;
}

Tensor fromBytes(DType dtype, std::vector<int64_t> dims, int64_t numElements,
                 const std::string &bytes, const char *source, const std::string &context) {
  if (isFourBit(dtype))
    return unpackFourBit(dtype, std::move(dims), numElements,
                         reinterpret_cast<const uint8_t *>(bytes.data()), bytes.size(), source,
                         context);
  size_t expected = size_t(numElements) * dtypeSize(dtype);
  if (bytes.size() != expected)
    fail(context, ": ", source, " has ", bytes.size(), " bytes but ", dtypeName(dtype), "[",
         numElements, " elements] needs ", expected);
  Tensor out = Tensor::fromBytes(dtype, std::move(dims), bytes.data(), bytes.size());
  if (dtype == DType::Bool) {
    // Anything nonzero is true; the IR stores bools as exactly 0 or 1.
    uint8_t *data = out.data<uint8_t>();
    for (int64_t i = 0; i < numElements; ++i)
      data[i] = data[i] != 0;
  }
  return out;
}

} // namespace

DType dtypeFromOnnx(int32_t onnxDataType, const std::string &context) {
  switch (onnxDataType) {
  case onnx::TensorProto::FLOAT:
    return DType::F32;
  case onnx::TensorProto::UINT8:
    return DType::U8;
  case onnx::TensorProto::INT8:
    return DType::I8;
  case onnx::TensorProto::UINT16:
    return DType::U16;
  case onnx::TensorProto::INT16:
    return DType::I16;
  case onnx::TensorProto::INT32:
    return DType::I32;
  case onnx::TensorProto::INT64:
    return DType::I64;
  case onnx::TensorProto::BOOL:
    return DType::Bool;
  case onnx::TensorProto::FLOAT16:
    return DType::F16;
  case onnx::TensorProto::DOUBLE:
    return DType::F64;
  case onnx::TensorProto::UINT32:
    return DType::U32;
  case onnx::TensorProto::UINT64:
    return DType::U64;
  case onnx::TensorProto::BFLOAT16:
    return DType::BF16;
  // INT4 and UINT4 (ONNX 1.16), by number: the onnx headers onnxc builds
  // against predate them.
  case 22:
    return DType::I4;
  case 21:
    return DType::U4;
  default:
    break;
  }
  if (onnxDataType == 0)
    fail(context, ": no data type given");
  if (const char *name = onnxDTypeName(onnxDataType))
    fail(context, ": unsupported dtype ", name);
  fail(context, ": unknown dtype code ", onnxDataType);
}

namespace {
Tensor tensorFromProtoUnchecked(const onnx::TensorProto &proto, const ModelFolder &modelDir,
                                const std::string &context) {
  if (proto.has_segment())
    fail(context, ": segmented tensors are not supported");
  DType dtype = dtypeFromOnnx(proto.data_type(), context);
  int64_t numElements = 0;
  std::vector<int64_t> dims = checkedDims(proto, context, numElements);

  if (proto.data_location() == onnx::TensorProto::EXTERNAL) {
    // <= 2^43: no overflow; i4/u4 are stored two elements a byte.
    int64_t byteCount =
        isFourBit(dtype) ? (numElements + 1) / 2 : numElements * int64_t(dtypeSize(dtype));
    checkTensorBytesAvailable(byteCount); // before reading a file that large
    std::string bytes = readExternalData(proto, modelDir, size_t(byteCount), context);
    return fromBytes(dtype, std::move(dims), numElements, bytes, "external data", context);
  }
  if (proto.has_raw_data())
    return fromBytes(dtype, std::move(dims), numElements, proto.raw_data(), "raw_data", context);
  return fromTypedField(proto, dtype, std::move(dims), numElements, context);
}

} // namespace

Tensor tensorFromProto(const onnx::TensorProto &proto, const ModelFolder &modelDir,
                       const std::string &context) {
  // A size refused by the memory budget names the tensor it was for.
  return withSizeContext(context,
                         [&] { return tensorFromProtoUnchecked(proto, modelDir, context); });
}

} // namespace onnxc
