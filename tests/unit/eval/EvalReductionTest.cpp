//===- tests/unit/eval/EvalReductionTest.cpp - Reduce*, ArgMax, CumSum kernels -===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

Tensor axes(std::vector<int64_t> v) {
  int64_t n = int64_t(v.size());
  return Tensor::fromVector<int64_t>({n}, v);
}

// [[1, 2, 3], [4, 5, 6]]
Tensor matrix() { return Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}); }

} // namespace

TEST(EvalReduction, KeepDimsAndNegativeAxes) {
  Tensor kept = runOp(OpKind::ReduceSum, {matrix(), axes({-1})});
  EXPECT_EQ(kept.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<float>(kept), (std::vector<float>{6, 15}));
  Tensor dropped = runOp(OpKind::ReduceSum, {matrix(), axes({0})}, {{"keepdims", 0}});
  EXPECT_EQ(dropped.dims(), (std::vector<int64_t>{3}));
  EXPECT_EQ(values<float>(dropped), (std::vector<float>{5, 7, 9}));
}

TEST(EvalReduction, EmptyAxesReduceAllOrNothing) {
  Tensor all = runOp(OpKind::ReduceMean, {matrix()}, {{"keepdims", 0}});
  EXPECT_EQ(all.dims(), std::vector<int64_t>{});
  EXPECT_EQ(values<float>(all), (std::vector<float>{3.5f}));
  Tensor allKept = runOp(OpKind::ReduceMax, {matrix(), axes({})});
  EXPECT_EQ(allKept.dims(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(values<float>(allKept), (std::vector<float>{6}));
  Tensor noop = runOp(OpKind::ReduceSum, {matrix(), axes({})}, {{"noop_with_empty_axes", 1}});
  EXPECT_EQ(noop.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(noop), values<float>(matrix()));
}

TEST(EvalReduction, EveryKind) {
  Tensor x = matrix();
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceProd, {x, axes({1})})), (std::vector<float>{6, 120}));
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceMin, {x, axes({0})})), (std::vector<float>{1, 2, 3}));
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceMean, {x, axes({1})})), (std::vector<float>{2, 5}));
  Tensor ints = Tensor::fromVector<int64_t>({2, 2}, {7, 2, -3, 1});
  EXPECT_EQ(values<int64_t>(runOp(OpKind::ReduceSum, {ints, axes({0, 1})})),
            (std::vector<int64_t>{7}));
  EXPECT_EQ(values<int64_t>(runOp(OpKind::ReduceMean, {ints, axes({1})})),
            (std::vector<int64_t>{4, -1}));
  EXPECT_EQ(values<int64_t>(runOp(OpKind::ReduceMax, {ints, axes({1})})),
            (std::vector<int64_t>{7, 1}));
}

TEST(EvalReduction, ReductionOfEmptySets) {
  Tensor empty(DType::F32, {0, 2});
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceSum, {empty, axes({0})})),
            (std::vector<float>{0, 0}));
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceProd, {empty, axes({0})})),
            (std::vector<float>{1, 1}));
  EXPECT_TRUE(std::isinf(values<float>(runOp(OpKind::ReduceMax, {empty, axes({0})}))[0]));
}

TEST(EvalReduction, EmptyIntegerMaxMinAreTheTypesExtremes) {
  // ONNX: the lowest / highest value of the element type, not of the wider
  // accumulator (whose extremes would wrap to 0 and -1).
  Tensor i32(DType::I32, {0, 2});
  EXPECT_EQ(values<int32_t>(runOp(OpKind::ReduceMax, {i32, axes({0})})),
            (std::vector<int32_t>(2, std::numeric_limits<int32_t>::lowest())));
  EXPECT_EQ(values<int32_t>(runOp(OpKind::ReduceMin, {i32, axes({0})})),
            (std::vector<int32_t>(2, std::numeric_limits<int32_t>::max())));
  Tensor u8(DType::U8, {3, 0});
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::ReduceMax, {u8, axes({1})})),
            (std::vector<uint8_t>(3, 0)));
  EXPECT_EQ(values<uint8_t>(runOp(OpKind::ReduceMin, {u8, axes({1})})),
            (std::vector<uint8_t>(3, 255)));
  Tensor i8(DType::I8, {0});
  EXPECT_EQ(values<int8_t>(runOp(OpKind::ReduceMax, {i8}, {{"keepdims", 0}})),
            (std::vector<int8_t>{-128}));
}

TEST(EvalReduction, NormsSumSquareAndLogSumExp) {
  Tensor x = Tensor::fromVector<float>({2, 3}, {1, -2, 2, -3, 0, 4});
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceL1, {x, axes({1})})), (std::vector<float>{5, 7}));
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceL2, {x, axes({1})})), (std::vector<float>{3, 5}));
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceSumSquare, {x, axes({0})})),
            (std::vector<float>{10, 4, 20}));
  std::vector<float> lse = values<float>(runOp(OpKind::ReduceLogSumExp, {x, axes({1})}));
  EXPECT_FLOAT_EQ(lse[0], float(std::log(std::exp(1.0) + std::exp(-2.0) + std::exp(2.0))));
  EXPECT_FLOAT_EQ(lse[1], float(std::log(std::exp(-3.0) + 1 + std::exp(4.0))));
  // The maximum is taken out first: exp(1000) would overflow even double.
  Tensor large = Tensor::fromVector<double>({2}, {1000, 1000});
  EXPECT_DOUBLE_EQ(values<double>(runOp(OpKind::ReduceLogSumExp, {large}))[0],
                   1000 + std::log(2.0));
  // Integers: L2 rounds toward zero, sums of squares wrap as ReduceSum does.
  Tensor ints = Tensor::fromVector<int32_t>({3}, {3, -4, 1});
  EXPECT_EQ(values<int32_t>(runOp(OpKind::ReduceL2, {ints})), (std::vector<int32_t>{5}));
  EXPECT_EQ(values<int32_t>(runOp(OpKind::ReduceL1, {ints})), (std::vector<int32_t>{8}));
  Tensor bytes = Tensor::fromVector<int8_t>({2}, {12, 12});
  EXPECT_EQ(values<int8_t>(runOp(OpKind::ReduceSumSquare, {bytes})),
            (std::vector<int8_t>{int8_t(288 - 256)}));
  EXPECT_EQ(values<int8_t>(runOp(OpKind::ReduceL2, {bytes})), (std::vector<int8_t>{16}));
}

