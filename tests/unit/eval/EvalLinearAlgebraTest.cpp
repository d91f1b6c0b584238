//===- tests/unit/eval/EvalLinearAlgebraTest.cpp - MatMul, Gemm, Einsum, Conv --===//
//
// Kernels and shape rules are called straight from their tables (runKernel
// and inferNode in TestUtil.h), without the evaluator's and the inference
// driver's checks in front of them.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;

TEST(EvalMatMul, BroadcastBatchDims) {
  Tensor a = randomTensor({2, 1, 3, 4}, 1), b = randomTensor({3, 4, 5}, 2);
  Graph g;
  Node *n = makeNode(g, OpKind::MatMul, {&a, &b});
  Tensor y = runKernel(*n, {&a, &b})[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 3, 3, 5}));
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 3; ++j)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t c = 0; c < 5; ++c) {
          double sum = 0;
          for (int64_t k = 0; k < 4; ++k)
            sum +=
                double(a.data<float>()[(i * 3 + r) * 4 + k]) * b.data<float>()[(j * 4 + k) * 5 + c];
          EXPECT_NEAR(y.data<float>()[((i * 3 + j) * 3 + r) * 5 + c], sum, 1e-5);
        }
}

TEST(EvalMatMul, OneDimensionalOperands) {
  Tensor v = Tensor::fromVector<float>({3}, {1, 2, 3});
  Tensor m = Tensor::fromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  Graph g;
  Node *vm = makeNode(g, OpKind::MatMul, {&v, &m});
  Tensor y = runKernel(*vm, {&v, &m})[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2}));
  expectNear(y, {22, 28});
  Tensor mt = Tensor::fromVector<float>({2, 3}, {1, 3, 5, 2, 4, 6});
  Tensor y2 = runKernel(*vm, {&mt, &v})[0];
  EXPECT_EQ(y2.dims(), (std::vector<int64_t>{2}));
  expectNear(y2, {22, 28});
  Tensor dot = runKernel(*vm, {&v, &v})[0];
  EXPECT_EQ(dot.rank(), 0u);
  expectNear(dot, {14});
}

TEST(EvalMatMul, IntegerAndErrors) {
  Tensor a = Tensor::fromVector<int64_t>({2, 2}, {1, 2, 3, 4});
  Graph g;
  Node *n = makeNode(g, OpKind::MatMul, {&a, &a});
  Tensor y = runKernel(*n, {&a, &a})[0];
  EXPECT_EQ(y.dtype(), DType::I64);
  EXPECT_EQ(y.toInt64Vector(), (std::vector<int64_t>{7, 10, 15, 22}));
  Tensor bad = Tensor::fromVector<int64_t>({3, 2}, {1, 2, 3, 4, 5, 6});
  EXPECT_THROW(runKernel(*n, {&a, &bad}), Error);
  Tensor f = randomTensor({2, 2}, 3);
  EXPECT_THROW(runKernel(*n, {&a, &f}), Error);
}

TEST(EvalGemm, TransposesAlphaBetaAndBias) {
  Tensor a = randomTensor({4, 3}, 4), b = randomTensor({5, 4}, 5), c = randomTensor({5}, 6);
  Graph g;
  Node *n = makeNode(g, OpKind::Gemm, {&a, &b, &c});
  n->setAttr("transA", 1);
  n->setAttr("transB", 1);
  n->setAttr("alpha", 0.5f);
  n->setAttr("beta", 2.0f);
  Tensor y = runKernel(*n, {&a, &b, &c})[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{3, 5}));
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 5; ++j) {
      double sum = 0;
      for (int64_t k = 0; k < 4; ++k)
        sum += double(a.data<float>()[k * 3 + i]) * b.data<float>()[j * 4 + k];
      EXPECT_NEAR(y.data<float>()[i * 5 + j], 0.5 * sum + 2.0 * c.data<float>()[j], 1e-5);
    }
  Tensor badBias = randomTensor({2, 5}, 7);
  EXPECT_THROW(runKernel(*n, {&a, &b, &badBias}), Error);
}

