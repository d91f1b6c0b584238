//===- tests/unit/passes/PassCommonSubexpressionEliminationTest.cpp - cse --------===//
#include "TestUtil.h"

#include "ir/Graph.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

// Two Softmax(x, axis=-1) (merge), a Softmax with another axis (kept),
// Add(a, c) and Add(c, b) (merge: commutative once a and b are one),
// Sub(a, c) and Sub(c, a) (kept), two equal constants feeding two Muls
// (both merge).
std::unique_ptr<Graph> buildGraph() {
  auto g = std::make_unique<Graph>("cse");
  Value *x = g->addInput("x", f32({2, 3}));
  auto softmax = [&](int64_t axis, const char *name) {
    Node *n = g->createNode(OpKind::Softmax, {x}, 1, name, {name});
    n->setAttr("axis", axis);
    return n->result();
  };
  Value *a = softmax(-1, "a");
  Value *b = softmax(-1, "b");
  Value *c = softmax(0, "c");
  Value *ab = g->createNode(OpKind::Add, {a, c}, 1, "", {"ab"})->result();
  Value *ba = g->createNode(OpKind::Add, {c, b}, 1, "", {"ba"})->result();
  Value *d1 = g->createNode(OpKind::Sub, {a, c}, 1, "", {"d1"})->result();
  Value *d2 = g->createNode(OpKind::Sub, {c, a}, 1, "", {"d2"})->result();
  Value *s1 = g->createNode(OpKind::Add, {ab, d1}, 1, "", {"s1"})->result();
  Value *s2 = g->createNode(OpKind::Sub, {ba, d2}, 1, "", {"s2"})->result();
  Value *k1 = g->addConstant("k1", Tensor::fromVector<float>({3}, {1, 2, 3}));
  Value *k2 = g->addConstant("k2", Tensor::fromVector<float>({3}, {1, 2, 3}));
  Value *m1 = g->createNode(OpKind::Mul, {s1, k1}, 1, "", {"m1"})->result();
  Value *m2 = g->createNode(OpKind::Mul, {s1, k2}, 1, "", {"m2"})->result();
  g->addOutput("s2", s2);
  g->addOutput("m1", m1);
  g->addOutput("m2", m2);
  return g;
}

} // namespace

TEST(PassCommonSubexpressionElimination, MergesDuplicates) {
  auto g = buildGraph();
  PassContext context("cse");
  EXPECT_TRUE(createCommonSubexpressionEliminationPass()->run(*g, context));
  EXPECT_EQ(countKind(*g, OpKind::Softmax), 2u);
  EXPECT_EQ(countKind(*g, OpKind::Add), 2u);
  EXPECT_EQ(countKind(*g, OpKind::Sub), 3u);
  EXPECT_EQ(countKind(*g, OpKind::Mul), 1u);
  EXPECT_EQ(g->constants().size(), 1u);
  EXPECT_EQ(context.counter("merged"), 3);
  EXPECT_EQ(context.counter("constants merged"), 1);
  // Both outputs keep their names and now share one value.
  EXPECT_EQ(g->outputs()[1].name, "m1");
  EXPECT_EQ(g->outputs()[2].name, "m2");
  EXPECT_EQ(g->outputs()[1].value, g->outputs()[2].value);
  EXPECT_FALSE(createCommonSubexpressionEliminationPass()->run(*g, context));
}

TEST(PassCommonSubexpressionElimination, DifferentAttributesOrLargeConstantsStay) {
  Graph g;
  std::vector<float> big(65, 1.0f);
  Value *k1 = g.addConstant("k1", Tensor::fromVector<float>({65}, big));
  Value *k2 = g.addConstant("k2", Tensor::fromVector<float>({65}, big));
  g.addOutput("k1", k1);
  g.addOutput("k2", k2);
  PassContext context("cse");
  EXPECT_FALSE(createCommonSubexpressionEliminationPass()->run(g, context));
  EXPECT_EQ(g.constants().size(), 2u);
}

TEST(PassCommonSubexpressionElimination, OutputsUnchanged) {
  if (!hasReferenceKernels({OpKind::Softmax, OpKind::Add, OpKind::Sub, OpKind::Mul}))
    GTEST_SKIP() << "reference kernels not available yet";
  auto reference = buildGraph();
  auto g = buildGraph();
  PassContext context("cse");
  createCommonSubexpressionEliminationPass()->run(*g, context);
  std::map<std::string, Tensor> inputs = {
      {"x", Tensor::fromVector<float>({2, 3}, {1, -2, 3, 0.5f, 0, -1})}};
  expectSameOutputs(*reference, *g, inputs);
}
