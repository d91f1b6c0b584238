//===- tests/unit/eval/EvalNormTest.cpp - Softmax, LayerNorm, RMSNorm kernels --===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace onnxc;
using namespace onnxc::test;

TEST(EvalNorm, SoftmaxRowsSumToOne) {
  Tensor x = Tensor::fromVector<float>({2, 3}, {1, 2, 3, 1000, 1000, -1000});
  Tensor y = runOp(OpKind::Softmax, {x});
  std::vector<float> v = values<float>(y);
  EXPECT_NEAR(v[0] + v[1] + v[2], 1.0f, 1e-6);
  EXPECT_NEAR(v[3] + v[4] + v[5], 1.0f, 1e-6);
  double denominator = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  EXPECT_NEAR(v[0], std::exp(1.0) / denominator, 1e-7);
  EXPECT_FLOAT_EQ(v[3], 0.5f); // large values do not overflow
  EXPECT_FLOAT_EQ(v[5], 0.0f);
}

TEST(EvalNorm, SoftmaxAlongAnInnerAxis) {
  Tensor x = Tensor::fromVector<float>({2, 2}, {0, 5, 0, 5});
  std::vector<float> v = values<float>(runOp(OpKind::Softmax, {x}, {{"axis", 0}}));
  EXPECT_EQ(v, (std::vector<float>{0.5f, 0.5f, 0.5f, 0.5f}));
  EXPECT_THROW(runOp(OpKind::Softmax, {x}, {{"axis", 2}}), Error);
}

// An empty axis with rows around it: [2, 0, 3] along axis 1 (the
// jit-differential fuzzer's UBSan report, a row pointer formed from the
// empty tensor's null storage; the sanitizer build runs this test).
TEST(EvalNorm, SoftmaxAlongAnEmptyAxis) {
  Tensor x(DType::F32, {2, 0, 3});
  for (OpKind kind : {OpKind::Softmax, OpKind::LogSoftmax}) {
    Tensor y = runOp(kind, {x}, {{"axis", 1}});
    EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 0, 3}));
  }
}

TEST(EvalNorm, LogSoftmaxMatchesLogOfSoftmax) {
  Tensor x = Tensor::fromVector<double>({3}, {0.5, -1, 2});
  std::vector<double> soft = values<double>(runOp(OpKind::Softmax, {x}));
  std::vector<double> logSoft = values<double>(runOp(OpKind::LogSoftmax, {x}));
  for (size_t i = 0; i < 3; ++i)
    EXPECT_NEAR(logSoft[i], std::log(soft[i]), 1e-12);
}

TEST(EvalNorm, LayerNormAgainstHandComputation) {
  // Rows [1, 2, 3] and [2, 4, 6]: means 2 and 4, variances 2/3 and 8/3.
  Tensor x = Tensor::fromVector<float>({2, 3}, {1, 2, 3, 2, 4, 6});
  Tensor scale = Tensor::fromVector<float>({3}, {1, 2, 3});
  Tensor bias = Tensor::fromVector<float>({3}, {0, 1, 0});
  std::vector<Tensor> out =
      runOpResults(OpKind::LayerNormalization, {x, scale, bias}, {{"epsilon", 0.0f}}, 3);
  std::vector<float> y = values<float>(out[0]);
  double a = 1 / std::sqrt(2.0 / 3), b = 1 / std::sqrt(8.0 / 3);
  std::vector<double> expected = {-a, 1, 3 * a, -2 * b, 1, 3 * 2 * b};
  for (size_t i = 0; i < 6; ++i)
    EXPECT_NEAR(y[i], expected[i], 1e-6) << i;
  EXPECT_EQ(out[1].dtype(), DType::F32);
  EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<float>(out[1]), (std::vector<float>{2, 4}));
  EXPECT_NEAR(values<float>(out[2])[1], b, 1e-6);
}

TEST(EvalNorm, LayerNormOverTwoAxesWithoutBias) {
  Tensor x = Tensor::fromVector<double>({1, 2, 2}, {1, 3, 1, 3});
  Tensor scale = Tensor::fromVector<double>({2}, {1, 10}); // broadcasts over [2, 2]
  std::vector<Tensor> out =
      runOpResults(OpKind::LayerNormalization, {x, scale}, {{"axis", 1}, {"epsilon", 0.0f}}, 2);
  EXPECT_EQ(values<double>(out[0]), (std::vector<double>{-1, 10, -1, 10}));
  EXPECT_EQ(out[1].dims(), (std::vector<int64_t>{1, 1, 1}));
  Tensor badScale = Tensor::fromVector<double>({3}, {1, 1, 1});
  EXPECT_THROW(runOp(OpKind::LayerNormalization, {x, badScale}), Error);
}

TEST(EvalNorm, RMSNormAgainstHandComputation) {
  // Row [3, 4]: mean of squares 12.5.
  Tensor x = Tensor::fromVector<float>({1, 2}, {3, 4});
  Tensor scale = Tensor::fromVector<float>({2}, {1, 2});
  std::vector<float> y =
      values<float>(runOp(OpKind::RMSNormalization, {x, scale}, {{"epsilon", 0.5f}}));
  EXPECT_NEAR(y[0], 3 / std::sqrt(13.0), 1e-6);
  EXPECT_NEAR(y[1], 8 / std::sqrt(13.0), 1e-6);
}
