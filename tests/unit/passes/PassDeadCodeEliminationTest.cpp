//===- tests/unit/passes/PassDeadCodeEliminationTest.cpp - The dce pass ----------===//
#include "TestUtil.h"

#include "ir/Graph.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

// x -> Relu -> y (output); x -> Neg -> Exp (dead chain); unused constant;
// unused input kept.
std::unique_ptr<Graph> buildGraph() {
  auto g = std::make_unique<Graph>("dce");
  Value *x = g->addInput("x", f32({3}));
  g->addInput("unused", f32({3}));
  g->addConstant("c", Tensor::fromVector<float>({3}, {1, 2, 3}));
  Node *neg = g->createNode(OpKind::Neg, {x}, 1, "neg", {"n"});
  g->createNode(OpKind::Exp, {neg->result()}, 1, "exp", {"e"});
  Node *relu = g->createNode(OpKind::Relu, {x}, 1, "relu", {"y"});
  g->addOutput("y", relu->result());
  return g;
}

} // namespace

TEST(PassDeadCodeElimination, ErasesDeadChainAndConstants) {
  auto g = buildGraph();
  PassContext context("dce");
  EXPECT_TRUE(createDeadCodeEliminationPass()->run(*g, context));
  EXPECT_EQ(g->numNodes(), 1u);
  EXPECT_EQ(countKind(*g, OpKind::Relu), 1u);
  EXPECT_TRUE(g->constants().empty());
  EXPECT_EQ(g->inputs().size(), 2u) << "graph inputs are the signature and stay";
  EXPECT_EQ(context.counter("removed"), 2);
  EXPECT_EQ(context.counter("constants removed"), 1);
  EXPECT_EQ(context.statisticsLine(), "dce: 2 removed, 1 constants removed");
}

TEST(PassDeadCodeElimination, SecondRunChangesNothing) {
  auto g = buildGraph();
  PassContext context("dce");
  createDeadCodeEliminationPass()->run(*g, context);
  EXPECT_FALSE(createDeadCodeEliminationPass()->run(*g, context));
}

TEST(PassDeadCodeElimination, KeepsOutputsAndMultiResultNodesInUse) {
  Graph g;
  Value *x = g.addInput("x", f32({4}));
  Value *ratio = g.addConstant("ratio", Tensor::scalar<float>(0.5f));
  // Only the mask of the Dropout is used: the node stays.
  Node *drop = g.createNode(OpKind::Dropout, {x, ratio}, 2, "drop", {"d", "mask"});
  g.addOutput("mask", drop->result(1));
  Value *c = g.addConstant("c", Tensor::fromVector<float>({4}, {1, 2, 3, 4}));
  g.addOutput("c", c); // a constant that is an output stays
  PassContext context("dce");
  EXPECT_FALSE(createDeadCodeEliminationPass()->run(g, context));
  EXPECT_EQ(g.numNodes(), 1u);
  EXPECT_EQ(g.constants().size(), 2u);
}

TEST(PassDeadCodeElimination, OutputsUnchanged) {
  auto reference = buildGraph();
  auto g = buildGraph();
  PassContext context("dce");
  createDeadCodeEliminationPass()->run(*g, context);
  if (!hasReferenceKernels({OpKind::Relu, OpKind::Neg, OpKind::Exp}))
    GTEST_SKIP() << "reference kernels not available yet";
  std::map<std::string, Tensor> inputs = {{"x", Tensor::fromVector<float>({3}, {-1, 0, 2})},
                                          {"unused", Tensor::fromVector<float>({3}, {0, 0, 0})}};
  expectSameOutputs(*reference, *g, inputs);
}
