//===- tests/unit/eval/EvalRecurrentTest.cpp - LSTM, GRU, RNN kernels and rules -===//
#include "TestUtil.h"

#include "ir/Error.h"
#include "ir/Graph.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace onnxc;
using namespace onnxc::test;

namespace {

double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

/// Row `row` of a [1, rows, cols] weight times `vec`.
double dotRow(const Tensor &w, int64_t row, const std::vector<double> &vec) {
  int64_t cols = w.dims()[2];
  double sum = 0;
  for (int64_t k = 0; k < cols; ++k)
    sum += w.data<float>()[row * cols + k] * vec[size_t(k)];
  return sum;
}

} // namespace

TEST(EvalLSTM, OneStepMatchesHandComputedGates) {
  const int64_t hidden = 3, input = 2;
  Tensor x = randomTensor({1, 1, input}, 1);
  Tensor w = randomTensor({1, 4 * hidden, input}, 2), r = randomTensor({1, 4 * hidden, hidden}, 3);
  Tensor b = randomTensor({1, 8 * hidden}, 4), h0 = randomTensor({1, 1, hidden}, 5);
  Tensor c0 = randomTensor({1, 1, hidden}, 6), p = randomTensor({1, 3 * hidden}, 7);
  Graph g;
  Node *n = makeNode(g, OpKind::LSTM, {&x, &w, &r, &b, nullptr, &h0, &c0, &p}, 3);
  n->setAttr("hidden_size", hidden);
  std::vector<Tensor> out = runKernel(*n, {&x, &w, &r, &b, nullptr, &h0, &c0, &p});

  std::vector<double> xv = asDoubles(x), hv = asDoubles(h0), cv = asDoubles(c0);
  std::vector<double> bv = asDoubles(b), pv = asDoubles(p);
  std::vector<double> expectedH, expectedC;
  for (int64_t j = 0; j < hidden; ++j) {
    // W/R/B rows are in gate order input, output, forget, cell.
    auto gate = [&](int64_t index) {
      int64_t row = index * hidden + j;
      return dotRow(w, row, xv) + dotRow(r, row, hv) + bv[size_t(row)] +
             bv[size_t(4 * hidden + row)];
    };
    double in = sigmoid(gate(0) + pv[size_t(j)] * cv[size_t(j)]);
    double forget = sigmoid(gate(2) + pv[size_t(2 * hidden + j)] * cv[size_t(j)]);
    double cell = std::tanh(gate(3));
    double c = forget * cv[size_t(j)] + in * cell;
    double o = sigmoid(gate(1) + pv[size_t(hidden + j)] * c);
    expectedH.push_back(o * std::tanh(c));
    expectedC.push_back(c);
  }
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{1, 1, 1, hidden}));
  expectNear(out[0], expectedH);
  expectNear(out[1], expectedH);
  expectNear(out[2], expectedC);
}

TEST(EvalGRU, OneStepBothResetVariants) {
  const int64_t hidden = 2, input = 3;
  Tensor x = randomTensor({1, 1, input}, 8);
  Tensor w = randomTensor({1, 3 * hidden, input}, 9), r = randomTensor({1, 3 * hidden, hidden}, 10);
  Tensor b = randomTensor({1, 6 * hidden}, 11), h0 = randomTensor({1, 1, hidden}, 12);
  std::vector<double> xv = asDoubles(x), hv = asDoubles(h0), bv = asDoubles(b);
  for (int64_t linearBeforeReset : {0, 1}) {
    Graph g;
    Node *n = makeNode(g, OpKind::GRU, {&x, &w, &r, &b, nullptr, &h0}, 2);
    n->setAttr("linear_before_reset", linearBeforeReset);
    std::vector<Tensor> out = runKernel(*n, {&x, &w, &r, &b, nullptr, &h0});
    // Gate order update (z), reset (r), candidate (h).
    std::vector<double> reset(hidden), update(hidden);
    for (int64_t j = 0; j < hidden; ++j) {
      update[size_t(j)] =
          sigmoid(dotRow(w, j, xv) + dotRow(r, j, hv) + bv[size_t(j)] + bv[size_t(3 * hidden + j)]);
      reset[size_t(j)] = sigmoid(dotRow(w, hidden + j, xv) + dotRow(r, hidden + j, hv) +
                                 bv[size_t(hidden + j)] + bv[size_t(4 * hidden + j)]);
    }
    std::vector<double> resetH = {reset[0] * hv[0], reset[1] * hv[1]};
    std::vector<double> expected;
    for (int64_t j = 0; j < hidden; ++j) {
      int64_t row = 2 * hidden + j;
      double recurrent =
          linearBeforeReset ? reset[size_t(j)] * (dotRow(r, row, hv) + bv[size_t(3 * hidden + row)])
                            : dotRow(r, row, resetH) + bv[size_t(3 * hidden + row)];
      double candidate = std::tanh(dotRow(w, row, xv) + bv[size_t(row)] + recurrent);
      expected.push_back((1 - update[size_t(j)]) * candidate + update[size_t(j)] * hv[size_t(j)]);
    }
    expectNear(out[0], expected);
    expectNear(out[1], expected);
  }
}