TEST(EvalReduction, NormsOfEmptySetsAndInfinities) {
  Tensor empty(DType::F32, {0, 2});
  for (OpKind kind : {OpKind::ReduceL1, OpKind::ReduceL2, OpKind::ReduceSumSquare})
    EXPECT_EQ(values<float>(runOp(kind, {empty, axes({0})})), (std::vector<float>{0, 0}));
  float inf = std::numeric_limits<float>::infinity();
  std::vector<float> lse = values<float>(runOp(OpKind::ReduceLogSumExp, {empty, axes({0})}));
  EXPECT_EQ(lse, (std::vector<float>{-inf, -inf}));
  Tensor infinite = Tensor::fromVector<float>({2, 2}, {-inf, -inf, inf, 1});
  EXPECT_EQ(values<float>(runOp(OpKind::ReduceLogSumExp, {infinite, axes({1})})),
            (std::vector<float>{-inf, inf}));
  // noop_with_empty_axes returns the input as it is, for these kinds too.
  Tensor x = Tensor::fromVector<float>({2}, {-1, 2});
  EXPECT_EQ(
      values<float>(runOp(OpKind::ReduceSumSquare, {x, axes({})}, {{"noop_with_empty_axes", 1}})),
      (std::vector<float>{-1, 2}));
}

TEST(EvalReduction, BadAxesAreErrors) {
  EXPECT_THROW(runOp(OpKind::ReduceSum, {matrix(), axes({2})}), Error);
  EXPECT_THROW(runOp(OpKind::ReduceSum, {matrix(), axes({1, -1})}), Error);
  EXPECT_THROW(runOp(OpKind::ReduceSum, {matrix(), matrix()}), Error);
}

TEST(EvalReduction, ArgMaxArgMin) {
  Tensor x = Tensor::fromVector<float>({2, 3}, {1, 9, 9, 4, 0, 4});
  Tensor first = runOp(OpKind::ArgMax, {x}, {{"axis", 1}});
  EXPECT_EQ(first.dtype(), DType::I64);
  EXPECT_EQ(first.dims(), (std::vector<int64_t>{2, 1}));
  EXPECT_EQ(values<int64_t>(first), (std::vector<int64_t>{1, 0}));
  Tensor last =
      runOp(OpKind::ArgMax, {x}, {{"axis", -1}, {"select_last_index", 1}, {"keepdims", 0}});
  EXPECT_EQ(last.dims(), (std::vector<int64_t>{2}));
  EXPECT_EQ(values<int64_t>(last), (std::vector<int64_t>{2, 2}));
  Tensor minimum = runOp(OpKind::ArgMin, {x}, {{"axis", 0}, {"keepdims", 0}});
  EXPECT_EQ(values<int64_t>(minimum), (std::vector<int64_t>{0, 1, 1}));
  EXPECT_THROW(runOp(OpKind::ArgMax, {x}, {{"axis", 2}}), Error);
}

TEST(EvalReduction, CumProdVariants) {
  Tensor x = Tensor::fromVector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axis = Tensor::scalar<int32_t>(1);
  EXPECT_EQ(values<double>(runOp(OpKind::CumProd, {x, axis})),
            (std::vector<double>{1, 2, 6, 4, 20, 120}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumProd, {x, axis}, {{"exclusive", 1}})),
            (std::vector<double>{1, 1, 2, 1, 4, 20}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumProd, {x, axis}, {{"reverse", 1}})),
            (std::vector<double>{6, 6, 3, 120, 30, 6}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumProd, {x, axis}, {{"reverse", 1}, {"exclusive", 1}})),
            (std::vector<double>{6, 3, 1, 30, 6, 1}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumProd, {x, Tensor::scalar<int64_t>(0)})),
            (std::vector<double>{1, 2, 3, 4, 10, 18}));
  EXPECT_THROW(runOp(OpKind::CumProd, {x, Tensor::scalar<int64_t>(-3)}), Error);
}

TEST(EvalReduction, CumSumVariants) {
  Tensor x = Tensor::fromVector<double>({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor axis = Tensor::scalar<int32_t>(1);
  EXPECT_EQ(values<double>(runOp(OpKind::CumSum, {x, axis})),
            (std::vector<double>{1, 3, 6, 4, 9, 15}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumSum, {x, axis}, {{"exclusive", 1}})),
            (std::vector<double>{0, 1, 3, 0, 4, 9}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumSum, {x, axis}, {{"reverse", 1}})),
            (std::vector<double>{6, 5, 3, 15, 11, 6}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumSum, {x, axis}, {{"reverse", 1}, {"exclusive", 1}})),
            (std::vector<double>{5, 3, 0, 11, 6, 0}));
  EXPECT_EQ(values<double>(runOp(OpKind::CumSum, {x, Tensor::fromVector<int64_t>({1}, {-2})})),
            (std::vector<double>{1, 2, 3, 5, 7, 9}));
  EXPECT_THROW(runOp(OpKind::CumSum, {x, Tensor::scalar<int64_t>(2)}), Error);
}
