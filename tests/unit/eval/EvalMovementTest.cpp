//===- tests/unit/eval/EvalMovementTest.cpp - Reference kernels for data movement -===//
//
// Small hand-computed cases, calling the kernels straight from their table.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <climits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

/// Owns a one-node graph whose operands are graph inputs typed like the
/// given tensors (undefined = absent), and runs the node's kernel on those
/// tensors.
class KernelRunner {
public:
  KernelRunner(OpKind kind, std::vector<Tensor> operands, AttributeMap attrs = {},
               unsigned results = 1)
      : operands_(std::move(operands)) {
    node_ = makeNode(graph_, kind, operandPointers(), results);
    for (auto &[name, value] : attrs)
      node_->setAttr(name, value);
  }

  std::vector<Tensor> run() const { return runKernel(*node_, operandPointers()); }

private:
  std::vector<const Tensor *> operandPointers() const {
    std::vector<const Tensor *> pointers;
    for (const Tensor &t : operands_)
      pointers.push_back(t.isDefined() ? &t : nullptr);
    return pointers;
  }

  Graph graph_;
  Node *node_;
  std::vector<Tensor> operands_;
};

Tensor ints(std::vector<int64_t> dims, std::vector<int64_t> values) {
  return Tensor::fromVector<int64_t>(std::move(dims), values);
}
Tensor ints1(std::vector<int64_t> values) {
  int64_t n = int64_t(values.size());
  return ints({n}, std::move(values));
}
Tensor floats(std::vector<int64_t> dims, std::vector<float> values) {
  return Tensor::fromVector<float>(std::move(dims), values);
}
/// 0, 1, 2, ... as f32 of the given dims.
Tensor iota(std::vector<int64_t> dims) {
  Tensor t(DType::F32, std::move(dims));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = float(i);
  return t;
}

using V = std::vector<double>;
using D = std::vector<int64_t>;

TEST(EvalMovement, ReshapeZeroMinusOneAndAllowZero) {
  Tensor x = iota({2, 3, 4});
  Tensor r = KernelRunner(OpKind::Reshape, {x, ints1({0, -1})}).run()[0];
  EXPECT_EQ(r.dims(), (D{2, 12}));
  EXPECT_EQ(asDoubles(r), asDoubles(x));
  Tensor empty(DType::F32, {0, 3});
  Tensor z =
      KernelRunner(OpKind::Reshape, {empty, ints1({3, 0})}, {{"allowzero", int64_t(1)}}).run()[0];
  EXPECT_EQ(z.dims(), (D{3, 0}));
  EXPECT_THROW(KernelRunner(OpKind::Reshape, {x, ints1({5, -1})}).run(), Error);
  EXPECT_THROW(KernelRunner(OpKind::Reshape, {x, ints1({-1, -1})}).run(), Error);
}