TEST(EvalRNN, SequenceLengthsBidirectionalAndLayout) {
  const int64_t seq = 3, batch = 2, input = 2, hidden = 2;
  Tensor x = randomTensor({seq, batch, input}, 13);
  Tensor w = randomTensor({2, hidden, input}, 14), r = randomTensor({2, hidden, hidden}, 15);
  Tensor lens = Tensor::fromVector<int32_t>({batch}, {3, 1});
  Graph g;
  Node *n = makeNode(g, OpKind::RNN, {&x, &w, &r, nullptr, &lens}, 2);
  n->setAttr("direction", "bidirectional");
  std::vector<Tensor> out = runKernel(*n, {&x, &w, &r, nullptr, &lens});
  ASSERT_EQ(out[0].dims(), (std::vector<int64_t>{seq, 2, batch, hidden}));
  const float *y = out[0].data<float>(), *yh = out[1].data<float>();
  auto yAt = [&](int64_t t, int64_t d, int64_t b, int64_t j) {
    return y[((t * 2 + d) * batch + b) * hidden + j];
  };
  for (int64_t j = 0; j < hidden; ++j) {
    // Row 1 has length 1: steps 1, 2 are zero in both directions.
    for (int64_t t = 1; t < seq; ++t)
      for (int64_t d = 0; d < 2; ++d)
        EXPECT_EQ(yAt(t, d, 1, j), 0.0f);
    // Forward Y_h is the last valid step; reverse Y_h is step 0.
    EXPECT_EQ(yh[(0 * batch + 0) * hidden + j], yAt(2, 0, 0, j));
    EXPECT_EQ(yh[(0 * batch + 1) * hidden + j], yAt(0, 0, 1, j));
    EXPECT_EQ(yh[(1 * batch + 0) * hidden + j], yAt(0, 1, 0, j));
    // One step from a zero state: tanh(W x).
    std::vector<double> x0 = {x.data<float>()[0], x.data<float>()[1]};
    EXPECT_NEAR(yAt(0, 0, 0, j), std::tanh(dotRow(w, j, x0)), 1e-6);
  }

  // layout = 1 takes and gives batch-major tensors with the same numbers.
  Tensor xBatchMajor(DType::F32, {batch, seq, input});
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t k = 0; k < input; ++k)
        xBatchMajor.data<float>()[(b * seq + t) * input + k] =
            x.data<float>()[(t * batch + b) * input + k];
  Node *batchMajor = makeNode(g, OpKind::RNN, {&xBatchMajor, &w, &r, nullptr, &lens}, 2);
  batchMajor->setAttr("direction", "bidirectional");
  batchMajor->setAttr("layout", 1);
  std::vector<Tensor> out1 = runKernel(*batchMajor, {&xBatchMajor, &w, &r, nullptr, &lens});
  ASSERT_EQ(out1[0].dims(), (std::vector<int64_t>{batch, seq, 2, hidden}));
  for (int64_t t = 0; t < seq; ++t)
    for (int64_t d = 0; d < 2; ++d)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t j = 0; j < hidden; ++j)
          EXPECT_EQ(out1[0].data<float>()[((b * seq + t) * 2 + d) * hidden + j], yAt(t, d, b, j));
}

TEST(EvalRNN, ActivationsAndErrors) {
  Tensor x = randomTensor({1, 1, 2}, 16), w = randomTensor({1, 2, 2}, 17),
         r = randomTensor({1, 2, 2}, 18);
  Graph g;
  Node *n = makeNode(g, OpKind::RNN, {&x, &w, &r}, 1);
  n->setAttr("activations", std::vector<std::string>{"LeakyRelu"});
  n->setAttr("activation_alpha", std::vector<float>{0.5f});
  std::vector<double> xv = asDoubles(x);
  Tensor y = runKernel(*n, {&x, &w, &r})[0];
  for (int64_t j = 0; j < 2; ++j) {
    double pre = dotRow(w, j, xv);
    EXPECT_NEAR(y.data<float>()[j], pre >= 0 ? pre : 0.5 * pre, 1e-6);
  }
  n->setAttr("activations", std::vector<std::string>{"Gelu"});
  EXPECT_THROW(runKernel(*n, {&x, &w, &r}), Error);
  n->removeAttr("activations");
  Tensor wrongW = randomTensor({1, 3, 2}, 19);
  EXPECT_THROW(runKernel(*n, {&x, &wrongW, &r}), Error);
  Tensor lens = Tensor::fromVector<int32_t>({1}, {5});
  EXPECT_THROW(runKernel(*n, {&x, &w, &r, nullptr, &lens}), Error);
}

TEST(InferRecurrent, SymbolicSequence) {
  Graph g;
  Dim seq = Dim::symbol("seq"), batch = Dim::symbol("batch");
  Value *x = g.addInput("x", f32({seq, batch, 16}));
  Value *w = g.addInput("w", f32({2, 128, 16}));
  Value *r = g.addInput("r", f32({2, 128, 32}));
  Node *lstm = g.createNode(OpKind::LSTM, {x, w, r}, 3, "lstm");
  lstm->setAttr("direction", "bidirectional");
  inferNode(*lstm);
  EXPECT_EQ(lstm->result(0)->type().str(), "f32[seq, 2, batch, 32]");
  EXPECT_EQ(lstm->result(1)->type().str(), "f32[2, batch, 32]");
  EXPECT_EQ(lstm->result(2)->type().str(), "f32[2, batch, 32]");

  Value *xb = g.addInput("xb", f32({batch, seq, 16}));
  Value *wg = g.addInput("wg", f32({1, 96, 16}));
  Value *rg = g.addInput("rg", f32({1, 96, 32}));
  Node *gru = g.createNode(OpKind::GRU, {xb, wg, rg}, 2, "gru");
  gru->setAttr("layout", 1);
  inferNode(*gru);
  EXPECT_EQ(gru->result(0)->type().str(), "f32[batch, seq, 1, 32]");
  EXPECT_EQ(gru->result(1)->type().str(), "f32[batch, 1, 32]");

  Node *wrongDirections = g.createNode(OpKind::GRU, {xb, wg, rg}, 1, "wrong");
  wrongDirections->setAttr("direction", "bidirectional");
  wrongDirections->setAttr("layout", 1);
  EXPECT_THROW(inferNode(*wrongDirections), Error);
}
