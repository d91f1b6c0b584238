//===- tests/unit/eval/EvalBlockedQuantizationTest.cpp - Blocked Q/DQ and 4-bit values -===//
//
// Hand-computed cases for opset 21's blocked quantization (a scale per block
// of `block_size` along `axis`, the last block short) and the i4/u4 dtypes:
// saturation to their range, Cast keeping the low 4 bits, and the shape
// rule's and guard's refusals.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

Tensor floats(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromVector<float>(std::move(dims), v);
}

/// An i4 or u4 tensor from small integers.
Tensor fourBit(DType type, std::vector<int64_t> dims, const std::vector<int> &v) {
  Tensor t(type, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i)
    t.setElementFromDouble(int64_t(i), v[i]);
  return t;
}

std::vector<int64_t> asInts(const Tensor &t) { return t.toInt64Vector(); }

} // namespace

TEST(EvalBlockedQuantization, DequantizeShortLastBlockAlongEitherAxis) {
  // x [2, 5] in blocks of 2 along axis 1: blocks [0, 1], [2, 3], [4].
  Tensor x = Tensor::fromVector<uint8_t>({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor scale = floats({2, 3}, {1, 2, 4, 0.5f, 0.25f, 10});
  Tensor zero = Tensor::fromVector<uint8_t>({2, 3}, {1, 0, 5, 0, 8, 9});
  Tensor y = runOp(OpKind::DequantizeLinear, {x, scale, zero}, {{"axis", 1}, {"block_size", 2}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{0, 1, 6, 8, 0, 3, 3.5f, 0, 0.25f, 10}));
  // The same data [5, 2] blocked along axis 0: rows [0, 1], [2, 3], [4].
  Tensor xt = x.reshaped({5, 2});
  Tensor scale0 = floats({3, 2}, {1, 2, 4, 0.5f, 0.25f, 10});
  Tensor y0 = runOp(OpKind::DequantizeLinear, {xt, scale0}, {{"axis", 0}, {"block_size", 2}});
  EXPECT_EQ(values<float>(y0), (std::vector<float>{1, 4, 3, 8, 20, 3, 28, 4, 2.25f, 100}));
}

TEST(EvalBlockedQuantization, MiddleAxisOfThree) {
  // x [2, 3, 2], blocks of 2 along axis 1: scale [2, 2, 2].
  Tensor x = Tensor::fromVector<int8_t>({2, 3, 2}, {1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2});
  Tensor scale = floats({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y = runOp(OpKind::DequantizeLinear, {x, scale}, {{"axis", 1}, {"block_size", 2}});
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, 1, 2, 3, 4, 10, 12, 10, 12, 14, 16}));
}

TEST(EvalBlockedQuantization, FourBitQuantizeSaturates) {
  Tensor x = floats({1, 4}, {-100, -8.5f, 7.5f, 100});
  Tensor one = floats({1, 2}, {1, 1});
  Tensor i4 = runOp(OpKind::QuantizeLinear, {x, one, fourBit(DType::I4, {1, 2}, {0, 0})},
                    {{"axis", 1}, {"block_size", 2}});
  EXPECT_EQ(i4.dtype(), DType::I4);
  EXPECT_EQ(asInts(i4), (std::vector<int64_t>{-8, -8, 7, 7}));
  Tensor u4 = runOp(OpKind::QuantizeLinear, {x, one},
                    {{"axis", 1}, {"block_size", 2}, {"output_dtype", 21}});
  EXPECT_EQ(u4.dtype(), DType::U4);
  EXPECT_EQ(asInts(u4), (std::vector<int64_t>{0, 0, 8, 15}));
  // Per tensor, an i4 zero point shifts before the clamp.
  Tensor shifted =
      runOp(OpKind::QuantizeLinear,
            {floats({3}, {2, 5, -20}), Tensor::scalar<float>(1.0f), fourBit(DType::I4, {}, {3})});
  EXPECT_EQ(asInts(shifted), (std::vector<int64_t>{5, 7, -8}));
  Tensor back = runOp(OpKind::DequantizeLinear,
                      {shifted, Tensor::scalar<float>(0.5f), fourBit(DType::I4, {}, {3})});
  EXPECT_EQ(values<float>(back), (std::vector<float>{1, 2, -5.5f}));
}

TEST(EvalBlockedQuantization, CastToFourBitsKeepsTheLowBits) {
  Tensor x = floats({6}, {-9, 8, 15, 7.9f, -1, 300});
  // Truncated to an integer, then its low 4 bits: 300 = 0x12c -> 0xc.
  EXPECT_EQ(asInts(runOp(OpKind::Cast, {x}, {{"to", 22}})),
            (std::vector<int64_t>{7, -8, -1, 7, -1, -4}));
  EXPECT_EQ(asInts(runOp(OpKind::Cast, {x}, {{"to", 21}})),
            (std::vector<int64_t>{7, 8, 15, 7, 15, 12}));
  Tensor i4 = fourBit(DType::I4, {3}, {-8, 7, -1});
  EXPECT_EQ(values<float>(runOp(OpKind::Cast, {i4}, {{"to", 1}})), (std::vector<float>{-8, 7, -1}));
  EXPECT_EQ(values<int8_t>(runOp(OpKind::Cast, {i4}, {{"to", 3}})),
            (std::vector<int8_t>{-8, 7, -1}));
}

TEST(EvalBlockedQuantization, BlockedScaleMustCoverX) {
  Tensor x = Tensor::fromVector<uint8_t>({2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  std::string error = errorOf([&] {
    runOp(OpKind::DequantizeLinear, {x, floats({2, 3}, {1, 1, 1, 1, 1, 1})},
          {{"axis", 1}, {"block_size", 2}});
  });
  EXPECT_NE(error.find("blocked scale f32[2, 3] does not match x [2, 4] in blocks of 2 along "
                       "axis 1"),
            std::string::npos)
      << error;
  error = errorOf([&] {
    runOp(OpKind::DequantizeLinear, {x, floats({2, 2}, {1, 1, 1, 1})},
          {{"axis", 1}, {"block_size", -1}});
  });
  EXPECT_NE(error.find("block_size -1 is negative"), std::string::npos) << error;
}

TEST(EvalBlockedQuantization, OnlyDataMovementCastAndQdqTakeFourBits) {
  Tensor i4 = fourBit(DType::I4, {2}, {1, 2});
  // The kernels refuse it too (shape inference refuses it first: tests/ir/quantization).
  std::string error = errorOf([&] { runOp(OpKind::Add, {i4, i4}); });
  EXPECT_NE(error.find("op Add does not support i4"), std::string::npos) << error;
  // Data movement keeps the values and the type.
  Tensor t = runOp(OpKind::Transpose, {fourBit(DType::U4, {2, 2}, {1, 2, 15, 0})},
                   {{"perm", std::vector<int64_t>{1, 0}}});
  EXPECT_EQ(t.dtype(), DType::U4);
  EXPECT_EQ(asInts(t), (std::vector<int64_t>{1, 15, 2, 0}));
}
