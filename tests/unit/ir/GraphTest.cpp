//===- tests/unit/ir/GraphTest.cpp - Graph construction and mutation ----------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

TEST(Graph, BuildKeepsUseLists) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *one = g.addConstant("one", Tensor::fromVector<float>({2}, {1, 1}));
  Node *add = g.createNode(OpKind::Add, {x, one}, 1, "add", {"y"});
  Node *mul = g.createNode(OpKind::Mul, {add->result(), add->result()}, 1, "mul", {"z"});
  g.addOutput("z", mul->result());
  EXPECT_EQ(x->numUses(), 1u);
  EXPECT_EQ(add->result()->numUses(), 2u);
  EXPECT_EQ(add->result()->name(), "y");
  EXPECT_EQ(one->constantValue().data<float>()[1], 1.0f);
  EXPECT_TRUE(g.isOutput(mul->result()));
}

TEST(Graph, ReplaceAllUsesRebindsOutputs) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Node *id = g.createNode(OpKind::Identity, {x}, 1, "id", {"y"});
  Node *neg = g.createNode(OpKind::Neg, {id->result()}, 1, "neg", {"z"});
  g.addOutput("y", id->result());
  g.replaceAllUsesWith(id->result(), x);
  EXPECT_EQ(neg->operand(0), x);
  EXPECT_EQ(g.outputs()[0].value, x);
  EXPECT_EQ(g.outputs()[0].name, "y");
  g.eraseNode(id);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.findValue("y"), nullptr);
  EXPECT_EQ(x->numUses(), 1u);
}

TEST(Graph, EraseInUseIsRefused) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Node *a = g.createNode(OpKind::Neg, {x}, 1);
  g.createNode(OpKind::Neg, {a->result()}, 1);
  EXPECT_THROW(g.eraseNode(a), Error);
}

TEST(Graph, UniqueNamesAndDuplicates) {
  Graph g;
  g.addInput("x", f32({2}));
  EXPECT_THROW(g.addInput("x", f32({2})), Error);
  EXPECT_EQ(g.uniqueName("x"), "x_1");
  Node *n = g.createNode(OpKind::Neg, {g.findValue("x")}, 1, "", {"x"});
  EXPECT_EQ(n->result()->name(), "x_1");
}

TEST(Graph, TopologicalOrderIsStableAndFindsCycles) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Node *a = g.createNode(OpKind::Neg, {x}, 1, "a");
  Node *b = g.createNode(OpKind::Abs, {x}, 1, "b");
  Node *c = g.createNode(OpKind::Add, {a->result(), b->result()}, 1, "c");
  EXPECT_EQ(g.topologicalOrder(), (std::vector<Node *>{a, b, c}));
  // Move c first: sorting puts it back after its producers.
  g.moveNodeBefore(c, a);
  g.sortTopologically();
  EXPECT_EQ(g.nodeList(), (std::vector<Node *>{a, b, c}));
  // Feed c into a: a cycle, reported by name.
  a->setOperand(0, c->result());
  try {
    g.topologicalOrder();
    FAIL() << "cycle not detected";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
  }
}

TEST(Tensor, HalfConversionsRoundTrip) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 6.1035156e-05f, 5.9604645e-08f, 0.333251953125f})
    EXPECT_EQ(halfToFloat(floatToHalf(f)), f) << f;
  EXPECT_EQ(floatToHalf(1e6f), 0x7c00);
  EXPECT_EQ(bfloat16ToFloat(floatToBfloat16(1.5f)), 1.5f);
}

TEST(Graph, UseListsStayExactThroughRemovalsInAnyOrder) {
  // Removal moves the last use into the hole; every node must still find
  // its own use afterwards, whichever uses go first.
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *w = g.addInput("w", f32({2}));
  std::vector<Node *> users;
  for (int i = 0; i < 6; ++i)
    users.push_back(g.createNode(OpKind::Add, {x, x}, 1, "add" + std::to_string(i)));
  ASSERT_EQ(x->numUses(), 12u);
  users[1]->setOperand(0, w); // from the middle
  users[5]->setOperand(1, w); // the last use
  users[0]->setOperand(1, w); // an early one, filled from the back
  g.eraseNode(users[3]);      // both operands of one node
  users[2]->truncateOperands(1);
  EXPECT_EQ(x->numUses(), 6u);
  EXPECT_EQ(w->numUses(), 3u);
  for (const Value *value : {x, w})
    for (const Use &use : value->uses())
      EXPECT_EQ(use.user->operand(use.operandIndex), value);
  // Each remaining operand is removable through its own slot.
  for (Node *user : {users[0], users[1], users[2], users[4], users[5]})
    user->truncateOperands(0);
  EXPECT_EQ(x->numUses(), 0u);
  EXPECT_EQ(w->numUses(), 0u);
}
