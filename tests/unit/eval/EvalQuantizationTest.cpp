//===- tests/unit/eval/EvalQuantizationTest.cpp - Quantization reference kernels -===//
//
// Hand-computed cases for the ONNX semantics the node tests leave thin:
// halves rounding to even, saturation at both ends, NaN, per-axis scales,
// DynamicQuantizeLinear's range adjusted to include 0, per-row/per-column
// zero points of MatMulInteger, and QLinearMatMul saturating where the ONNX
// reference's test data wraps.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

Tensor floats(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromVector<float>(std::move(dims), v);
}

} // namespace

TEST(EvalQuantizeLinear, RoundsHalfToEvenAndSaturates) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = floats({8}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, 300.0f, -300.0f, nan});
  Tensor one = Tensor::scalar<float>(1.0f);
  Tensor i8 = runOp(OpKind::QuantizeLinear, {x, one, Tensor::scalar<int8_t>(0)});
  EXPECT_EQ(values<int8_t>(i8), (std::vector<int8_t>{0, 2, 2, 0, -2, 127, -128, 0}));
  // No zero point: u8, which clips the negatives to 0.
  Tensor u8 = runOp(OpKind::QuantizeLinear, {x, one});
  EXPECT_EQ(u8.dtype(), DType::U8);
  EXPECT_EQ(values<uint8_t>(u8), (std::vector<uint8_t>{0, 2, 2, 0, 0, 255, 0, 0}));
  // output_dtype picks i16 without a zero point.
  Tensor i16 = runOp(OpKind::QuantizeLinear, {x, one}, {{"output_dtype", 5}});
  EXPECT_EQ(values<int16_t>(i16), (std::vector<int16_t>{0, 2, 2, 0, -2, 300, -300, 0}));
}

TEST(EvalQuantizeLinear, PerAxisScaleAndZeroPoint) {
  Tensor x = floats({2, 2}, {1, 2, 3, 4});
  Tensor scale = floats({2}, {0.5f, 0.25f});
  Tensor zero = Tensor::fromVector<int8_t>({2}, {1, -1});
  // Axis 1: column 0 uses (0.5, 1), column 1 (0.25, -1).
  EXPECT_EQ(values<int8_t>(runOp(OpKind::QuantizeLinear, {x, scale, zero}, {{"axis", 1}})),
            (std::vector<int8_t>{3, 7, 7, 15}));
  // Axis 0: row 0 uses (0.5, 1), row 1 (0.25, -1).
  Tensor q = runOp(OpKind::QuantizeLinear, {x, scale, zero}, {{"axis", 0}});
  EXPECT_EQ(values<int8_t>(q), (std::vector<int8_t>{3, 5, 11, 15}));
  Tensor back = runOp(OpKind::DequantizeLinear, {q, scale, zero}, {{"axis", 0}});
  EXPECT_EQ(values<float>(back), (std::vector<float>{1, 2, 3, 4}));
}

TEST(EvalDequantizeLinear, Int32BiasAndMismatchedZeroPoint) {
  Tensor bias = Tensor::fromVector<int32_t>({3}, {-7, 0, 1000});
  EXPECT_EQ(values<float>(runOp(OpKind::DequantizeLinear, {bias, Tensor::scalar<float>(0.5f)})),
            (std::vector<float>{-3.5f, 0.0f, 500.0f}));
  Tensor q = Tensor::fromVector<int8_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  std::string error = errorOf([&] {
    runOp(OpKind::DequantizeLinear,
          {q, floats({3}, {1, 1, 1}), Tensor::fromVector<int8_t>({2}, {0, 0})});
  });
  EXPECT_NE(error.find("does not match the scale's shape"), std::string::npos) << error;
}

TEST(EvalDynamicQuantizeLinear, RangeIncludesZero) {
  // All positive: the range is [0, 3], zero point 0.
  std::vector<Tensor> r =
      runOpResults(OpKind::DynamicQuantizeLinear, {floats({3}, {1, 2, 3})}, {}, 3);
  EXPECT_FLOAT_EQ(r[1].data<float>()[0], 3.0f / 255.0f);
  EXPECT_EQ(r[2].data<uint8_t>()[0], 0);
  EXPECT_EQ(values<uint8_t>(r[0]), (std::vector<uint8_t>{85, 170, 255}));
  // All negative: the range is [-2, 0], zero point 255; -1 / (2/255) is
  // -127.49999 in float (not -127.5), so y = -127 + 255 (as the ONNX
  // reference gives).
  r = runOpResults(OpKind::DynamicQuantizeLinear, {floats({2}, {-1, -2})}, {}, 3);
  EXPECT_EQ(r[2].data<uint8_t>()[0], 255);
  EXPECT_EQ(values<uint8_t>(r[0]), (std::vector<uint8_t>{128, 0}));
  // All zero: scale 1/255 rather than a division by zero.
  r = runOpResults(OpKind::DynamicQuantizeLinear, {floats({2}, {0, 0})}, {}, 3);
  EXPECT_FLOAT_EQ(r[1].data<float>()[0], 1.0f / 255.0f);
  EXPECT_EQ(values<uint8_t>(r[0]), (std::vector<uint8_t>{0, 0}));
}

TEST(EvalMatMulInteger, PerRowAndPerColumnZeroPoints) {
  Tensor a = Tensor::fromVector<uint8_t>({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::fromVector<uint8_t>({2, 2}, {5, 6, 7, 8});
  Tensor aZero = Tensor::fromVector<uint8_t>({2}, {1, 2});
  Tensor bZero = Tensor::fromVector<uint8_t>({2}, {5, 6});
  // (A - [1, 2] per row) = [[0, 1], [1, 2]]; (B - [5, 6] per column) =
  // [[0, 0], [2, 2]].
  Tensor y = runOp(OpKind::MatMulInteger, {a, b, aZero, bZero});
  EXPECT_EQ(y.dtype(), DType::I32);
  EXPECT_EQ(values<int32_t>(y), (std::vector<int32_t>{2, 2, 4, 4}));
}

TEST(EvalQLinearMatMul, SaturatesOutOfRangeResults) {
  Tensor a = Tensor::fromVector<int8_t>({1, 2}, {100, -100});
  Tensor b = Tensor::fromVector<int8_t>({2, 2}, {100, -100, 1, 1});
  Tensor one = Tensor::scalar<float>(1.0f), zero = Tensor::scalar<int8_t>(0);
  // Sums 9900 and -10100 saturate to 127 and -128 (the ONNX reference wraps).
  Tensor y = runOp(OpKind::QLinearMatMul, {a, one, zero, b, one, zero, one, zero});
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{127, -128}));
  // Requantized: scale 1/100, rint(99.0) and rint(-101.0).
  Tensor small = Tensor::scalar<float>(100.0f);
  y = runOp(OpKind::QLinearMatMul, {a, one, zero, b, one, zero, small, zero});
  EXPECT_EQ(values<int8_t>(y), (std::vector<int8_t>{99, -101}));
}
