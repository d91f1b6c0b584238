//===- tests/unit/passes/PassRemoveIdentityTest.cpp - The remove-identity pass ---===//
#include "TestUtil.h"

#include "ir/Graph.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

// x -> Identity -> Dropout(ratio) -> Relu -> Identity -> out "y"
std::unique_ptr<Graph> buildChain() {
  auto g = std::make_unique<Graph>("chain");
  Value *x = g->addInput("x", f32({4}));
  Value *ratio = g->addConstant("ratio", Tensor::scalar<float>(0.1f));
  Node *id0 = g->createNode(OpKind::Identity, {x}, 1, "id0", {"a"});
  Node *drop = g->createNode(OpKind::Dropout, {id0->result(), ratio}, 1, "drop", {"b"});
  Node *relu = g->createNode(OpKind::Relu, {drop->result()}, 1, "relu", {"c"});
  Node *id1 = g->createNode(OpKind::Identity, {relu->result()}, 1, "id1", {"y"});
  g->addOutput("y", id1->result());
  return g;
}

} // namespace

TEST(PassRemoveIdentity, BypassesIdentityAndDropout) {
  auto g = buildChain();
  PassContext context("remove-identity");
  EXPECT_TRUE(createRemoveIdentityPass()->run(*g, context));
  EXPECT_EQ(g->numNodes(), 1u);
  EXPECT_EQ(countKind(*g, OpKind::Relu), 1u);
  EXPECT_EQ(context.counter("removed"), 3);
  // The output keeps its name, now bound to the Relu result.
  ASSERT_EQ(g->outputs().size(), 1u);
  EXPECT_EQ(g->outputs()[0].name, "y");
  EXPECT_EQ(g->outputs()[0].value->definingNode()->kind(), OpKind::Relu);
  EXPECT_EQ(g->outputs()[0].value->definingNode()->operand(0), g->inputs()[0]);
}

TEST(PassRemoveIdentity, KeepsTrainingDropoutAndUsedMask) {
  Graph g;
  Value *x = g.addInput("x", f32({4}));
  Value *training = g.addInput("training", {DType::Bool, Shape::scalar()});
  Value *ratio = g.addConstant("ratio", Tensor::scalar<float>(0.1f));
  Node *train = g.createNode(OpKind::Dropout, {x, ratio, training}, 1, "train", {"a"});
  Node *masked = g.createNode(OpKind::Dropout, {train->result()}, 2, "masked", {"b", "mask"});
  g.addOutput("b", masked->result(0));
  g.addOutput("mask", masked->result(1));
  PassContext context("remove-identity", /*explaining=*/true);
  EXPECT_FALSE(createRemoveIdentityPass()->run(g, context));
  EXPECT_EQ(g.numNodes(), 2u);
  ASSERT_EQ(context.explanations().size(), 2u);
  EXPECT_NE(context.explanations()[0].find("training_mode"), std::string::npos);
  EXPECT_NE(context.explanations()[1].find("mask is used"), std::string::npos);
}

TEST(PassRemoveIdentity, ConstantFalseTrainingModeIsInference) {
  Graph g;
  Value *x = g.addInput("x", f32({4}));
  Value *ratio = g.addConstant("ratio", Tensor::scalar<float>(0.1f));
  Value *no = g.addConstant("no", Tensor::boolScalar(false));
  Node *drop = g.createNode(OpKind::Dropout, {x, ratio, no}, 2, "drop", {"d", "mask"});
  g.addOutput("out", drop->result(0));
  PassContext context("remove-identity");
  EXPECT_TRUE(createRemoveIdentityPass()->run(g, context));
  EXPECT_EQ(g.numNodes(), 0u);
  EXPECT_EQ(g.outputs()[0].value, x);
  EXPECT_EQ(g.outputs()[0].name, "out");
}

TEST(PassRemoveIdentity, OutputsUnchanged) {
  if (!hasReferenceKernels({OpKind::Relu, OpKind::Identity, OpKind::Dropout}))
    GTEST_SKIP() << "reference kernels not available yet";
  auto reference = buildChain();
  auto g = buildChain();
  PassContext context("remove-identity");
  createRemoveIdentityPass()->run(*g, context);
  std::map<std::string, Tensor> inputs = {{"x", Tensor::fromVector<float>({4}, {-1, 0, 2, 3})}};
  expectSameOutputs(*reference, *g, inputs);
}
