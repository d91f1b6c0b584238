//===- tests/unit/passes/PassFoldConstantsTest.cpp - The fold-constants pass -----===//
#include "TestUtil.h"

#include "ir/Graph.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "passes/Pass.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

namespace {

// y = x + Neg(Transpose(w)): the Neg(Transpose(w)) chain folds.
std::unique_ptr<Graph> buildConstantChain() {
  auto g = std::make_unique<Graph>("fold");
  Value *x = g->addInput("x", {DType::F32, Shape::fromConstants({3, 2})});
  Value *w = g->addConstant("w", Tensor::fromVector<float>({2, 3}, {1, 2, 3, 4, 5, 6}));
  Node *t = g->createNode(OpKind::Transpose, {w}, 1, "t", {"wt"});
  t->setAttr("perm", std::vector<int64_t>{1, 0});
  Node *neg = g->createNode(OpKind::Neg, {t->result()}, 1, "neg", {"nwt"});
  Node *add = g->createNode(OpKind::Add, {x, neg->result()}, 1, "add", {"y"});
  g->addOutput("y", add->result());
  inferShapes(*g);
  return g;
}

} // namespace

TEST(PassFoldConstants, FoldsConstantChainUnderResultNames) {
  if (!hasReferenceKernels({OpKind::Transpose, OpKind::Neg, OpKind::Add}))
    GTEST_SKIP() << "reference kernels not available yet";
  auto reference = buildConstantChain();
  auto g = buildConstantChain();
  PassContext context("fold-constants");
  EXPECT_TRUE(createFoldConstantsPass()->run(*g, context));
  EXPECT_EQ(g->numNodes(), 1u);
  EXPECT_EQ(countKind(*g, OpKind::Add), 1u);
  EXPECT_EQ(context.counter("folded"), 2);
  Value *folded = g->findValue("nwt");
  ASSERT_NE(folded, nullptr);
  EXPECT_TRUE(folded->isConstant());
  EXPECT_EQ(folded->constantValue().dims(), (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(folded->constantValue().data<float>()[1], -4.0f);

  std::map<std::string, Tensor> inputs = {
      {"x", Tensor::fromVector<float>({3, 2}, {1, 1, 2, 2, 3, 3})}};
  expectSameOutputs(*reference, *g, inputs);
}

TEST(PassFoldConstants, LeavesNonConstantAndElidedAlone) {
  Graph g;
  Value *x = g.addInput("x", {DType::F32, Shape::fromConstants({4})});
  Value *elided = g.addConstant("e", Tensor::elided(DType::F32, {4}));
  Node *relu = g.createNode(OpKind::Relu, {x}, 1, "relu", {"r"});
  Node *neg = g.createNode(OpKind::Neg, {elided}, 1, "neg", {"n"});
  g.addOutput("r", relu->result());
  g.addOutput("n", neg->result());
  PassContext context("fold-constants", /*explaining=*/true);
  EXPECT_FALSE(createFoldConstantsPass()->run(g, context));
  EXPECT_EQ(g.numNodes(), 2u);
  EXPECT_EQ(context.counter("folded"), 0);
  ASSERT_FALSE(context.explanations().empty());
  EXPECT_NE(context.explanations()[0].find("elided"), std::string::npos);
}

TEST(PassFoldConstants, SkipsHugeResults) {
  Graph g;
  // ConstantOfShape to 2048x1024 = 2M elements: too large to fold.
  Value *shape = g.addConstant("shape", Tensor::fromVector<int64_t>({2}, {2048, 1024}));
  Node *fill = g.createNode(OpKind::ConstantOfShape, {shape}, 1, "fill", {"big"});
  g.addOutput("big", fill->result());
  inferShapes(g);
  PassContext context("fold-constants");
  EXPECT_FALSE(createFoldConstantsPass()->run(g, context));
  EXPECT_EQ(g.numNodes(), 1u);
  if (hasReferenceKernel(OpKind::ConstantOfShape)) {
    EXPECT_EQ(context.counter("skipped (too large)"), 1);
  }
}

// Weights: a DequantizeLinear of a 2M-element u4 constant read by a MatMul, through a
// Transpose, folds whatever its size (the f32 weights a float model holds); a Transpose of a
// large constant something else reads too does not.
TEST(PassFoldConstants, FoldsLargeWeightsDequantizeAndTheirTranspose) {
  Graph g;
  const int64_t n = 2048, k = 1024;
  Value *a = g.addInput("a", {DType::F32, Shape::fromConstants({1, k})});
  Value *q = g.addConstant("q", Tensor(DType::U4, {n, k}));
  Value *scale = g.addConstant("s", Tensor::scalar<float>(0.5f));
  Node *dequantize = g.createNode(OpKind::DequantizeLinear, {q, scale}, 1, "dq", {"w"});
  Node *transpose = g.createNode(OpKind::Transpose, {dequantize->result()}, 1, "t", {"wt"});
  transpose->setAttr("perm", std::vector<int64_t>{1, 0});
  Node *product = g.createNode(OpKind::MatMul, {a, transpose->result()}, 1, "mm", {"y"});
  g.addOutput("y", product->result());
  Value *big = g.addConstant("big", Tensor(DType::F32, {n, k}));
  Node *shared = g.createNode(OpKind::Transpose, {big}, 1, "shared", {"bt"});
  shared->setAttr("perm", std::vector<int64_t>{1, 0});
  g.addOutput("bt", shared->result());
  g.addOutput("big", big);
  inferShapes(g);
  PassContext context("fold-constants");
  EXPECT_TRUE(createFoldConstantsPass()->run(g, context));
  EXPECT_EQ(countKind(g, OpKind::DequantizeLinear), 0u);
  EXPECT_EQ(countKind(g, OpKind::Transpose), 1u); // the shared one
  Value *w = g.findValue("wt");
  ASSERT_NE(w, nullptr);
  EXPECT_TRUE(w->isConstant());
  EXPECT_EQ(w->constantValue().typeString(), "f32[1024, 2048]");
  EXPECT_GE(context.counter("skipped (too large)"), 1); // once per sweep
}

// x: f32[batch, 16]; s = Shape(x); d = Gather(s, 1) -> 16 while the batch
// piece stays symbolic.
TEST(PassFoldConstants, FoldsStaticPiecesOfShapeChains) {
  Graph g;
  Value *x = g.addInput("x", {DType::F32, Shape({Dim::symbol("batch"), Dim(16)})});
  Value *one = g.addConstant("one", Tensor::scalar<int64_t>(1));
  Value *zero = g.addConstant("zero", Tensor::scalar<int64_t>(0));
  Node *shape = g.createNode(OpKind::Shape, {x}, 1, "shape", {"s"});
  Node *dim1 = g.createNode(OpKind::Gather, {shape->result(), one}, 1, "g1", {"d1"});
  Node *dim0 = g.createNode(OpKind::Gather, {shape->result(), zero}, 1, "g0", {"d0"});
  g.addOutput("d1", dim1->result());
  g.addOutput("d0", dim0->result());
  inferShapes(g);
  if (!shape->result()->shape().isRanked())
    GTEST_SKIP() << "shape inference not available yet";
  PassContext context("fold-constants");
  EXPECT_TRUE(createFoldConstantsPass()->run(g, context));
  Value *d1 = g.findValue("d1");
  ASSERT_NE(d1, nullptr);
  ASSERT_TRUE(d1->isConstant());
  EXPECT_EQ(d1->constantValue().elementAsInt64(0), 16);
  EXPECT_EQ(d1->constantValue().rank(), 0u);
  EXPECT_EQ(countKind(g, OpKind::Gather), 1u) << "the batch piece stays symbolic";
  EXPECT_EQ(g.outputs()[0].value, d1);
  EXPECT_EQ(g.outputs()[0].name, "d1");
}

TEST(PassFoldConstants, IdentityOfAConstantIsForwardedNotCopied) {
  // Readers of Identity(w) read w itself (one stored weight however many
  // modules share it); an Identity that is a graph output becomes a copy
  // under the output's name, which the model's interface keeps.
  Graph g;
  Value *x = g.addInput("x", {DType::F32, Shape::fromConstants({2})});
  Value *w = g.addConstant("w", Tensor::fromVector<float>({2}, {3, 4}));
  Node *shared = g.createNode(OpKind::Identity, {w}, 1, "shared", {"w_again"});
  Node *add = g.createNode(OpKind::Add, {x, shared->result()}, 1, "add", {"y"});
  Node *out = g.createNode(OpKind::Identity, {w}, 1, "out", {"w_out"});
  g.addOutput("y", add->result());
  g.addOutput("w_out", out->result());
  inferShapes(g);
  PassContext context("fold-constants");
  EXPECT_TRUE(createFoldConstantsPass()->run(g, context));
  EXPECT_EQ(add->operand(1), w);
  EXPECT_EQ(g.findValue("w_again"), nullptr);
  Value *output = g.findValue("w_out");
  ASSERT_NE(output, nullptr);
  EXPECT_TRUE(output->isConstant());
  EXPECT_NE(output, w);
  EXPECT_EQ(output->constantValue().data<float>()[1], 4.0f);
}
