//===- tests/unit/eval/EvalScatterGatherTest.cpp - GatherElements, ScatterND ---===//
//
// Small hand-computed cases through the evaluator: the examples of the ONNX
// operator docs, negative indices, duplicate ScatterND rows, every
// reduction, and the errors (index out of range, shapes that do not fit).
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

Tensor ints(std::vector<int64_t> dims, std::vector<int64_t> v) {
  return Tensor::fromVector<int64_t>(std::move(dims), v);
}
Tensor floats(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromVector<float>(std::move(dims), v);
}
/// 0, 1, 2, ... as f32 of the given dims.
Tensor iota(std::vector<int64_t> dims) {
  Tensor t(DType::F32, std::move(dims));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = float(i);
  return t;
}

AttributeMap reduction(const std::string &name) { return {{"reduction", name}}; }

} // namespace

TEST(EvalGatherElements, AlongEachAxis) {
  // ONNX doc: data [[1, 2], [3, 4]], indices [[0, 0], [1, 0]].
  Tensor data = floats({2, 2}, {1, 2, 3, 4});
  Tensor indices = ints({2, 2}, {0, 0, 1, 0});
  EXPECT_EQ(values<float>(runOp(OpKind::GatherElements, {data, indices}, {{"axis", 1}})),
            (std::vector<float>{1, 1, 4, 3}));
  EXPECT_EQ(values<float>(runOp(OpKind::GatherElements, {data, indices}, {{"axis", 0}})),
            (std::vector<float>{1, 2, 3, 2}));
}

TEST(EvalGatherElements, SmallerIndicesAndNegativeValues) {
  // data 3x3 (0..8), indices 2x3 along axis 0 with negatives: the result has
  // the indices' shape and reads data[index][j].
  Tensor data = iota({3, 3});
  Tensor indices = ints({2, 3}, {-1, 0, 2, 1, -3, -2});
  Tensor y = runOp(OpKind::GatherElements, {data, indices}, {{"axis", 0}});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values<float>(y), (std::vector<float>{6, 1, 8, 3, 1, 5}));
  // Rank 3, middle axis, int32 indices narrower than the data off the axis.
  Tensor cube = iota({2, 3, 4});
  Tensor i32 = Tensor::fromVector<int32_t>({2, 1, 2}, {2, 0, -1, 1});
  Tensor z = runOp(OpKind::GatherElements, {cube, i32}, {{"axis", -2}});
  EXPECT_EQ(z.dims(), (std::vector<int64_t>{2, 1, 2}));
  // [0][2][0]=8, [0][0][1]=1, [1][2][0]=20, [1][1][1]=17
  EXPECT_EQ(values<float>(z), (std::vector<float>{8, 1, 20, 17}));
}

TEST(EvalGatherElements, EmptyIndices) {
  Tensor y = runOp(OpKind::GatherElements, {iota({2, 3}), ints({2, 0}, {})}, {{"axis", 1}});
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 0}));
}

TEST(EvalGatherElements, BadIndicesNameTheIndex) {
  Tensor data = iota({2, 3});
  EXPECT_EQ(errorOf([&] {
              runOp(OpKind::GatherElements, {data, ints({2, 2}, {0, 1, 3, 0})}, {{"axis", 1}});
            }),
            "node 'n': index 3 (element 2 of the indices) is out of range for axis 1 of size 3");
  EXPECT_EQ(errorOf([&] {
              runOp(OpKind::GatherElements, {data, ints({1, 1}, {-3})}, {{"axis", 0}});
            }),
            "node 'n': index -3 (element 0 of the indices) is out of range for axis 0 of size 2");
  EXPECT_NE(errorOf([&] { runOp(OpKind::GatherElements, {data, ints({2}, {0, 1})}); }), "");
  EXPECT_NE(errorOf([&] {
              runOp(OpKind::GatherElements, {data, ints({3, 1}, {0, 0, 0})}, {{"axis", 1}});
            }),
            "");
}