TEST(EvalMovement, TransposeAnyDType) {
  Tensor x = iota({2, 3});
  Tensor t = KernelRunner(OpKind::Transpose, {x}).run()[0];
  EXPECT_EQ(t.dims(), (D{3, 2}));
  EXPECT_EQ(asDoubles(t), (V{0, 3, 1, 4, 2, 5}));
  Tensor bytes = Tensor::fromVector<int8_t>({1, 2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor u = KernelRunner(OpKind::Transpose, {bytes}, {{"perm", D{2, 0, 1}}}).run()[0];
  EXPECT_EQ(u.dims(), (D{3, 1, 2}));
  EXPECT_EQ(asDoubles(u), (V{1, 4, 2, 5, 3, 6}));
  EXPECT_THROW(KernelRunner(OpKind::Transpose, {x}, {{"perm", D{0, 0}}}).run(), Error);
}

TEST(EvalMovement, ConcatOnInnerAxis) {
  Tensor c =
      KernelRunner(OpKind::Concat, {iota({2, 1}), iota({2, 2})}, {{"axis", int64_t(-1)}}).run()[0];
  EXPECT_EQ(c.dims(), (D{2, 3}));
  EXPECT_EQ(asDoubles(c), (V{0, 0, 1, 1, 2, 3}));
  EXPECT_THROW(
      KernelRunner(OpKind::Concat, {iota({2, 1}), iota({3, 1})}, {{"axis", int64_t(1)}}).run(),
      Error);
}

TEST(EvalMovement, SplitAllForms) {
  Tensor x = iota({2, 7});
  auto sizes = KernelRunner(OpKind::Split, {x, ints1({2, 5})}, {{"axis", int64_t(1)}}, 2).run();
  EXPECT_EQ(sizes[0].dims(), (D{2, 2}));
  EXPECT_EQ(asDoubles(sizes[0]), (V{0, 1, 7, 8}));
  EXPECT_EQ(asDoubles(sizes[1]), (V{2, 3, 4, 5, 6, 9, 10, 11, 12, 13}));
  auto chunks =
      KernelRunner(OpKind::Split, {x}, {{"axis", int64_t(1)}, {"num_outputs", int64_t(3)}}, 3)
          .run();
  EXPECT_EQ(chunks[0].dims(), (D{2, 3}));
  EXPECT_EQ(chunks[2].dims(), (D{2, 1}));
  EXPECT_EQ(asDoubles(chunks[2]), (V{6, 13}));
  auto halves = KernelRunner(OpKind::Split, {x}, {}, 2).run();
  EXPECT_EQ(asDoubles(halves[1]), (V{7, 8, 9, 10, 11, 12, 13}));
  EXPECT_THROW(KernelRunner(OpKind::Split, {x, ints1({2, 2})}, {{"axis", int64_t(1)}}, 2).run(),
               Error);
}

TEST(EvalMovement, SliceNegativeStepsAndClamping) {
  Tensor x = iota({10});
  auto slice = [&](std::vector<int64_t> s, std::vector<int64_t> e, std::vector<int64_t> st) {
    return asDoubles(
        KernelRunner(OpKind::Slice, {x, ints1(s), ints1(e), ints1({0}), ints1(st)}).run()[0]);
  };
  EXPECT_EQ(slice({-1}, {-11}, {-2}), (V{9, 7, 5, 3, 1}));
  EXPECT_EQ(slice({20}, {0}, {-3}), (V{9, 6, 3}));
  EXPECT_EQ(slice({-1}, {INT64_MIN}, {-1}), (V{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(slice({2}, {INT64_MAX}, {3}), (V{2, 5, 8}));
  EXPECT_EQ(slice({5}, {2}, {1}), V{});
  Tensor m = iota({3, 4});
  // Default axes and steps; negative axis.
  Tensor a = KernelRunner(OpKind::Slice, {m, ints1({1, 1}), ints1({3, -1})}).run()[0];
  EXPECT_EQ(a.dims(), (D{2, 2}));
  EXPECT_EQ(asDoubles(a), (V{5, 6, 9, 10}));
  Tensor b =
      KernelRunner(OpKind::Slice, {m, ints1({-1}), ints1({-5}), ints1({-1}), ints1({-2})}).run()[0];
  EXPECT_EQ(asDoubles(b), (V{3, 1, 7, 5, 11, 9}));
  EXPECT_THROW(slice({0}, {5}, {0}), Error);
}

TEST(EvalMovement, GatherNegativeIndicesAndRange) {
  Tensor x = iota({3, 2});
  Tensor rows = KernelRunner(OpKind::Gather, {x, ints1({-1, 0})}).run()[0];
  EXPECT_EQ(rows.dims(), (D{2, 2}));
  EXPECT_EQ(asDoubles(rows), (V{4, 5, 0, 1}));
  Tensor cols =
      KernelRunner(OpKind::Gather, {x, ints({1, 1}, {-1})}, {{"axis", int64_t(1)}}).run()[0];
  EXPECT_EQ(cols.dims(), (D{3, 1, 1}));
  EXPECT_EQ(asDoubles(cols), (V{1, 3, 5}));
  Tensor scalar = KernelRunner(OpKind::Gather, {ints1({7, 8, 9}), ints({}, {1})}).run()[0];
  EXPECT_EQ(scalar.rank(), 0u);
  EXPECT_EQ(asDoubles(scalar), (V{8}));
  try {
    KernelRunner(OpKind::Gather, {x, ints1({3})}).run();
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "node 'n': index 3 is out of range for axis 0 of size 3");
  }
}

TEST(EvalMovement, SqueezeUnsqueezeFlatten) {
  Tensor x = iota({1, 3, 1});
  EXPECT_EQ(KernelRunner(OpKind::Squeeze, {x}).run()[0].dims(), (D{3}));
  EXPECT_EQ(KernelRunner(OpKind::Squeeze, {x, ints1({-1})}).run()[0].dims(), (D{1, 3}));
  EXPECT_THROW(KernelRunner(OpKind::Squeeze, {x, ints1({1})}).run(), Error);
  EXPECT_EQ(KernelRunner(OpKind::Unsqueeze, {x, ints1({0, -1})}).run()[0].dims(),
            (D{1, 1, 3, 1, 1}));
  EXPECT_EQ(KernelRunner(OpKind::Flatten, {iota({2, 3, 4})}).run()[0].dims(), (D{2, 12}));
  EXPECT_EQ(
      KernelRunner(OpKind::Flatten, {iota({2, 3, 4})}, {{"axis", int64_t(0)}}).run()[0].dims(),
      (D{1, 24}));
  EXPECT_EQ(
      KernelRunner(OpKind::Flatten, {iota({2, 3, 4})}, {{"axis", int64_t(-1)}}).run()[0].dims(),
      (D{6, 4}));
}

TEST(EvalMovement, ExpandAndTile) {
  Tensor x = floats({3, 1}, {1, 2, 3});
  Tensor e = KernelRunner(OpKind::Expand, {x, ints1({2, 1, 2})}).run()[0];
  EXPECT_EQ(e.dims(), (D{2, 3, 2}));
  EXPECT_EQ(asDoubles(e), (V{1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3}));
  EXPECT_THROW(KernelRunner(OpKind::Expand, {x, ints1({2, 2})}).run(), Error);
  Tensor t = KernelRunner(OpKind::Tile, {iota({2, 2}), ints1({1, 2})}).run()[0];
  EXPECT_EQ(t.dims(), (D{2, 4}));
  EXPECT_EQ(asDoubles(t), (V{0, 1, 0, 1, 2, 3, 2, 3}));
}

TEST(EvalMovement, ShapeSizeRangeConstantOfShape) {
  Tensor x = iota({2, 3, 4, 5});
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Shape, {x}).run()[0]), (V{2, 3, 4, 5}));
  Tensor middle =
      KernelRunner(OpKind::Shape, {x}, {{"start", int64_t(-3)}, {"end", int64_t(-1)}}).run()[0];
  EXPECT_EQ(asDoubles(middle), (V{3, 4}));
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Shape, {x}, {{"start", int64_t(10)}}).run()[0]), V{});
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Size, {x}).run()[0]), (V{120}));
  Tensor r = KernelRunner(OpKind::Range, {ints({}, {10}), ints({}, {4}), ints({}, {-3})}).run()[0];
  EXPECT_EQ(r.dtype(), DType::I64);
  EXPECT_EQ(asDoubles(r), (V{10, 7}));
  Tensor f = KernelRunner(OpKind::Range,
                          {Tensor::scalar(1.0f), Tensor::scalar(2.0f), Tensor::scalar(0.25f)})
                 .run()[0];
  EXPECT_EQ(asDoubles(f), (V{1, 1.25, 1.5, 1.75}));
  Tensor c = KernelRunner(OpKind::ConstantOfShape, {ints1({2, 2})},
                          {{"value", Tensor::fromVector<int32_t>({1}, {7})}})
                 .run()[0];
  EXPECT_EQ(c.dtype(), DType::I32);
  EXPECT_EQ(asDoubles(c), (V{7, 7, 7, 7}));
  Tensor zero = KernelRunner(OpKind::ConstantOfShape, {ints1({})}).run()[0];
  EXPECT_EQ(zero.dtype(), DType::F32);
  EXPECT_EQ(zero.rank(), 0u);
}

