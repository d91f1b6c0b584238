//===- tests/unit/eval/EvalElementwiseTest.cpp - Elementwise reference kernels -===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/eval/Evaluator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

Tensor f32(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromVector<float>(std::move(dims), v);
}
Tensor i32(std::vector<int64_t> dims, std::vector<int32_t> v) {
  return Tensor::fromVector<int32_t>(std::move(dims), v);
}
Tensor boolTensor(std::vector<int64_t> dims, std::vector<uint8_t> v) {
  Tensor t(DType::Bool, std::move(dims));
  std::copy(v.begin(), v.end(), t.data<uint8_t>());
  return t;
}
Tensor f16(std::vector<int64_t> dims, std::vector<float> v) {
  Tensor t(DType::F16, std::move(dims));
  for (size_t i = 0; i < v.size(); ++i)
    t.data<uint16_t>()[i] = floatToHalf(v[i]);
  return t;
}

} // namespace

TEST(EvalElementwise, AddBroadcastsBothWays) {
  // [2,1,3] + [4,1] -> [2,4,3]
  Tensor a = f32({2, 1, 3}, {0, 1, 2, 10, 11, 12});
  Tensor b = f32({4, 1}, {100, 200, 300, 400});
  Tensor y = runOp(OpKind::Add, {a, b});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 4, 3}));
  std::vector<float> expected;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        expected.push_back(float(i * 10 + k + (j + 1) * 100));
  EXPECT_EQ(values<float>(y), expected);
}

TEST(EvalElementwise, IncompatibleShapesAreAnError) {
  EXPECT_THROW(runOp(OpKind::Mul, {f32({3}, {1, 2, 3}), f32({4}, {1, 2, 3, 4})}), Error);
  EXPECT_THROW(runOp(OpKind::Add, {f32({1}, {1}), i32({1}, {1})}), Error);
}

TEST(EvalElementwise, ScalarAndEmptyOperands) {
  Tensor y = runOp(OpKind::Sub, {Tensor::scalar<float>(5), f32({2}, {1, 2})});
  EXPECT_EQ(values<float>(y), (std::vector<float>{4, 3}));
  Tensor empty = runOp(OpKind::Add, {f32({0, 3}, {}), f32({3}, {1, 2, 3})});
  EXPECT_EQ(empty.dims(), (std::vector<int64_t>{0, 3}));
}

TEST(EvalElementwise, HalfComputesInFloat) {
  Tensor y = runOp(OpKind::Mul, {f16({3}, {1.5f, -2, 0.25f}), f16({1}, {2})});
  EXPECT_EQ(y.dtype(), DType::F16);
  EXPECT_EQ(asDoubles(y), (std::vector<double>{3, -4, 0.5}));
}

TEST(EvalElementwise, IntegerDivTruncatesAndModFollowsDivisor) {
  Tensor a = i32({4}, {7, -7, 7, -7});
  Tensor b = i32({4}, {2, 2, -2, -2});
  EXPECT_EQ(values<int32_t>(runOp(OpKind::Div, {a, b})), (std::vector<int32_t>{3, -3, -3, 3}));
  EXPECT_EQ(values<int32_t>(runOp(OpKind::Mod, {a, b})), (std::vector<int32_t>{1, 1, -1, -1}));
  EXPECT_EQ(values<int32_t>(runOp(OpKind::Mod, {a, b}, {{"fmod", 1}})),
            (std::vector<int32_t>{1, -1, 1, -1}));
  EXPECT_THROW(runOp(OpKind::Div, {a, i32({1}, {0})}), Error);
  Tensor minimum = i32({1}, {std::numeric_limits<int32_t>::min()});
  EXPECT_EQ(values<int32_t>(runOp(OpKind::Div, {minimum, i32({1}, {-1})}))[0],
            std::numeric_limits<int32_t>::min());
  EXPECT_EQ(values<int32_t>(runOp(OpKind::Mod, {minimum, i32({1}, {-1})}))[0], 0);
}

