//===- tests/unit/eval/EvalVisionTest.cpp - Pad, pool, Resize, ConvTranspose ---===//
//
// Small hand-computed cases of the reference kernels (the node tests and
// tests/models/test_vision_ops.py compare them with ONNX's data and
// onnxruntime at larger sizes), and the refusals they share with the shape
// rules.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

/// Runs a one-node graph's kernel on the given tensors (undefined = absent).
std::vector<double> runOne(OpKind kind, std::vector<Tensor> operands, AttributeMap attrs = {},
                           std::vector<int64_t> *dims = nullptr) {
  Graph graph;
  std::vector<const Tensor *> pointers;
  for (const Tensor &t : operands)
    pointers.push_back(t.isDefined() ? &t : nullptr);
  Node *node = makeNode(graph, kind, pointers);
  for (auto &[name, value] : attrs)
    node->setAttr(name, value);
  Tensor result = runKernel(*node, pointers)[0];
  if (dims)
    *dims = result.dims();
  return asDoubles(result);
}

Tensor ints1(std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return Tensor::fromVector<int64_t>({n}, values);
}
Tensor floats(std::vector<int64_t> dims, std::vector<float> values) {
  return Tensor::fromVector<float>(std::move(dims), values);
}

using V = std::vector<double>;
using D = std::vector<int64_t>;

TEST(EvalPad, ModesOnOneAxis) {
  Tensor x = floats({3}, {1, 2, 3});
  Tensor pads = ints1({2, 3});
  EXPECT_EQ(runOne(OpKind::Pad, {x, pads}, {{"mode", std::string("reflect")}}),
            (V{3, 2, 1, 2, 3, 2, 1, 2}));
  EXPECT_EQ(runOne(OpKind::Pad, {x, pads}, {{"mode", std::string("edge")}}),
            (V{1, 1, 1, 2, 3, 3, 3, 3}));
  EXPECT_EQ(runOne(OpKind::Pad, {x, pads}, {{"mode", std::string("wrap")}}),
            (V{2, 3, 1, 2, 3, 1, 2, 3}));
  EXPECT_EQ(runOne(OpKind::Pad, {x, pads, floats({}, {9})}), (V{9, 9, 1, 2, 3, 9, 9, 9}));
  // Negative pads crop.
  EXPECT_EQ(runOne(OpKind::Pad, {x, ints1({-1, 1})}), (V{2, 3, 0}));
}

TEST(EvalPad, AxesOperandAndErrors) {
  Tensor x = floats({2, 2}, {1, 2, 3, 4});
  D dims;
  EXPECT_EQ(runOne(OpKind::Pad, {x, ints1({1, 0}), Tensor(), ints1({-1})}, {}, &dims),
            (V{0, 1, 2, 0, 3, 4}));
  EXPECT_EQ(dims, (D{2, 3}));
  EXPECT_THROW(runOne(OpKind::Pad, {x, ints1({1, 0, 0})}), Error);
  EXPECT_THROW(runOne(OpKind::Pad, {x, ints1({0, -3, 0, 0})}), Error);
  EXPECT_THROW(runOne(OpKind::Pad, {x, ints1({1, 1})}, {{"mode", std::string("mirror")}}), Error);
}

TEST(EvalPool, PadsCountIncludePadAndCeilMode) {
  Tensor x = floats({1, 1, 1, 5}, {1, 5, 2, 4, 6});
  // A leading pad: windows [-1, 0], [1, 2], [3, 4].
  AttributeMap padded = {{"kernel_shape", std::vector<int64_t>{1, 2}},
                         {"strides", std::vector<int64_t>{1, 2}},
                         {"pads", std::vector<int64_t>{0, 1, 0, 0}}};
  EXPECT_EQ(runOne(OpKind::MaxPool, {x}, padded), (V{1, 5, 6}));
  EXPECT_EQ(runOne(OpKind::AveragePool, {x}, padded), (V{1, 3.5, 5}));
  padded.insert_or_assign("count_include_pad", Attribute(int64_t(1)));
  EXPECT_EQ(runOne(OpKind::AveragePool, {x}, padded), (V{0.5, 3.5, 5}));
  // ceil_mode adds the window [4, 6), whose overhang is no pad and never counts.
  AttributeMap ceil = {{"kernel_shape", std::vector<int64_t>{1, 2}},
                       {"strides", std::vector<int64_t>{1, 2}},
                       {"ceil_mode", int64_t(1)},
                       {"count_include_pad", int64_t(1)}};
  D dims;
  EXPECT_EQ(runOne(OpKind::AveragePool, {x}, ceil, &dims), (V{3, 3, 6}));
  EXPECT_EQ(dims, (D{1, 1, 1, 3}));
  // A window that would start past the input and its pads is dropped:
  // width 4, end pad 1, ceil(3 / 2) + 1 = 3 windows less the one at 4.
  Tensor four = floats({1, 1, 1, 4}, {1, 5, 2, 4});
  ceil.insert_or_assign("pads", Attribute(std::vector<int64_t>{0, 0, 0, 1}));
  EXPECT_EQ(runOne(OpKind::MaxPool, {four}, ceil, &dims), (V{5, 4}));
  EXPECT_EQ(dims, (D{1, 1, 1, 2}));
}