TEST(EvalMovement, ConstantIdentityDropout) {
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Constant, {}, {{"value_ints", D{4, 5}}}).run()[0]),
            (V{4, 5}));
  Tensor x = iota({2, 2});
  auto out = KernelRunner(OpKind::Dropout, {x}, {}, 2).run();
  EXPECT_EQ(asDoubles(out[0]), asDoubles(x));
  EXPECT_EQ(out[1].dtype(), DType::Bool);
  EXPECT_EQ(asDoubles(out[1]), (V{1, 1, 1, 1}));
  try {
    KernelRunner(OpKind::Dropout, {x, Tensor::scalar(0.5f), Tensor::boolScalar(true)}).run();
    FAIL() << "expected an error";
  } catch (const Error &e) {
    EXPECT_STREQ(e.what(), "node 'n': training-mode dropout is not supported");
  }
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Identity, {x}).run()[0]), asDoubles(x));
}

TEST(EvalMovement, TriluWithK) {
  Tensor x = floats({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Trilu, {x}).run()[0]),
            (V{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12}));
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Trilu, {x, ints({}, {1})}).run()[0]),
            (V{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12}));
  EXPECT_EQ(
      asDoubles(KernelRunner(OpKind::Trilu, {x, ints({}, {-1})}, {{"upper", int64_t(0)}}).run()[0]),
      (V{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0}));
  Tensor batched = iota({2, 2, 2});
  EXPECT_EQ(asDoubles(KernelRunner(OpKind::Trilu, {batched}, {{"upper", int64_t(0)}}).run()[0]),
            (V{0, 0, 2, 3, 4, 0, 6, 7}));
}

} // namespace
