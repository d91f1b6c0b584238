//===- tests/unit/tools/NpyTest.cpp - The .npy reader and writer ----------------===//
#include "tools/onnxc/Npy.h"
#include "ir/Error.h"

#include <cstdio>
#include <gtest/gtest.h>

using namespace onnxc;

namespace {

// Bytes as numpy.save writes them, with the header given as text.
std::string npyBytes(const std::string &header, const std::string &data, int major = 1) {
  std::string out = "\x93NUMPY";
  out += char(major);
  out += char(0);
  size_t len = header.size();
  out += char(len & 0xff);
  out += char((len >> 8) & 0xff);
  if (major > 1) {
    out += char(0);
    out += char(0);
  }
  return out + header + data;
}

std::string floats(std::initializer_list<float> values) {
  std::string out;
  for (float v : values)
    out.append(reinterpret_cast<const char *>(&v), sizeof v);
  return out;
}

std::string errorOf(const std::string &bytes) {
  try {
    decodeNpy(bytes, "in.npy");
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(Npy, ReadsNumpyHeaderVersions) {
  for (int major : {1, 2, 3}) {
    Tensor t =
        decodeNpy(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }         \n",
                           floats({0, 1, 2, 3, 4, 5}), major),
                  "in.npy");
    EXPECT_EQ(t.dtype(), DType::F32);
    EXPECT_EQ(t.dims(), (std::vector<int64_t>{2, 3}));
    EXPECT_EQ(t.data<float>()[4], 4.0f);
  }
}

TEST(Npy, ReadsScalarsVectorsAndKeysInAnyOrder) {
  Tensor s = decodeNpy(npyBytes("{\"shape\": (), \"fortran_order\": False, \"descr\": \"<i8\"}\n",
                                std::string("\x07\0\0\0\0\0\0\0", 8)),
                       "s.npy");
  EXPECT_EQ(s.rank(), 0u);
  EXPECT_EQ(s.elementAsInt64(0), 7);
  Tensor v = decodeNpy(npyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }\n",
                                std::string("\x01\x00\x02", 3)),
                       "v.npy");
  EXPECT_EQ(v.dtype(), DType::Bool);
  EXPECT_EQ(v.dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(v.data<uint8_t>()[2], 1) << "bools are normalized to 0/1";
}

TEST(Npy, RoundTripsEveryDtype) {
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::I8, DType::U8, DType::I16,
                      DType::U16, DType::I32, DType::U32, DType::I64, DType::U64, DType::Bool}) {
    Tensor t(dtype, {2, 2});
    for (int64_t i = 0; i < 4; ++i)
      t.setElementFromDouble(i, dtype == DType::Bool ? double(i % 2) : double(i + 1));
    std::string bytes = encodeNpy(t, "t.npy");
    EXPECT_EQ((bytes.size() - t.byteSize()) % 64, 0u) << "data is 64-byte aligned";
    Tensor back = decodeNpy(bytes, "t.npy");
    EXPECT_TRUE(back.identicalTo(t)) << dtypeName(dtype);
  }
  Tensor empty(DType::F32, {0, 3});
  EXPECT_EQ(decodeNpy(encodeNpy(empty, "e.npy"), "e.npy").dims(), (std::vector<int64_t>{0, 3}));
  // numpy has no bfloat16: a bf16 tensor is written as the f32 values it holds.
  Tensor half(DType::BF16, {3});
  for (int64_t i = 0; i < 3; ++i)
    half.setElementFromDouble(i, -1.5 + 1.25 * double(i));
  Tensor wide = decodeNpy(encodeNpy(half, "b.npy"), "b.npy");
  ASSERT_EQ(wide.dtype(), DType::F32);
  EXPECT_EQ(wide.dims(), half.dims());
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(wide.data<float>()[i], -1.5f + 1.25f * float(i));
}

// Every array numpy.save writes with a zero dim anywhere: an empty KV cache
// [b, h, 0, d], an empty vector, a zero leading dim, zeros beside dims whose
// product is far past onnxc's element limit (numpy takes any that fits int64).
TEST(Npy, ReadsEveryZeroSizeArray) {
  const std::vector<std::vector<int64_t>> shapes = {
      {1, 4, 0, 16},        {0}, {0, 3}, {3, 0}, {2, 0, 0, 5}, {1 << 30, 1 << 30, 0},
      {0, int64_t(1) << 56}};
  for (const std::vector<int64_t> &dims : shapes) {
    std::string tuple;
    for (int64_t d : dims)
      tuple += std::to_string(d) + ", ";
    for (const char *descr : {"<f4", "<i8", "|b1"}) {
      std::string header = std::string("{'descr': '") + descr +
                           "', 'fortran_order': False, 'shape': (" + tuple + "), }\n";
      Tensor t = decodeNpy(npyBytes(header, ""), "empty.npy");
      EXPECT_EQ(t.dims(), dims) << header;
      EXPECT_EQ(t.numElements(), 0) << header;
      // And back: the writer keeps the shape.
      EXPECT_EQ(decodeNpy(encodeNpy(t, "e.npy"), "e.npy").dims(), dims) << header;
    }
  }
  // Empty, but with data after the header: the data does not belong to it.
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (1, 4, 0, 16), }\n",
                             floats({1})))
                .find("data size mismatch"),
            std::string::npos);
  // numpy refuses these too: the other dims' product overflows int64.
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, "
                             "'shape': (4294967296, 4294967296, 0), }\n",
                             ""))
                .find("too large"),
            std::string::npos);
}

TEST(Npy, WritesAndReadsFiles) {
  std::string path = ::testing::TempDir() + "/onnxc_npy_test.npy";
  Tensor t = Tensor::fromVector<int32_t>({3}, {1, -2, 3});
  writeNpy(path, t);
  EXPECT_TRUE(readNpy(path).identicalTo(t));
  std::remove(path.c_str());
  EXPECT_THROW(readNpy(path), Error);
}

TEST(Npy, RejectsBadFilesNamingThem) {
  const std::string good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }\n";
  EXPECT_NE(errorOf("not an npy file").find("in.npy: not an npy file"), std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }\n",
                             floats({1, 2})))
                .find("fortran order"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2,), }\n",
                             floats({1, 2})))
                .find("big-endian"),
            std::string::npos);
  EXPECT_NE(
      errorOf(npyBytes("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }\n", "12345678"))
          .find("object"),
      std::string::npos);
  EXPECT_NE(errorOf(npyBytes(good, floats({1}))).find("data size mismatch"), std::string::npos);
  EXPECT_NE(errorOf(npyBytes(good, floats({1, 2, 3}))).find("data size mismatch"),
            std::string::npos);
  EXPECT_NE(
      errorOf(npyBytes("{'descr': '<f4', 'shape': (2,), }\n", floats({1, 2}))).find("malformed"),
      std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }\n",
                             floats({1, 2})))
                .find("malformed"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes("{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }\n",
                             floats({1, 2})))
                .find("not supported"),
            std::string::npos);
  EXPECT_NE(errorOf(npyBytes(good, floats({1, 2}), 4)).find("version 4.0"), std::string::npos);
  // A shape whose product would overflow is a size mismatch, not a crash.
  EXPECT_NE(
      errorOf(
          npyBytes(
              "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 16), }\n",
              floats({1})))
          .find("data size mismatch"),
      std::string::npos);
  // Truncated header.
  EXPECT_NE(errorOf(npyBytes(good, "").substr(0, 20)).find("truncated"), std::string::npos);
}