TEST(EvalScatterND, ElementsAndSlices) {
  // ONNX doc example 1: data [1..8], indices [[4], [3], [1], [7]].
  Tensor data = floats({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor y =
      runOp(OpKind::ScatterND, {data, ints({4, 1}, {4, 3, 1, 7}), floats({4}, {9, 10, 11, 12})});
  EXPECT_EQ(values<float>(y), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  // Slices: rows of a 3x4 matrix replaced, one by a negative index.
  Tensor matrix = iota({3, 4});
  Tensor rows = runOp(OpKind::ScatterND, {matrix, ints({2, 1}, {-1, 0}),
                                          floats({2, 4}, {-1, -2, -3, -4, -5, -6, -7, -8})});
  EXPECT_EQ(values<float>(rows), (std::vector<float>{-5, -6, -7, -8, 4, 5, 6, 7, -1, -2, -3, -4}));
  // Full coordinates with batched indices [2, 1, 2]: updates [2, 1].
  Tensor points = runOp(OpKind::ScatterND,
                        {matrix, ints({2, 1, 2}, {1, 2, 2, -1}), floats({2, 1}, {100, 200})});
  EXPECT_EQ(values<float>(points), (std::vector<float>{0, 1, 2, 3, 4, 5, 100, 7, 8, 9, 10, 200}));
}

TEST(EvalScatterND, DuplicateRowsApplyInOrder) {
  // reduction none: the last row wins (onnxruntime's order).
  Tensor data = floats({4}, {1, 1, 1, 1});
  Tensor indices = ints({3, 1}, {2, 0, 2});
  Tensor updates = floats({3}, {5, 6, 7});
  EXPECT_EQ(values<float>(runOp(OpKind::ScatterND, {data, indices, updates})),
            (std::vector<float>{6, 1, 7, 1}));
  EXPECT_EQ(values<float>(runOp(OpKind::ScatterND, {data, indices, updates}, reduction("add"))),
            (std::vector<float>{7, 1, 13, 1}));
  EXPECT_EQ(values<float>(runOp(OpKind::ScatterND, {data, indices, updates}, reduction("mul"))),
            (std::vector<float>{6, 1, 35, 1}));
  Tensor mixed = floats({3}, {5, -6, 0});
  EXPECT_EQ(values<float>(runOp(OpKind::ScatterND, {data, indices, mixed}, reduction("max"))),
            (std::vector<float>{1, 1, 5, 1}));
  EXPECT_EQ(values<float>(runOp(OpKind::ScatterND, {data, indices, mixed}, reduction("min"))),
            (std::vector<float>{-6, 1, 0, 1}));
}

TEST(EvalScatterND, IntegerReductionsWrapAndNaNWinsMaxMin) {
  Tensor data = Tensor::fromVector<int8_t>({2}, {100, -100});
  Tensor indices = ints({2, 1}, {0, 1});
  Tensor updates = Tensor::fromVector<int8_t>({2}, {100, -100});
  EXPECT_EQ(values<int8_t>(runOp(OpKind::ScatterND, {data, indices, updates}, reduction("add"))),
            (std::vector<int8_t>{-56, 56}));
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor y = runOp(OpKind::ScatterND, {floats({2}, {nan, 1}), indices, floats({2}, {3, nan})},
                   reduction("max"));
  EXPECT_TRUE(std::isnan(values<float>(y)[0]));
  EXPECT_TRUE(std::isnan(values<float>(y)[1]));
}

TEST(EvalScatterND, BadInputIsAnError) {
  Tensor data = iota({2, 3});
  EXPECT_EQ(errorOf([&] {
              runOp(OpKind::ScatterND, {data, ints({2, 2}, {0, 0, 1, 3}), floats({2}, {1, 2})});
            }),
            "node 'n': index 3 (row 1 of the indices, position 1) is out of range for axis 1 of "
            "size 3");
  EXPECT_EQ(errorOf([&] {
              runOp(OpKind::ScatterND, {data, ints({1, 1}, {-3}), floats({1, 3}, {1, 2, 3})});
            }),
            "node 'n': index -3 (row 0 of the indices, position 0) is out of range for axis 0 of "
            "size 2");
  EXPECT_EQ(errorOf([&] {
              runOp(OpKind::ScatterND, {data, ints({1, 1}, {0}), floats({1, 2}, {1, 2})});
            }),
            "node 'n': updates are [1, 2] but must be [1, 3] (indices[:-1] + data[1:])");
  EXPECT_NE(errorOf([&] {
              runOp(OpKind::ScatterND, {data, ints({1, 3}, {0, 0, 0}), floats({1}, {1})});
            }),
            "");
  EXPECT_NE(errorOf([&] {
              runOp(OpKind::ScatterND, {data, ints({1, 1}, {0}), floats({1, 3}, {1, 2, 3})},
                    reduction("sum"));
            }),
            "");
}
