//===- tests/unit/frontend/FrontendTensorTest.cpp - TensorProto and file loading ----===//
#include "TestUtil.h"

#include "frontend/OnnxImporter.h"
#include "frontend/TensorProto.h"
#include "ir/DType.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

using namespace onnxc;
using onnxc::test::errorOf;
namespace fs = std::filesystem;

namespace {

/// A fresh folder per test, removed afterwards.
class FrontendTensor : public ::testing::Test {
protected:
  void SetUp() override {
    const auto *info = ::testing::UnitTest::GetInstance()->current_test_info();
    root_ = fs::temp_directory_path() /
            ("onnxc-fe-tensor-" + std::to_string(getpid()) + "-" + info->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "model");
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string modelDir() const { return (root_ / "model").string(); }
  void writeFile(const fs::path &path, const std::string &bytes) {
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }

  fs::path root_;
};

template <typename T> std::string bytesOf(const std::vector<T> &values) {
  return std::string(reinterpret_cast<const char *>(values.data()), values.size() * sizeof(T));
}

onnx::TensorProto makeProto(int dataType, std::vector<int64_t> dims) {
  onnx::TensorProto proto;
  proto.set_name("w");
  proto.set_data_type(dataType);
  for (int64_t d : dims)
    proto.add_dims(d);
  return proto;
}

onnx::TensorProto externalProto(const std::string &location, int64_t offset = -1,
                                int64_t length = -1) {
  onnx::TensorProto proto = makeProto(onnx::TensorProto::FLOAT, {2});
  proto.set_data_location(onnx::TensorProto::EXTERNAL);
  auto *entry = proto.add_external_data();
  entry->set_key("location");
  entry->set_value(location);
  if (offset >= 0) {
    entry = proto.add_external_data();
    entry->set_key("offset");
    entry->set_value(std::to_string(offset));
  }
  if (length >= 0) {
    entry = proto.add_external_data();
    entry->set_key("length");
    entry->set_value(std::to_string(length));
  }
  return proto;
}

} // namespace

TEST_F(FrontendTensor, TypedFields) {
  onnx::TensorProto f32 = makeProto(onnx::TensorProto::FLOAT, {2, 2});
  for (float v : {1.5f, -2.0f, 3.0f, 4.25f})
    f32.add_float_data(v);
  Tensor t = tensorFromProto(f32, modelDir(), "initializer 'w'");
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.dims(), (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(t.data<float>()[3], 4.25f);

  onnx::TensorProto i64 = makeProto(onnx::TensorProto::INT64, {3});
  for (int64_t v : {int64_t(-1), int64_t(1) << 40, int64_t(7)})
    i64.add_int64_data(v);
  EXPECT_EQ(tensorFromProto(i64, modelDir(), "c").toInt64Vector(),
            (std::vector<int64_t>{-1, int64_t(1) << 40, 7}));

  onnx::TensorProto f64 = makeProto(onnx::TensorProto::DOUBLE, {1});
  f64.add_double_data(0.125);
  EXPECT_EQ(tensorFromProto(f64, modelDir(), "c").data<double>()[0], 0.125);

  onnx::TensorProto i8 = makeProto(onnx::TensorProto::INT8, {2});
  i8.add_int32_data(-5);
  i8.add_int32_data(100);
  Tensor ti8 = tensorFromProto(i8, modelDir(), "c");
  EXPECT_EQ(ti8.dtype(), DType::I8);
  EXPECT_EQ(ti8.data<int8_t>()[0], -5);

  onnx::TensorProto boolProto = makeProto(onnx::TensorProto::BOOL, {3});
  for (int v : {0, 1, 5})
    boolProto.add_int32_data(v);
  Tensor tb = tensorFromProto(boolProto, modelDir(), "c");
  EXPECT_EQ(tb.dtype(), DType::Bool);
  EXPECT_EQ(tb.data<uint8_t>()[2], 1);

  // f16 and bf16 keep their bits in the low half of int32_data.
  onnx::TensorProto f16 = makeProto(onnx::TensorProto::FLOAT16, {1});
  f16.add_int32_data(0x3c00);
  EXPECT_EQ(tensorFromProto(f16, modelDir(), "c").elementAsDouble(0), 1.0);
  onnx::TensorProto bf16 = makeProto(onnx::TensorProto::BFLOAT16, {1});
  bf16.add_int32_data(0xc000);
  EXPECT_EQ(tensorFromProto(bf16, modelDir(), "c").elementAsDouble(0), -2.0);

  onnx::TensorProto u16 = makeProto(onnx::TensorProto::UINT16, {1});
  u16.add_int32_data(65535);
  EXPECT_EQ(tensorFromProto(u16, modelDir(), "c").data<uint16_t>()[0], 65535);

  onnx::TensorProto u32 = makeProto(onnx::TensorProto::UINT32, {1});
  u32.add_uint64_data(4000000000u);
  EXPECT_EQ(tensorFromProto(u32, modelDir(), "c").data<uint32_t>()[0], 4000000000u);
  onnx::TensorProto u64 = makeProto(onnx::TensorProto::UINT64, {1});
  u64.add_uint64_data(uint64_t(1) << 63);
  EXPECT_EQ(tensorFromProto(u64, modelDir(), "c").data<uint64_t>()[0], uint64_t(1) << 63);

  // A scalar with one element, and an empty tensor with no data at all.
  onnx::TensorProto scalar = makeProto(onnx::TensorProto::INT32, {});
  scalar.add_int32_data(42);
  EXPECT_EQ(tensorFromProto(scalar, modelDir(), "c").data<int32_t>()[0], 42);
  EXPECT_EQ(
      tensorFromProto(makeProto(onnx::TensorProto::FLOAT, {0, 3}), modelDir(), "c").numElements(),
      0);
}

TEST_F(FrontendTensor, RawData) {
  onnx::TensorProto f32 = makeProto(onnx::TensorProto::FLOAT, {3});
  f32.set_raw_data(bytesOf<float>({1.0f, 2.0f, -3.5f}));
  EXPECT_EQ(tensorFromProto(f32, modelDir(), "c").data<float>()[2], -3.5f);

  onnx::TensorProto i64 = makeProto(onnx::TensorProto::INT64, {2});
  i64.set_raw_data(bytesOf<int64_t>({-9, 9}));
  EXPECT_EQ(tensorFromProto(i64, modelDir(), "c").toInt64Vector(), (std::vector<int64_t>{-9, 9}));

  onnx::TensorProto f16 = makeProto(onnx::TensorProto::FLOAT16, {2});
  f16.set_raw_data(bytesOf<uint16_t>({0x3c00, 0x4000}));
  EXPECT_EQ(tensorFromProto(f16, modelDir(), "c").elementAsDouble(1), 2.0);

  onnx::TensorProto boolProto = makeProto(onnx::TensorProto::BOOL, {2});
  boolProto.set_raw_data(bytesOf<uint8_t>({0, 7}));
  EXPECT_EQ(tensorFromProto(boolProto, modelDir(), "c").data<uint8_t>()[1], 1);
}

TEST_F(FrontendTensor, WrongSizesAndDims) {
  onnx::TensorProto raw = makeProto(onnx::TensorProto::FLOAT, {4});
  raw.set_raw_data(bytesOf<float>({1.0f, 2.0f}));
  std::string message = errorOf([&] { tensorFromProto(raw, modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("initializer 'w': raw_data has 8 bytes"), std::string::npos) << message;

  onnx::TensorProto typed = makeProto(onnx::TensorProto::INT64, {3});
  typed.add_int64_data(1);
  message = errorOf([&] { tensorFromProto(typed, modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("int64_data holds 1 elements but the dims give 3"), std::string::npos)
      << message;

  message = errorOf([&] {
    tensorFromProto(makeProto(onnx::TensorProto::FLOAT, {2, -1}), modelDir(), "initializer 'w'");
  });
  EXPECT_EQ(message, "initializer 'w': negative dimension -1");
  message = errorOf([&] {
    tensorFromProto(makeProto(onnx::TensorProto::FLOAT, {1 << 30, 1 << 30, 4}), modelDir(),
                    "initializer 'w'");
  });
  EXPECT_NE(message.find("more than 2^40 elements"), std::string::npos) << message;
}

TEST_F(FrontendTensor, UnsupportedDTypes) {
  EXPECT_EQ(errorOf([&] { tensorFromProto(makeProto(8, {1}), modelDir(), "initializer 's'"); }),
            "initializer 's': unsupported dtype string");
  EXPECT_EQ(errorOf([&] { tensorFromProto(makeProto(14, {1}), modelDir(), "initializer 'c'"); }),
            "initializer 'c': unsupported dtype complex64");
  EXPECT_EQ(errorOf([&] { tensorFromProto(makeProto(17, {1}), modelDir(), "initializer 'f'"); }),
            "initializer 'f': unsupported dtype float8e4m3fn");
  EXPECT_EQ(errorOf([&] { tensorFromProto(makeProto(0, {1}), modelDir(), "initializer 'u'"); }),
            "initializer 'u': no data type given");
}

// ONNX's INT4 and UINT4 codes, newer than the onnx headers onnxc builds against.
constexpr int kInt4 = 22, kUint4 = 21;

TEST_F(FrontendTensor, FourBitTypesArePackedTwoAByte) {
  // Five int4 values in three bytes, low nibble first, the last high nibble unused.
  onnx::TensorProto i4 = makeProto(kInt4, {5});
  i4.set_raw_data(std::string("\x70\x8f\x01", 3)); // 0, 7, -1, -8, 1
  Tensor t = tensorFromProto(i4, modelDir(), "initializer 'w'");
  EXPECT_EQ(t.typeString(), "i4[5]");
  EXPECT_EQ(t.toInt64Vector(), (std::vector<int64_t>{0, 7, -1, -8, 1}));
  // int32_data holds one packed byte per entry.
  onnx::TensorProto u4 = makeProto(kUint4, {2, 2});
  u4.add_int32_data(0xf1);
  u4.add_int32_data(0x29);
  t = tensorFromProto(u4, modelDir(), "initializer 'u'");
  EXPECT_EQ(t.typeString(), "u4[2, 2]");
  EXPECT_EQ(t.toInt64Vector(), (std::vector<int64_t>{1, 15, 9, 2}));
  onnx::TensorProto shortData = makeProto(kInt4, {5});
  shortData.set_raw_data(std::string("\x70\x8f", 2));
  EXPECT_EQ(errorOf([&] { tensorFromProto(shortData, modelDir(), "initializer 's'"); }),
            "initializer 's': raw_data has 2 bytes but i4[5 elements] needs 3 (two elements a "
            "byte)");
}

TEST_F(FrontendTensor, ExternalDataInsideFolder) {
  fs::create_directories(root_ / "model" / "weights");
  writeFile(root_ / "model" / "weights" / "w.bin",
            "XXXX" + bytesOf<float>({0.5f, -0.25f}) + "tail");
  Tensor t = tensorFromProto(externalProto("weights/w.bin", 4, 8), modelDir(), "initializer 'w'");
  EXPECT_EQ(t.data<float>()[0], 0.5f);
  EXPECT_EQ(t.data<float>()[1], -0.25f);
  // Without a length the dims decide how much to read.
  writeFile(root_ / "model" / "plain.bin", bytesOf<float>({3.0f, 4.0f}));
  EXPECT_EQ(tensorFromProto(externalProto("plain.bin"), modelDir(), "c").data<float>()[1], 4.0f);
  // A `..` that comes back into the folder is harmless.
  EXPECT_EQ(
      tensorFromProto(externalProto("weights/../plain.bin"), modelDir(), "c").data<float>()[0],
      3.0f);
}

TEST_F(FrontendTensor, ExternalDataEscapingFolder) {
  writeFile(root_ / "x", bytesOf<float>({1.0f, 2.0f}));
  EXPECT_EQ(errorOf([&] { tensorFromProto(externalProto("../x"), modelDir(), "initializer 'w'"); }),
            "initializer 'w': external data path '../x' escapes the model folder");
  std::string absolute = (root_ / "x").string();
  std::string message =
      errorOf([&] { tensorFromProto(externalProto(absolute), modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("is absolute"), std::string::npos) << message;
  fs::create_symlink(root_ / "x", root_ / "model" / "link.bin");
  EXPECT_EQ(
      errorOf([&] { tensorFromProto(externalProto("link.bin"), modelDir(), "initializer 'w'"); }),
      "initializer 'w': external data path 'link.bin' escapes the model folder");
  fs::create_directory_symlink(root_, root_ / "model" / "up");
  EXPECT_NE(errorOf([&] {
              tensorFromProto(externalProto("up/x"), modelDir(), "initializer 'w'");
            }).find("escapes the model folder"),
            std::string::npos);
}

TEST_F(FrontendTensor, ExternalDataBadRanges) {
  writeFile(root_ / "model" / "w.bin", bytesOf<float>({1.0f, 2.0f}));
  std::string message =
      errorOf([&] { tensorFromProto(externalProto("w.bin", 4), modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("past the end of 'w.bin' (8 bytes)"), std::string::npos) << message;
  message = errorOf(
      [&] { tensorFromProto(externalProto("w.bin", 100, 8), modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("past the end"), std::string::npos) << message;
  // An offset near 2^64: offset + length wraps, and the message once printed
  // the wrapped range "[18446744073709551615, 15)".
  onnx::TensorProto wrapping = externalProto("w.bin", 0, 8);
  for (auto &entry : *wrapping.mutable_external_data())
    if (entry.key() == "offset")
      entry.set_value("18446744073709551615");
  message = errorOf([&] { tensorFromProto(wrapping, modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("at offset 18446744073709551615 of length 8 is past the end of 'w.bin'"),
            std::string::npos)
      << message;
  message = errorOf(
      [&] { tensorFromProto(externalProto("w.bin", 0, 4), modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("length 4 does not match the 8 bytes"), std::string::npos) << message;
  // Two locations: which file? (The external-data fuzzer found the harness
  // and the reader taking different ones.)
  onnx::TensorProto twice = externalProto("w.bin");
  auto *second = twice.add_external_data();
  second->set_key("location");
  second->set_value("other.bin");
  EXPECT_EQ(errorOf([&] { tensorFromProto(twice, modelDir(), "initializer 'w'"); }),
            "initializer 'w': external data key 'location' is given twice");
  message = errorOf(
      [&] { tensorFromProto(externalProto("missing.bin"), modelDir(), "initializer 'w'"); });
  EXPECT_NE(message.find("does not exist"), std::string::npos) << message;
}

TEST_F(FrontendTensor, ExternalDataMustBeOneRegularFileInsideTheFolder) {
  // A hard link inside the folder is the outside file under another name:
  // every path check passes, so the opened file's link count decides.
  writeFile(root_ / "secret.bin", bytesOf<float>({1.0f, 2.0f}));
  fs::create_hard_link(root_ / "secret.bin", root_ / "model" / "linked.bin");
  std::string message =
      errorOf([&] { tensorFromProto(externalProto("linked.bin"), modelDir(), "initializer 'w'"); });
  EXPECT_EQ(message, "initializer 'w': external data file 'linked.bin' has 2 hard links, so it "
                     "may live outside the model folder; copy it into the folder");

  // A FIFO would block a plain open until a writer comes; it must be
  // refused at once. A directory is no data file either.
  ASSERT_EQ(mkfifo((root_ / "model" / "pipe.bin").c_str(), 0600), 0);
  EXPECT_EQ(
      errorOf([&] { tensorFromProto(externalProto("pipe.bin"), modelDir(), "initializer 'w'"); }),
      "initializer 'w': external data file 'pipe.bin' is not a regular file");
  fs::create_directory(root_ / "model" / "folder.bin");
  EXPECT_EQ(
      errorOf([&] { tensorFromProto(externalProto("folder.bin"), modelDir(), "initializer 'w'"); }),
      "initializer 'w': external data file 'folder.bin' is not a regular file");

  // A symlink that stays inside the folder still reads (its target has one
  // name, inside).
  writeFile(root_ / "model" / "real.bin", bytesOf<float>({5.0f, 6.0f}));
  fs::create_symlink("real.bin", root_ / "model" / "alias.bin");
  EXPECT_EQ(tensorFromProto(externalProto("alias.bin"), modelDir(), "c").data<float>()[1], 6.0f);
}

TEST_F(FrontendTensor, UnreadableModelFiles) {
  std::string missing = (root_ / "nope.onnx").string();
  EXPECT_EQ(errorOf([&] { importOnnxFile(missing); }), missing + ": no such file");

  std::string garbage = (root_ / "garbage.onnx").string();
  writeFile(garbage, std::string("\xff\xff\xff\xff\x0f garbage \x01\x02", 17));
  EXPECT_EQ(errorOf([&] { importOnnxFile(garbage); }),
            garbage + ": not a valid ONNX model (protobuf parse failed)");

  // A real model cut in the middle of its initializer's raw_data.
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  onnx::TensorProto *w = model.mutable_graph()->add_initializer();
  *w = makeProto(onnx::TensorProto::FLOAT, {64});
  w->set_raw_data(std::string(256, '\1'));
  std::string bytes = model.SerializeAsString();
  std::string truncated = (root_ / "truncated.onnx").string();
  writeFile(truncated, bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(errorOf([&] { importOnnxFile(truncated); }),
            truncated + ": not a valid ONNX model (protobuf parse failed)");

  std::string empty = (root_ / "empty.onnx").string();
  writeFile(empty, "");
  EXPECT_NE(errorOf([&] { importOnnxFile(empty); }).find("not a valid ONNX model"),
            std::string::npos);
}

TEST_F(FrontendTensor, SparseTensorsBecomeDense) {
  onnx::SparseTensorProto sparse;
  sparse.add_dims(2);
  sparse.add_dims(3);
  *sparse.mutable_values() = makeProto(onnx::TensorProto::FLOAT, {2});
  sparse.mutable_values()->add_float_data(5.0f);
  sparse.mutable_values()->add_float_data(-1.0f);
  // Coordinates [[0, 1], [1, 2]].
  *sparse.mutable_indices() = makeProto(onnx::TensorProto::INT64, {2, 2});
  for (int64_t i : {0, 1, 1, 2})
    sparse.mutable_indices()->add_int64_data(i);
  Tensor dense = tensorFromSparseProto(sparse, modelDir(), "constant 'c'");
  ASSERT_EQ(dense.dims(), (std::vector<int64_t>{2, 3}));
  const float *d = dense.data<float>();
  EXPECT_EQ(std::vector<float>(d, d + 6), (std::vector<float>{0, 5, 0, 0, 0, -1}));

  // Linear indices give the same tensor.
  *sparse.mutable_indices() = makeProto(onnx::TensorProto::INT64, {2});
  sparse.mutable_indices()->add_int64_data(1);
  sparse.mutable_indices()->add_int64_data(5);
  EXPECT_TRUE(tensorFromSparseProto(sparse, modelDir(), "c").identicalTo(dense));

  sparse.mutable_indices()->set_int64_data(1, 6);
  EXPECT_NE(errorOf([&] {
              tensorFromSparseProto(sparse, modelDir(), "constant 'c'");
            }).find("constant 'c': sparse index 6 out of range"),
            std::string::npos);
}
