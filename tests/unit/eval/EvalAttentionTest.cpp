//===- tests/unit/eval/EvalAttentionTest.cpp - Attention and RotaryEmbedding ---===//
//
// The kernel is checked against a plain softmax(Q Kᵀ · scale + bias) V
// written here element by element, on small random inputs.
//
//===----------------------------------------------------------------------===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace onnxc;
using namespace onnxc::test;

namespace {

/// Expected attention for 4-D Q [B,Hq,S,D], K/V [B,Hkv,T,D]: `bias(i, j)` is
/// added to the scaled scores (use -inf to mask).
template <typename Bias>
std::vector<double> expectedAttention(const Tensor &q, const Tensor &k, const Tensor &v,
                                      double scale, Bias bias) {
  int64_t batch = q.dims()[0], qHeads = q.dims()[1], qSeq = q.dims()[2], size = q.dims()[3];
  int64_t kvHeads = k.dims()[1], kvSeq = k.dims()[2], vSize = v.dims()[3];
  std::vector<double> out;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t h = 0; h < qHeads; ++h) {
      int64_t kh = h / (qHeads / kvHeads);
      for (int64_t i = 0; i < qSeq; ++i) {
        std::vector<double> weights;
        double total = 0;
        for (int64_t j = 0; j < kvSeq; ++j) {
          double s = 0;
          for (int64_t d = 0; d < size; ++d)
            s += double(q.data<float>()[((b * qHeads + h) * qSeq + i) * size + d]) *
                 k.data<float>()[((b * kvHeads + kh) * kvSeq + j) * size + d];
          weights.push_back(std::exp(s * scale + bias(i, j)));
          total += weights.back();
        }
        for (int64_t d = 0; d < vSize; ++d) {
          double y = 0;
          for (int64_t j = 0; j < kvSeq; ++j)
            y += weights[size_t(j)] / total *
                 v.data<float>()[((b * kvHeads + kh) * kvSeq + j) * vSize + d];
          out.push_back(y);
        }
      }
    }
  return out;
}

const double kMinusInf = -std::numeric_limits<double>::infinity();

} // namespace

TEST(EvalAttention, FourDimensionalMatchesSoftmaxQKV) {
  Tensor q = randomTensor({2, 2, 3, 4}, 1), k = randomTensor({2, 2, 5, 4}, 2);
  Tensor v = randomTensor({2, 2, 5, 6}, 3);
  Graph g;
  Node *n = makeNode(g, OpKind::Attention, {&q, &k, &v});
  Tensor y = runKernel(*n, {&q, &k, &v})[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{2, 2, 3, 6}));
  expectNear(y, expectedAttention(q, k, v, 0.5, [](int64_t, int64_t) { return 0.0; }));
  n->setAttr("scale", 0.1f);
  expectNear(runKernel(*n, {&q, &k, &v})[0],
             expectedAttention(q, k, v, double(0.1f), [](int64_t, int64_t) { return 0.0; }));
}

TEST(EvalAttention, ThreeDimensionalSplitsHeads) {
  // Q [1, 3, 2 heads * 4], K/V [1, 5, 2 heads * 4]; heads are contiguous in the last dim.
  Tensor q3 = randomTensor({1, 3, 8}, 4), k3 = randomTensor({1, 5, 8}, 5),
         v3 = randomTensor({1, 5, 8}, 6);
  auto toHeads = [](const Tensor &t) {
    int64_t seq = t.dims()[1];
    Tensor out(DType::F32, {1, 2, seq, 4});
    for (int64_t s = 0; s < seq; ++s)
      for (int64_t h = 0; h < 2; ++h)
        for (int64_t d = 0; d < 4; ++d)
          out.data<float>()[(h * seq + s) * 4 + d] = t.data<float>()[s * 8 + h * 4 + d];
    return out;
  };
  Tensor q = toHeads(q3), k = toHeads(k3), v = toHeads(v3);
  std::vector<double> heads = expectedAttention(q, k, v, 0.5, [](int64_t, int64_t) { return 0.0; });
  std::vector<double> expected(24);
  for (int64_t h = 0; h < 2; ++h)
    for (int64_t s = 0; s < 3; ++s)
      for (int64_t d = 0; d < 4; ++d)
        expected[size_t(s * 8 + h * 4 + d)] = heads[size_t((h * 3 + s) * 4 + d)];
  Graph g;
  Node *n = makeNode(g, OpKind::Attention, {&q3, &k3, &v3});
  EXPECT_THROW(runKernel(*n, {&q3, &k3, &v3}), Error); // head counts are required
  n->setAttr("q_num_heads", 2);
  n->setAttr("kv_num_heads", 2);
  Tensor y = runKernel(*n, {&q3, &k3, &v3})[0];
  EXPECT_EQ(y.dims(), (std::vector<int64_t>{1, 3, 8}));
  expectNear(y, expected);
}

