//===- tests/unit/eval/EvalElementwiseGraphTest.cpp - evaluateGraph driver -----===//
#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/eval/Evaluator.h"

#include <gtest/gtest.h>

using namespace onnxc;

namespace {

TensorType f32(std::vector<Dim> dims) { return {DType::F32, Shape(std::move(dims))}; }

Tensor f32Tensor(std::vector<int64_t> dims, std::vector<float> v) {
  return Tensor::fromVector<float>(std::move(dims), v);
}

/// relu(x + bias) * z with x: f32[batch, 3], z: f32[batch, 1].
std::unique_ptr<Graph> buildGraph() {
  auto g = std::make_unique<Graph>();
  Value *x = g->addInput("x", f32({Dim::symbol("batch"), 3}));
  Value *z = g->addInput("z", f32({Dim::symbol("batch"), 1}));
  Value *bias = g->addConstant("bias", f32Tensor({3}, {1, -1, 0}));
  Node *add = g->createNode(OpKind::Add, {x, bias}, 1, "add");
  Node *relu = g->createNode(OpKind::Relu, {add->result()}, 1, "relu");
  Node *mul = g->createNode(OpKind::Mul, {relu->result(), z}, 1, "mul");
  g->addOutput("y", mul->result());
  g->addOutput("sum", add->result());
  return g;
}

std::string errorOf(const Graph &g, const std::map<std::string, Tensor> &inputs) {
  try {
    evaluateGraph(g, inputs);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

} // namespace

TEST(EvalElementwiseGraph, RunsNodesAndReturnsOutputsInOrder) {
  auto g = buildGraph();
  std::vector<Tensor> out = evaluateGraph(
      *g, {{"x", f32Tensor({2, 3}, {1, 2, 3, -4, 5, 6})}, {"z", f32Tensor({2, 1}, {2, 10})}});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(std::vector<float>(out[0].data<float>(), out[0].data<float>() + 6),
            (std::vector<float>{4, 2, 6, 0, 40, 60}));
  EXPECT_EQ(std::vector<float>(out[1].data<float>(), out[1].data<float>() + 6),
            (std::vector<float>{2, 1, 3, -3, 4, 6}));
}

TEST(EvalElementwiseGraph, InputCheckingNamesTheInput) {
  auto g = buildGraph();
  Tensor x = f32Tensor({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor z = f32Tensor({2, 1}, {1, 1});
  EXPECT_NE(errorOf(*g, {{"x", x}}).find("missing input 'z'"), std::string::npos);
  EXPECT_NE(errorOf(*g, {{"x", x}, {"z", z}, {"w", z}}).find("unknown input 'w'"),
            std::string::npos);
  std::string wrongType =
      errorOf(*g, {{"x", Tensor::fromVector<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6})}, {"z", z}});
  EXPECT_NE(wrongType.find("input 'x': expected f32[batch, 3], got i64[2, 3]"), std::string::npos)
      << wrongType;
  std::string wrongRank = errorOf(*g, {{"x", f32Tensor({6}, {1, 2, 3, 4, 5, 6})}, {"z", z}});
  EXPECT_NE(wrongRank.find("input 'x'"), std::string::npos) << wrongRank;
  std::string wrongDim = errorOf(*g, {{"x", f32Tensor({3, 2}, {1, 2, 3, 4, 5, 6})}, {"z", z}});
  EXPECT_NE(wrongDim.find("input 'x'"), std::string::npos) << wrongDim;
  std::string inconsistent = errorOf(*g, {{"x", x}, {"z", f32Tensor({3, 1}, {1, 1, 1})}});
  EXPECT_NE(inconsistent.find("input 'z'"), std::string::npos) << inconsistent;
  EXPECT_NE(inconsistent.find("batch"), std::string::npos) << inconsistent;
}

TEST(EvalElementwiseGraph, ElidedConstantsAreRefused) {
  Graph g;
  Value *x = g.addInput("x", f32({2}));
  Value *w = g.addConstant("w", Tensor::elided(DType::F32, {2}));
  g.addOutput("y", g.createNode(OpKind::Add, {x, w}, 1)->result());
  std::string message = errorOf(g, {{"x", f32Tensor({2}, {1, 2})}});
  EXPECT_NE(message.find("constant 'w'"), std::string::npos) << message;
}

TEST(EvalElementwiseGraph, DisagreementWithShapeInferenceIsReported) {
  Graph g;
  Value *x = g.addInput("x", f32({Dim::symbol("n")}));
  Node *neg = g.createNode(OpKind::Neg, {x}, 1, "neg");
  neg->result()->setType(f32({Dim::symbol("n"), 1})); // wrong rank on purpose
  g.addOutput("y", neg->result());
  std::string message = errorOf(g, {{"x", f32Tensor({2}, {1, 2})}});
  EXPECT_NE(message.find("internal error: node 'neg'"), std::string::npos) << message;
  neg->result()->setType(f32({Dim::symbol("n")}));
  EXPECT_EQ(errorOf(g, {{"x", f32Tensor({2}, {1, 2})}}), "");
}