TEST(EvalEinsum, BatchMatMulAndAttentionScores) {
  Tensor a = randomTensor({2, 3, 4}, 8), b = randomTensor({2, 4, 5}, 9);
  Graph g;
  Node *einsum = makeNode(g, OpKind::Einsum, {&a, &b});
  einsum->setAttr("equation", "bij,bjk->bik");
  Node *matmul = makeNode(g, OpKind::MatMul, {&a, &b});
  Tensor viaEinsum = runKernel(*einsum, {&a, &b})[0];
  Tensor viaMatMul = runKernel(*matmul, {&a, &b})[0];
  ASSERT_EQ(viaEinsum.dims(), viaMatMul.dims());
  for (int64_t i = 0; i < viaEinsum.numElements(); ++i)
    EXPECT_NEAR(viaEinsum.data<float>()[i], viaMatMul.data<float>()[i], 1e-5);

  Tensor q = randomTensor({1, 2, 3, 4}, 10), k = randomTensor({1, 2, 5, 4}, 11);
  einsum->setAttr("equation", "bhqd,bhkd->bhqk");
  Tensor scores = runKernel(*einsum, {&q, &k})[0];
  ASSERT_EQ(scores.dims(), (std::vector<int64_t>{1, 2, 3, 5}));
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t i = 0; i < 3; ++i)
      for (int64_t j = 0; j < 5; ++j) {
        double sum = 0;
        for (int64_t d = 0; d < 4; ++d)
          sum +=
              double(q.data<float>()[(h * 3 + i) * 4 + d]) * k.data<float>()[(h * 5 + j) * 4 + d];
        EXPECT_NEAR(scores.data<float>()[(h * 3 + i) * 5 + j], sum, 1e-5);
      }
}

TEST(EvalEinsum, DiagonalSumEllipsisAndImplicit) {
  Tensor m = Tensor::fromVector<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Graph g;
  Node *n = makeNode(g, OpKind::Einsum, {&m});
  n->setAttr("equation", "ii->i");
  expectNear(runKernel(*n, {&m})[0], {1, 5, 9});
  n->setAttr("equation", "ij->");
  Tensor total = runKernel(*n, {&m})[0];
  EXPECT_EQ(total.rank(), 0u);
  expectNear(total, {45});
  n->setAttr("equation", "ji"); // implicit output "ij" sorted: a transpose
  expectNear(runKernel(*n, {&m})[0], {1, 4, 7, 2, 5, 8, 3, 6, 9});

  Tensor a = randomTensor({2, 3, 4}, 12), b = randomTensor({4, 5}, 13);
  Node *e = makeNode(g, OpKind::Einsum, {&a, &b});
  e->setAttr("equation", "...ij,...jk");
  Node *mm = makeNode(g, OpKind::MatMul, {&a, &b});
  Tensor viaEinsum = runKernel(*e, {&a, &b})[0];
  Tensor viaMatMul = runKernel(*mm, {&a, &b})[0];
  ASSERT_EQ(viaEinsum.dims(), (std::vector<int64_t>{2, 3, 5}));
  for (int64_t i = 0; i < viaEinsum.numElements(); ++i)
    EXPECT_NEAR(viaEinsum.data<float>()[i], viaMatMul.data<float>()[i], 1e-5);
}

TEST(EvalEinsum, BadEquationsNameTheNode) {
  Tensor m = randomTensor({3, 4}, 14);
  Graph g;
  Node *n = makeNode(g, OpKind::Einsum, {&m});
  for (const char *equation :
       {"ii->i", "ijk->i", "ij->k", "ij->ii", "i$->i", "ij,jk->ik", "i....j"}) {
    n->setAttr("equation", equation);
    try {
      runKernel(*n, {&m});
      ADD_FAILURE() << "no error for " << equation;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("node 'n'"), std::string::npos) << e.what();
    }
  }
}

TEST(EvalConv, PatchEmbeddingMatchesHandComputation) {
  // 2 images, 3 channels, 8x8, 4x4 patches with stride 4 -> 2x2 patches.
  Tensor x = randomTensor({2, 3, 8, 8}, 15), w = randomTensor({5, 3, 4, 4}, 16);
  Tensor b = randomTensor({5}, 17);
  Graph g;
  Node *n = makeNode(g, OpKind::Conv, {&x, &w, &b});
  n->setAttr("strides", std::vector<int64_t>{4, 4});
  n->setAttr("kernel_shape", std::vector<int64_t>{4, 4});
  Tensor y = runKernel(*n, {&x, &w, &b})[0];
  ASSERT_EQ(y.dims(), (std::vector<int64_t>{2, 5, 2, 2}));
  for (int64_t img = 0; img < 2; ++img)
    for (int64_t m = 0; m < 5; ++m)
      for (int64_t pr = 0; pr < 2; ++pr)
        for (int64_t pc = 0; pc < 2; ++pc) {
          double sum = b.data<float>()[m];
          for (int64_t c = 0; c < 3; ++c)
            for (int64_t kr = 0; kr < 4; ++kr)
              for (int64_t kc = 0; kc < 4; ++kc)
                sum +=
                    double(x.data<float>()[((img * 3 + c) * 8 + pr * 4 + kr) * 8 + pc * 4 + kc]) *
                    w.data<float>()[((m * 3 + c) * 4 + kr) * 4 + kc];
          EXPECT_NEAR(y.data<float>()[((img * 5 + m) * 2 + pr) * 2 + pc], sum, 1e-4);
        }
}

