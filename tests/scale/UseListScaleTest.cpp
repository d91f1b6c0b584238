//===- tests/scale/UseListScaleTest.cpp - One value, 400,000 users ---------===//
//
// The verifier once counted each operand in its value's use list and the
// graph removed a use by searching the list: both are quadratic in the users
// of one value (42 s for 200,000 users through `dump -O0`). These tests build
// that graph and run the verifier and the use-list primitives over it; they
// check results only, and fail on a quadratic implementation through the
// ctest TIMEOUT of tests/scale/CMakeLists.txt.
//
//===----------------------------------------------------------------------===//
#include "ir/Graph.h"
#include "ir/Verifier.h"
#include "passes/Pass.h"
#include "passes/PassManager.h"

#include <gtest/gtest.h>

using namespace onnxc;

namespace {

constexpr unsigned kUsers = 400000;

TensorType vectorOf2() { return {DType::F32, Shape::fromConstants({2})}; }

} // namespace

TEST(UseListScale, VerifierIsLinearInTheUsesOfOneValue) {
  // t_i = Add(x, t_{i-1}): x has kUsers uses, the chain keeps every node live.
  Graph g("fan");
  Value *x = g.addInput("x", vectorOf2());
  Value *previous = x;
  for (unsigned i = 0; i < kUsers; ++i) {
    Node *add = g.createNode(OpKind::Add, {x, previous}, 1);
    add->result()->setType(vectorOf2());
    previous = add->result();
  }
  g.addOutput("y", previous);
  EXPECT_EQ(x->numUses(), kUsers + 1);
  EXPECT_NO_THROW(verifyGraph(g));
}

TEST(UseListScale, RewiringAndErasingEveryUserIsLinear) {
  Graph g("users");
  Value *x = g.addInput("x", vectorOf2());
  Value *z = g.addInput("z", vectorOf2());
  std::vector<Node *> users;
  for (unsigned i = 0; i < kUsers; ++i) {
    users.push_back(g.createNode(OpKind::Neg, {x}, 1));
    users.back()->result()->setType(vectorOf2());
  }
  Node *kept = g.createNode(OpKind::Relu, {x}, 1, "kept", {"y"});
  kept->result()->setType(vectorOf2());
  g.addOutput("y", kept->result());

  g.replaceAllUsesWith(x, z);
  EXPECT_EQ(x->numUses(), 0u);
  ASSERT_EQ(z->numUses(), kUsers + 1);
  EXPECT_EQ(kept->operand(0), z);
  EXPECT_NO_THROW(verifyGraph(g));

  // Rebind half the users one at a time, from the front: each removal takes
  // a use out of the middle of a long list.
  for (unsigned i = 0; i < kUsers; i += 2)
    users[i]->setOperand(0, x);
  EXPECT_EQ(x->numUses(), kUsers / 2);
  EXPECT_EQ(z->numUses(), kUsers / 2 + 1);
  EXPECT_NO_THROW(verifyGraph(g));

  // Erase every user in program order, as a forward sweep would.
  for (Node *user : users)
    g.eraseNode(user);
  EXPECT_EQ(x->numUses(), 0u);
  ASSERT_EQ(z->numUses(), 1u);
  EXPECT_EQ(z->uses()[0].user, kept);
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_NO_THROW(verifyGraph(g));
}

TEST(UseListScale, DeadCodeEliminationOfEveryUserIsLinear) {
  // The backward sweep of dce erases the users last-first.
  Graph g("dead");
  Value *x = g.addInput("x", vectorOf2());
  for (unsigned i = 0; i < kUsers; ++i)
    g.createNode(OpKind::Neg, {x}, 1)->result()->setType(vectorOf2());
  Node *kept = g.createNode(OpKind::Relu, {x}, 1, "kept", {"y"});
  kept->result()->setType(vectorOf2());
  g.addOutput("y", kept->result());
  PassManager pm;
  pm.addPass(createDeadCodeEliminationPass());
  pm.run(g);
  EXPECT_EQ(g.numNodes(), 1u);
  ASSERT_EQ(x->numUses(), 1u);
  EXPECT_EQ(x->uses()[0].user, kept);
  EXPECT_NO_THROW(verifyGraph(g));
}