TEST(EvalPool, RefusesAMissingKernelAndCeilWithSame) {
  Tensor x = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  EXPECT_THROW(runOne(OpKind::MaxPool, {x}), Error);
  EXPECT_THROW(runOne(OpKind::AveragePool, {x}, {{"kernel_shape", std::vector<int64_t>{3, 3}}}),
               Error); // window larger than the input
}

TEST(EvalConvTranspose, ScattersWithStrideAndCrops) {
  // 1-D: x = [1, 2], w = [1, 10, 100], stride 2: full output
  // [1, 10, 102, 20, 200]; pads [1, 1] crop it to [10, 102, 20].
  Tensor x = floats({1, 1, 2}, {1, 2});
  Tensor w = floats({1, 1, 3}, {1, 10, 100});
  AttributeMap attrs = {{"strides", std::vector<int64_t>{2}}};
  EXPECT_EQ(runOne(OpKind::ConvTranspose, {x, w}, attrs), (V{1, 10, 102, 20, 200}));
  attrs.insert_or_assign("pads", Attribute(std::vector<int64_t>{1, 1}));
  EXPECT_EQ(runOne(OpKind::ConvTranspose, {x, w, floats({1}, {0.5})}, attrs),
            (V{10.5, 102.5, 20.5}));
  // output_shape one past the full size: the extra element is the bias only.
  AttributeMap longer = {{"strides", std::vector<int64_t>{2}},
                         {"output_shape", std::vector<int64_t>{6}}};
  EXPECT_EQ(runOne(OpKind::ConvTranspose, {x, w}, longer), (V{1, 10, 102, 20, 200, 0}));
  AttributeMap badPadding = {{"strides", std::vector<int64_t>{2}},
                             {"output_padding", std::vector<int64_t>{2}}};
  EXPECT_THROW(runOne(OpKind::ConvTranspose, {x, w}, badPadding), Error);
}

TEST(EvalResize, NearestLinearAndCoordinateModes) {
  Tensor x = floats({1, 1, 1, 2}, {1, 3});
  Tensor scales = floats({4}, {1, 1, 1, 2});
  EXPECT_EQ(runOne(OpKind::Resize, {x, Tensor(), scales}), (V{1, 1, 3, 3}));
  // half_pixel: sources -0.25, 0.25, 0.75, 1.25, clamped at the edges.
  EXPECT_EQ(runOne(OpKind::Resize, {x, Tensor(), scales}, {{"mode", std::string("linear")}}),
            (V{1, 1.5, 2.5, 3}));
  AttributeMap corners = {{"mode", std::string("linear")},
                          {"coordinate_transformation_mode", std::string("align_corners")}};
  std::vector<double> aligned = runOne(OpKind::Resize, {x, Tensor(), scales}, corners);
  ASSERT_EQ(aligned.size(), 4u);
  EXPECT_NEAR(aligned[1], 1 + 2.0 / 3, 1e-6);
  // sizes with axes, and the aspect policy picking the smaller ratio.
  Tensor square = floats({1, 1, 2, 2}, {1, 2, 3, 4});
  D dims;
  runOne(OpKind::Resize, {square, Tensor(), Tensor(), ints1({4, 6})},
         {{"axes", std::vector<int64_t>{2, 3}},
          {"keep_aspect_ratio_policy", std::string("not_larger")}},
         &dims);
  EXPECT_EQ(dims, (D{1, 1, 4, 4}));
  // antialias widens a downscale's filter: halving [0, 1, 2, 3] linearly
  // weighs taps at distances 0.5 and 1.5 by 0.75 and 0.25 (then normalized),
  // the edge taps clamped.
  Tensor ramp = floats({4}, {0, 1, 2, 3});
  std::vector<double> smooth = runOne(OpKind::Resize, {ramp, Tensor(), floats({1}, {0.5})},
                                      {{"mode", std::string("linear")}, {"antialias", int64_t(1)}});
  ASSERT_EQ(smooth.size(), 2u);
  EXPECT_NEAR(smooth[0], (0.25 * 0 + 0.75 * 0 + 0.75 * 1 + 0.25 * 2) / 2, 1e-6);
  EXPECT_NEAR(smooth[1], (0.25 * 1 + 0.75 * 2 + 0.75 * 3 + 0.25 * 3) / 2, 1e-6);
  EXPECT_THROW(runOne(OpKind::Resize, {x, Tensor(), scales, ints1({1, 1, 1, 4})}), Error);
}

} // namespace