TEST(EvalElementwise, FloatModFollowsFmod) {
  // fmod = 1: C's fmod (the dividend's sign); fmod = 0, which opset 28 defines on floats:
  // Python's % (the divisor's sign).
  Tensor a = f32({2}, {5.5f, -5.5f});
  Tensor b = f32({2}, {2, 2});
  EXPECT_EQ(values<float>(runOp(OpKind::Mod, {a, b}, {{"fmod", 1}})),
            (std::vector<float>{1.5f, -1.5f}));
  EXPECT_EQ(values<float>(runOp(OpKind::Mod, {a, b})), (std::vector<float>{1.5f, 0.5f}));
}

TEST(EvalElementwise, IntegerArithmeticWraps) {
  Tensor a = Tensor::fromVector<uint8_t>({2}, {250, 3});
  Tensor b = Tensor::fromVector<uint8_t>({2}, {10, 5});
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Add, {a, b})), (std::vector<uint8_t>{4, 8}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Sub, {b, a})), (std::vector<uint8_t>{16, 2}));
}

TEST(EvalElementwise, PowMixesTypes) {
  Tensor y = runOp(OpKind::Pow, {f32({3}, {2, 4, 9}), Tensor::fromVector<int64_t>({1}, {2})});
  EXPECT_EQ(y.dtype(), DType::F32);
  EXPECT_EQ(values<float>(y), (std::vector<float>{4, 16, 81}));
  Tensor r = runOp(OpKind::Pow, {f32({2}, {4, 9}), f32({1}, {0.5f})});
  EXPECT_EQ(values<float>(r), (std::vector<float>{2, 3}));
  Tensor i =
      runOp(OpKind::Pow, {i32({3}, {2, -3, 5}), Tensor::fromVector<int64_t>({3}, {10, 3, -1})});
  EXPECT_EQ(values<int32_t>(i), (std::vector<int32_t>{1024, -27, 0}));
}

TEST(EvalElementwise, VariadicOps) {
  Tensor a = f32({2}, {1, 5});
  Tensor b = f32({2, 1}, {3, 0});
  Tensor c = Tensor::scalar<float>(2);
  EXPECT_EQ(values<float>(runOp(OpKind::Sum, {a, b, c})), (std::vector<float>{6, 10, 3, 7}));
  EXPECT_EQ(values<float>(runOp(OpKind::Max, {a, b, c})), (std::vector<float>{3, 5, 2, 5}));
  EXPECT_EQ(values<float>(runOp(OpKind::Min, {a, b})), (std::vector<float>{1, 3, 0, 0}));
  EXPECT_EQ(values<float>(runOp(OpKind::Mean, {a, f32({2}, {3, 3})})), (std::vector<float>{2, 4}));
  EXPECT_EQ(values<float>(runOp(OpKind::Max, {a})), (std::vector<float>{1, 5}));
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(std::isnan(values<float>(runOp(OpKind::Max, {f32({1}, {nan}), f32({1}, {1})}))[0]));
}

TEST(EvalElementwise, EluIsAlphaTimesExpMinusOneBelowZero) {
  Tensor x = f32({5}, {-30, -1, -1e-6f, 0, 2.5f});
  std::vector<float> y = values<float>(runOp(OpKind::Elu, {x}, {{"alpha", 0.5f}}));
  EXPECT_FLOAT_EQ(y[0], float(0.5 * std::expm1(-30.0)));
  EXPECT_FLOAT_EQ(y[1], float(0.5 * std::expm1(-1.0)));
  // Near 0 the result keeps its relative accuracy (exp(x) - 1 in f32 would not).
  EXPECT_FLOAT_EQ(y[2], float(0.5 * std::expm1(-1e-6)));
  EXPECT_EQ(y[3], 0.0f);
  EXPECT_EQ(y[4], 2.5f);
  // alpha defaults to 1; f16 computes too; integers are not Elu's.
  EXPECT_FLOAT_EQ(values<float>(runOp(OpKind::Elu, {f32({1}, {-2})}))[0], float(std::expm1(-2.0)));
  Tensor half = runOp(OpKind::Cast, {f32({1}, {-1})}, {{"to", 10}}); // ONNX code 10: f16
  EXPECT_NEAR(runOp(OpKind::Elu, {half}).elementAsDouble(0), std::expm1(-1.0), 1e-3);
  EXPECT_THROW(runOp(OpKind::Elu, {i32({1}, {-1})}), Error);
}