TEST(EvalConv, SamePaddingGroupsAndErrors) {
  // Depthwise 1-D conv, SAME_UPPER: out = ceil(5 / 2) = 3.
  Tensor x = Tensor::fromVector<float>({1, 2, 5}, {1, 2, 3, 4, 5, 1, 1, 1, 1, 1});
  Tensor w = Tensor::fromVector<float>({2, 1, 3}, {1, 1, 1, 1, 0, -1});
  Graph g;
  Node *n = makeNode(g, OpKind::Conv, {&x, &w});
  n->setAttr("group", 2);
  n->setAttr("strides", std::vector<int64_t>{2});
  n->setAttr("auto_pad", "SAME_UPPER");
  // total pad = (3-1)*2 + 3 - 5 = 2 -> 1 before, 1 after.
  expectNear(runKernel(*n, {&x, &w})[0], {3, 9, 9, -1, 0, 1});
  n->setAttr("group", 3);
  EXPECT_THROW(runKernel(*n, {&x, &w}), Error);
}

TEST(InferLinearAlgebra, SymbolicMatMulGemmEinsum) {
  Graph g;
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq");
  Value *x = g.addInput("x", f32({batch, seq, 64}));
  Value *w = g.addInput("w", f32({64, 256}));
  Node *mm = g.createNode(OpKind::MatMul, {x, w}, 1, "mm");
  inferNode(*mm);
  EXPECT_EQ(mm->result()->type().str(), "f32[batch, seq, 256]");

  Value *v = g.addInput("v", f32({64}));
  Node *mv = g.createNode(OpKind::MatMul, {x, v}, 1, "mv");
  inferNode(*mv);
  EXPECT_EQ(mv->result()->type().str(), "f32[batch, seq]");

  Value *bad = g.addInput("bad", f32({32, 256}));
  Node *wrong = g.createNode(OpKind::MatMul, {x, bad}, 1, "wrong");
  try {
    inferNode(*wrong);
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_NE(message.find("node 'wrong'"), std::string::npos) << message;
    EXPECT_NE(message.find("[batch, seq, 64]"), std::string::npos) << message;
    EXPECT_NE(message.find("[32, 256]"), std::string::npos) << message;
  }
  Value *symbolicK = g.addInput("k", f32({Dim::symbol("hidden"), 8}));
  Node *unknownK = g.createNode(OpKind::MatMul, {x, symbolicK}, 1, "unknownK");
  EXPECT_NO_THROW(inferNode(*unknownK));

  Value *a = g.addInput("a", f32({Dim::symbol("m"), 16}));
  Value *b = g.addInput("b", f32({32, 16}));
  Value *c = g.addInput("c", f32({32}));
  Node *gemm = g.createNode(OpKind::Gemm, {a, b, c}, 1, "gemm");
  gemm->setAttr("transB", 1);
  inferNode(*gemm);
  EXPECT_EQ(gemm->result()->type().str(), "f32[m, 32]");

  Value *q = g.addInput("q", f32({batch, 12, seq, 64}));
  Value *k = g.addInput("kk", f32({batch, 12, Dim::symbol("kv"), 64}));
  Node *einsum = g.createNode(OpKind::Einsum, {q, k}, 1, "einsum");
  einsum->setAttr("equation", "bhqd,bhkd->bhqk");
  inferNode(*einsum);
  EXPECT_EQ(einsum->result()->type().str(), "f32[batch, 12, seq, kv]");
  einsum->setAttr("equation", "...qd,...kd");
  inferNode(*einsum);
  // Implicit output: the ellipsis dims, then the letters used once (k, q) in order.
  EXPECT_EQ(einsum->result()->type().str(), "f32[batch, 12, kv, seq]");
}

TEST(InferLinearAlgebra, ConvPatchEmbeddingWithSymbolicBatch) {
  Graph g;
  Value *x = g.addInput("x", f32({Dim::symbol("batch"), 3, 32, 32}));
  Value *w = g.addInput("w", f32({96, 3, 8, 8}));
  Node *conv = g.createNode(OpKind::Conv, {x, w}, 1, "patch");
  conv->setAttr("strides", std::vector<int64_t>{8, 8});
  inferNode(*conv);
  EXPECT_EQ(conv->result()->type().str(), "f32[batch, 96, 4, 4]");

  Value *seqInput = g.addInput("s", f32({1, 4, Dim::symbol("len") * Dim(8)}));
  Value *w1 = g.addInput("w1", f32({2, 4, 8}));
  Node *conv1d = g.createNode(OpKind::Conv, {seqInput, w1}, 1, "conv1d");
  conv1d->setAttr("strides", std::vector<int64_t>{8});
  inferNode(*conv1d);
  EXPECT_EQ(conv1d->result()->type().str(), "f32[1, 2, len]");

  Value *wrongChannels = g.addInput("w2", f32({96, 4, 8, 8}));
  Node *bad = g.createNode(OpKind::Conv, {x, wrongChannels}, 1, "bad");
  EXPECT_THROW(inferNode(*bad), Error);
}