TEST(EvalAttention, CausalAndBoolMask) {
  Tensor q = randomTensor({1, 2, 4, 4}, 7), k = randomTensor({1, 2, 4, 4}, 8),
         v = randomTensor({1, 2, 4, 4}, 9);
  Graph g;
  Node *n = makeNode(g, OpKind::Attention, {&q, &k, &v});
  n->setAttr("is_causal", 1);
  expectNear(runKernel(*n, {&q, &k, &v})[0],
             expectedAttention(q, k, v, 0.5,
                               [](int64_t i, int64_t j) { return j > i ? kMinusInf : 0.0; }));

  // Bool mask [q, kv]: true attends.
  Tensor mask(DType::Bool, {4, 4});
  for (int64_t i = 0; i < 16; ++i)
    mask.data<uint8_t>()[i] = (i % 3) != 1;
  Node *masked = makeNode(g, OpKind::Attention, {&q, &k, &v, &mask});
  expectNear(runKernel(*masked, {&q, &k, &v, &mask})[0],
             expectedAttention(q, k, v, 0.5, [&](int64_t i, int64_t j) {
               return mask.data<uint8_t>()[i * 4 + j] ? 0.0 : kMinusInf;
             }));

  // Float mask broadcast from [kv] is added to the scores.
  Tensor additive = randomTensor({4}, 10);
  expectNear(runKernel(*masked, {&q, &k, &v, &additive})[0],
             expectedAttention(q, k, v, 0.5, [&](int64_t, int64_t j) {
               return double(additive.data<float>()[j]);
             }));
}

TEST(EvalAttention, GroupQueryAttention) {
  Tensor q = randomTensor({1, 4, 3, 4}, 11), k = randomTensor({1, 2, 3, 4}, 12),
         v = randomTensor({1, 2, 3, 4}, 13);
  Graph g;
  Node *n = makeNode(g, OpKind::Attention, {&q, &k, &v});
  expectNear(runKernel(*n, {&q, &k, &v})[0],
             expectedAttention(q, k, v, 0.5, [](int64_t, int64_t) { return 0.0; }));
  Tensor k3 = randomTensor({1, 3, 3, 4}, 14);
  EXPECT_THROW(runKernel(*n, {&q, &k3, &k3}), Error); // 4 heads over 3 kv heads
}

TEST(EvalAttention, PastCacheWithCausalOffsetAndQkOutput) {
  Tensor q = randomTensor({1, 2, 2, 4}, 15), k = randomTensor({1, 2, 2, 4}, 16),
         v = randomTensor({1, 2, 2, 4}, 17);
  Tensor pastK = randomTensor({1, 2, 3, 4}, 18), pastV = randomTensor({1, 2, 3, 4}, 19);
  auto concat = [](const Tensor &past, const Tensor &now) {
    Tensor out(DType::F32, {1, 2, 5, 4});
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t s = 0; s < 5; ++s)
        for (int64_t d = 0; d < 4; ++d)
          out.data<float>()[(h * 5 + s) * 4 + d] = s < 3
                                                       ? past.data<float>()[(h * 3 + s) * 4 + d]
                                                       : now.data<float>()[(h * 2 + s - 3) * 4 + d];
    return out;
  };
  Tensor allK = concat(pastK, k), allV = concat(pastV, v);
  Graph g;
  Node *n = makeNode(g, OpKind::Attention, {&q, &k, &v, nullptr, &pastK, &pastV}, 4);
  n->setAttr("is_causal", 1);
  std::vector<Tensor> out = runKernel(*n, {&q, &k, &v, nullptr, &pastK, &pastV});
  // Query i sits at absolute position 3 + i, so it sees keys 0 .. 3 + i.
  expectNear(out[0], expectedAttention(q, allK, allV, 0.5, [](int64_t i, int64_t j) {
               return j > i + 3 ? kMinusInf : 0.0;
             }));
  EXPECT_TRUE(out[1].identicalTo(allK));
  EXPECT_TRUE(out[2].identicalTo(allV));
  ASSERT_EQ(out[3].dims(), (std::vector<int64_t>{1, 2, 2, 5}));
  double raw = 0; // mode 0: scaled scores before the causal mask
  for (int64_t d = 0; d < 4; ++d)
    raw += double(q.data<float>()[4 + d]) * allK.data<float>()[4 * 4 + d];
  EXPECT_NEAR(out[3].data<float>()[1 * 5 + 4], raw * 0.5, 1e-5);
}

