//===- tests/unit/ir/AttributeTest.cpp - Attribute equality --------------------===//
#include "TestUtil.h"

#include "ir/Attribute.h"
#include "ir/Graph.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace onnxc;
using namespace onnxc::test;

// Empty float lists (a default-constructed vector has a null data()) are equal
// to each other and to nothing else; the sanitizer build fails on the memcmp
// of null pointers this once made.
TEST(Attribute, EmptyFloatListsAreEqual) {
  Attribute empty(std::vector<float>{}), alsoEmpty(std::vector<float>{});
  EXPECT_TRUE(empty == alsoEmpty);
  EXPECT_FALSE(empty == Attribute(std::vector<float>{0.0f}));
  EXPECT_FALSE(Attribute(std::vector<float>{0.0f}) == empty);
  EXPECT_FALSE(empty == Attribute(std::vector<int64_t>{}));
}

// Float lists compare bit for bit: a NaN equals itself, -0 and +0 differ.
TEST(Attribute, FloatListsCompareBitwise) {
  float nan = std::numeric_limits<float>::quiet_NaN();
  EXPECT_TRUE(Attribute(std::vector<float>{1.0f, nan}) == Attribute(std::vector<float>{1.0f, nan}));
  EXPECT_FALSE(Attribute(std::vector<float>{-0.0f}) == Attribute(std::vector<float>{0.0f}));
  EXPECT_FALSE(Attribute(std::vector<float>{1.0f, 2.0f}) == Attribute(std::vector<float>{1.0f}));
}

// The path that met it: CSE merging two nodes whose only attribute is an
// empty float list.
TEST(Attribute, CseMergesNodesWithEmptyFloatLists) {
  Graph g("empty-floats");
  Value *x = g.addInput("x", f32({2, 3}));
  auto relu = [&](const char *name) {
    Node *n = g.createNode(OpKind::Relu, {x}, 1, "", {name});
    n->setAttr("unused", std::vector<float>{});
    return n->result();
  };
  Value *a = relu("a"), *b = relu("b");
  g.addOutput("s", g.createNode(OpKind::Add, {a, b}, 1, "", {"s"})->result());
  PassContext context("cse");
  EXPECT_TRUE(createCommonSubexpressionEliminationPass()->run(g, context));
  EXPECT_EQ(countKind(g, OpKind::Relu), 1u);
}