TEST(EvalElementwise, UnaryMath) {
  Tensor x = f32({4}, {-2, -0.5f, 0, 1.5f});
  EXPECT_EQ(values<float>(runOp(OpKind::Relu, {x})), (std::vector<float>{0, 0, 0, 1.5f}));
  EXPECT_EQ(values<float>(runOp(OpKind::Abs, {x})), (std::vector<float>{2, 0.5f, 0, 1.5f}));
  EXPECT_EQ(values<float>(runOp(OpKind::Neg, {x})), (std::vector<float>{2, 0.5f, -0.0f, -1.5f}));
  EXPECT_EQ(values<float>(runOp(OpKind::Sign, {x})), (std::vector<float>{-1, -1, 0, 1}));
  EXPECT_EQ(values<float>(runOp(OpKind::Floor, {x})), (std::vector<float>{-2, -1, 0, 1}));
  EXPECT_EQ(values<float>(runOp(OpKind::Ceil, {x})), (std::vector<float>{-2, -0.0f, 0, 2}));
  EXPECT_EQ(values<float>(runOp(OpKind::LeakyRelu, {x}, {{"alpha", 0.5f}})),
            (std::vector<float>{-1, -0.25f, 0, 1.5f}));
  std::vector<float> sigmoid = values<float>(runOp(OpKind::Sigmoid, {f32({3}, {0, 1000, -1000})}));
  EXPECT_EQ(sigmoid, (std::vector<float>{0.5f, 1, 0}));
  EXPECT_FLOAT_EQ(values<float>(runOp(OpKind::Erf, {f32({1}, {0.5f})}))[0], std::erf(0.5f));
  EXPECT_FLOAT_EQ(values<float>(runOp(OpKind::Reciprocal, {f32({1}, {4})}))[0], 0.25f);
  EXPECT_THROW(runOp(OpKind::Sqrt, {i32({1}, {4})}), Error);
  EXPECT_EQ(values<int32_t>(runOp(OpKind::Abs, {i32({2}, {-3, 3})})), (std::vector<int32_t>{3, 3}));
}

TEST(EvalElementwise, GeluBothForms) {
  Tensor x = f32({3}, {-1, 0, 2});
  std::vector<float> exact = values<float>(runOp(OpKind::Gelu, {x}));
  std::vector<float> tanhForm = values<float>(runOp(OpKind::Gelu, {x}, {{"approximate", "tanh"}}));
  for (size_t i = 0; i < 3; ++i) {
    double v = x.data<float>()[i];
    EXPECT_FLOAT_EQ(exact[i], float(0.5 * v * (1 + std::erf(v / std::sqrt(2.0)))));
    EXPECT_FLOAT_EQ(tanhForm[i],
                    float(0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v)))));
  }
  EXPECT_THROW(runOp(OpKind::Gelu, {x}, {{"approximate", "fast"}}), Error);
}

TEST(EvalElementwise, ComparisonsAndLogic) {
  Tensor a = i32({3}, {1, 2, 3});
  Tensor b = i32({1}, {2});
  Tensor less = runOp(OpKind::Less, {a, b});
  EXPECT_EQ(less.dtype(), DType::Bool);
  EXPECT_EQ(values<uint8_t>(less), (std::vector<uint8_t>{1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::GreaterOrEqual, {a, b})),
            (std::vector<uint8_t>{0, 1, 1}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Equal, {a, b})), (std::vector<uint8_t>{0, 1, 0}));
  Tensor p = boolTensor({4}, {0, 0, 1, 1});
  Tensor q = boolTensor({4}, {0, 1, 0, 1});
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::And, {p, q})), (std::vector<uint8_t>{0, 0, 0, 1}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Or, {p, q})), (std::vector<uint8_t>{0, 1, 1, 1}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Xor, {p, q})), (std::vector<uint8_t>{0, 1, 1, 0}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Not, {p})), (std::vector<uint8_t>{1, 1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::Equal, {p, q})), (std::vector<uint8_t>{1, 0, 0, 1}));
  EXPECT_THROW(runOp(OpKind::And, {a, a}), Error);
}