TEST(EvalRotaryEmbedding, MatchesManualRotation) {
  Tensor x = randomTensor({1, 2, 3, 4}, 20);
  Tensor cosCache = randomTensor({5, 2}, 21), sinCache = randomTensor({5, 2}, 22);
  Tensor positions = Tensor::fromVector<int64_t>({1, 3}, {4, 0, 2});
  Graph g;
  Node *n = makeNode(g, OpKind::RotaryEmbedding, {&x, &cosCache, &sinCache, &positions});
  for (bool interleaved : {false, true}) {
    n->setAttr("interleaved", int64_t(interleaved));
    Tensor y = runKernel(*n, {&x, &cosCache, &sinCache, &positions})[0];
    std::vector<double> expected(24);
    for (int64_t h = 0; h < 2; ++h)
      for (int64_t s = 0; s < 3; ++s) {
        const float *in = x.data<float>() + (h * 3 + s) * 4;
        int64_t pos = positions.data<int64_t>()[s];
        for (int64_t i = 0; i < 2; ++i) {
          double c = cosCache.data<float>()[pos * 2 + i], sn = sinCache.data<float>()[pos * 2 + i];
          int64_t a = interleaved ? 2 * i : i, b = interleaved ? 2 * i + 1 : i + 2;
          expected[size_t((h * 3 + s) * 4 + a)] = in[a] * c - in[b] * sn;
          expected[size_t((h * 3 + s) * 4 + b)] = in[a] * sn + in[b] * c;
        }
      }
    expectNear(y, expected);
  }
}

TEST(EvalRotaryEmbedding, PartialRotationThreeDimensionalNoPositions) {
  // X [1, 2, 2 heads * 4], rotate the first 2 of each head, caches [batch, seq, 1].
  Tensor x = randomTensor({1, 2, 8}, 23);
  Tensor cosCache = randomTensor({1, 2, 1}, 24), sinCache = randomTensor({1, 2, 1}, 25);
  Graph g;
  Node *n = makeNode(g, OpKind::RotaryEmbedding, {&x, &cosCache, &sinCache});
  EXPECT_THROW(runKernel(*n, {&x, &cosCache, &sinCache}), Error); // num_heads needed
  n->setAttr("num_heads", 2);
  n->setAttr("rotary_embedding_dim", 2);
  Tensor y = runKernel(*n, {&x, &cosCache, &sinCache})[0];
  std::vector<double> expected(16);
  for (int64_t s = 0; s < 2; ++s)
    for (int64_t h = 0; h < 2; ++h) {
      const float *in = x.data<float>() + s * 8 + h * 4;
      double c = cosCache.data<float>()[s], sn = sinCache.data<float>()[s];
      double *out = expected.data() + s * 8 + h * 4;
      out[0] = in[0] * c - in[1] * sn;
      out[1] = in[0] * sn + in[1] * c;
      out[2] = in[2];
      out[3] = in[3];
    }
  expectNear(y, expected);
  n->setAttr("rotary_embedding_dim", 3);
  EXPECT_THROW(runKernel(*n, {&x, &cosCache, &sinCache}), Error);
}

TEST(InferAttention, SymbolicShapesWithPast) {
  Graph g;
  Dim batch = Dim::symbol("batch"), seq = Dim::symbol("seq"), past = Dim::symbol("past");
  Value *q = g.addInput("q", f32({batch, seq, 64}));
  Value *k = g.addInput("k", f32({batch, seq, 32}));
  Value *v = g.addInput("v", f32({batch, seq, 32}));
  Value *pastK = g.addInput("pk", f32({batch, 2, past, 16}));
  Value *pastV = g.addInput("pv", f32({batch, 2, past, 16}));
  Node *n = g.createNode(OpKind::Attention, {q, k, v, nullptr, pastK, pastV}, 4, "gqa");
  n->setAttr("q_num_heads", 4);
  n->setAttr("kv_num_heads", 2);
  inferNode(*n);
  EXPECT_EQ(n->result(0)->type().str(), "f32[batch, seq, 64]");
  EXPECT_EQ(n->result(1)->type().str(), "f32[batch, 2, past+seq, 16]");
  EXPECT_EQ(n->result(3)->type().str(), "f32[batch, 4, seq, past+seq]");

  Value *q4 = g.addInput("q4", f32({batch, 8, seq, 64}));
  Value *k4 = g.addInput("k4", f32({batch, 8, Dim::symbol("kv"), 32}));
  Node *bad = g.createNode(OpKind::Attention, {q4, k4, k4}, 1, "bad");
  try {
    inferNode(*bad);
    ADD_FAILURE() << "no error";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("node 'bad'"), std::string::npos) << e.what();
  }

  Value *x = g.addInput("x", f32({batch, 8, seq, 64}));
  Value *cache = g.addInput("cache", f32({128, 32}));
  Node *rope = g.createNode(OpKind::RotaryEmbedding, {x, cache, cache}, 1, "rope");
  inferNode(*rope);
  EXPECT_EQ(rope->result()->type().str(), "f32[batch, 8, seq, 64]");
}