TEST(EvalElementwise, NaNAndInfPredicates) {
  float inf = std::numeric_limits<float>::infinity();
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32({4}, {1, nan, inf, -inf});
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::IsNaN, {x})), (std::vector<uint8_t>{0, 1, 0, 0}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::IsInf, {x})), (std::vector<uint8_t>{0, 0, 1, 1}));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::IsInf, {x}, {{"detect_negative", 0}})),
            (std::vector<uint8_t>{0, 0, 1, 0}));
}

TEST(EvalElementwise, WhereBroadcastsThreeWays) {
  Tensor condition = boolTensor({2, 1}, {1, 0});
  Tensor y = runOp(OpKind::Where, {condition, f32({3}, {1, 2, 3}), Tensor::scalar<float>(-1)});
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 2, 3, -1, -1, -1}));
  EXPECT_THROW(runOp(OpKind::Where, {f32({1}, {1}), f32({1}, {1}), f32({1}, {1})}), Error);
}

TEST(EvalElementwise, ClipWithOptionalBounds) {
  Tensor x = f32({4}, {-5, 0, 5, 10});
  EXPECT_EQ(
      values<float>(runOp(OpKind::Clip, {x, Tensor::scalar<float>(0), Tensor::scalar<float>(6)})),
      (std::vector<float>{0, 0, 5, 6}));
  EXPECT_EQ(values<float>(runOp(OpKind::Clip, {x, std::nullopt, Tensor::scalar<float>(1)})),
            (std::vector<float>{-5, 0, 1, 1}));
  EXPECT_EQ(values<float>(runOp(OpKind::Clip, {x})), values<float>(x));
  EXPECT_THROW(runOp(OpKind::Clip, {x, f32({2}, {0, 1})}), Error);
}

TEST(EvalElementwise, CastEdgeCases) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = f32({6}, {-2.7f, 2.7f, 0, nan, 1e20f, -1e20f});
  Tensor toInt = runOp(OpKind::Cast, {x}, {{"to", 6}});
  EXPECT_EQ(toInt.dtype(), DType::I32);
  EXPECT_EQ(values<int32_t>(toInt),
            (std::vector<int32_t>{-2, 2, 0, 0, 2147483647, -2147483647 - 1}));
  Tensor toBool = runOp(OpKind::Cast, {x}, {{"to", 9}});
  EXPECT_EQ(values<uint8_t>(toBool), (std::vector<uint8_t>{1, 1, 0, 1, 1, 1}));
  Tensor toHalf = runOp(OpKind::Cast, {f32({2}, {1.0f / 3, 70000})}, {{"to", 10}});
  EXPECT_EQ(toHalf.dtype(), DType::F16);
  EXPECT_FLOAT_EQ(float(toHalf.elementAsDouble(0)), halfToFloat(floatToHalf(1.0f / 3)));
  EXPECT_TRUE(std::isinf(toHalf.elementAsDouble(1)));
  Tensor toBf16 = runOp(OpKind::Cast, {toHalf}, {{"to", 16}});
  EXPECT_EQ(toBf16.dtype(), DType::BF16);
  Tensor fromBool = runOp(OpKind::Cast, {boolTensor({2}, {1, 0})}, {{"to", 1}});
  EXPECT_EQ(values<float>(fromBool), (std::vector<float>{1, 0}));
  Tensor narrow = runOp(OpKind::Cast, {i32({2}, {300, -1})}, {{"to", 2}});
  EXPECT_EQ(values<uint8_t>(narrow), (std::vector<uint8_t>{44, 255}));
  Tensor like = runOp(OpKind::CastLike, {i32({1}, {7}), Tensor::scalar<double>(0)});
  EXPECT_EQ(like.dtype(), DType::F64);
  EXPECT_THROW(runOp(OpKind::Cast, {x}, {{"to", 8}}), Error); // string
  EXPECT_THROW(runOp(OpKind::Cast, {x}), Error);
}

TEST(EvalElementwise, MissingKernelAndOperandCountAreErrors) {
  Graph g;
  Value *x = g.addConstant("x", f32({1}, {1}));
  Node *add = g.createNode(OpKind::Add, {x}, 1, "lonely_add");
  Tensor t = f32({1}, {1});
  try {
    evaluateNode(*add, {&t});
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("lonely_add"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(hasReferenceKernel(OpKind::Add));
  EXPECT_TRUE(hasReferenceKernel(OpKind::LayerNormalization));
}
