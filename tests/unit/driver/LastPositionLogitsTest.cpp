//===- tests/unit/driver/LastPositionLogitsTest.cpp - Logits at the last position -===//
//
// keepLastPositionLogits (driver/LastPositionLogits.h): the rewritten graph's
// logits are the last row of the original's at every sequence length, through
// the position-wise chains decoders end in; a chain value read elsewhere, or
// an op that mixes positions, ends the chain at a Slice; a graph without
// [batch, seq, vocab] logits (none, a fixed length, the vocabulary first) is
// left alone.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "driver/LastPositionLogits.h"
#include "ir/eval/Evaluator.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;
using lowertest::parseGraph;
using lowertest::randomOf;

namespace {

/// The last position of a [batch, seq, vocab] tensor, as [batch, 1, vocab].
std::vector<float> lastRow(const Tensor &logits) {
  const std::vector<int64_t> &dims = logits.dims();
  std::vector<float> all = values<float>(logits), last;
  for (int64_t b = 0; b < dims[0]; ++b)
    for (int64_t v = 0; v < dims[2]; ++v)
      last.push_back(all[size_t((b * dims[1] + dims[1] - 1) * dims[2] + v)]);
  return last;
}

/// Random feeds for every input of `graph`, with b = 2 and s = `seq`.
std::map<std::string, Tensor> feedsFor(const Graph &graph, int64_t seq) {
  std::map<std::string, Tensor> feeds;
  unsigned seed = 1;
  for (const Value *input : graph.inputs()) {
    std::vector<int64_t> dims;
    for (const Dim &dim : input->shape().dims())
      dims.push_back(dim.constant() ? *dim.constant() : dim.symbolName() == "b" ? 2 : seq);
    feeds.emplace(input->name(), randomOf(DType::F32, dims, seed++, 0.5, 1.5));
  }
  return feeds;
}

/// Rewrites a copy of `text`'s graph and checks its logits (output 0) against the
/// original's last row at several lengths; returns the rewrite's report.
std::string expectLastRowsAgree(const std::string &text) {
  std::unique_ptr<Graph> original = parseGraph(text);
  std::unique_ptr<Graph> rewritten = parseGraph(text);
  std::string report = keepLastPositionLogits(*rewritten);
  EXPECT_FALSE(report.empty());
  EXPECT_EQ(rewritten->outputs()[0].value->shape().dims()[1].constant(), 1)
      << rewritten->outputs()[0].value->type().str();
  for (int64_t seq : {1, 2, 7}) {
    std::map<std::string, Tensor> feeds = feedsFor(*original, seq);
    std::vector<Tensor> want = evaluateGraph(*original, feeds);
    std::vector<Tensor> got = evaluateGraph(*rewritten, feeds);
    EXPECT_EQ(got[0].dims(), (std::vector<int64_t>{2, 1, want[0].dims()[2]})) << "seq " << seq;
    std::vector<float> expected = lastRow(want[0]), actual = values<float>(got[0]);
    EXPECT_EQ(actual.size(), expected.size());
    if (actual.size() != expected.size())
      break;
    for (size_t i = 0; i < actual.size(); ++i)
      EXPECT_NEAR(actual[i], expected[i], 1e-5f * (1 + std::abs(expected[i]))) << "seq " << seq;
    for (size_t o = 1; o < want.size(); ++o)
      EXPECT_EQ(values<float>(got[o]), values<float>(want[o])) << "output " << o;
  }
  return report;
}

TEST(LastPositionLogits, NormHeadBiasAndSoftcapTakeTheLastPosition) {
  std::string report = expectLastRowsAgree(R"(
graph @g(%x: f32[b, s, 4], %r: f32[b, s, 4], %w: f32[4, 6], %g: f32[4], %bias: f32[6],
         %cap: f32[]) -> (%logits: f32[b, s, 6]) {
  %n, %sum = SkipLayerNormalization(%x, %r, %g) {axis = -1, epsilon = 1e-5}
  %h = MatMul(%n, %w)
  %hb = Add(%h, %bias)
  %d = Div(%hb, %cap)
  %t = Tanh(%d)
  %logits = Mul(%t, %cap)
  return %logits
}
)");
  EXPECT_NE(report.find("SkipLayerNormalization"), std::string::npos) << report;
  EXPECT_NE(report.find("MatMul"), std::string::npos) << report;
}

TEST(LastPositionLogits, QuantizedHeadsTakeTheLastPosition) {
  // onnxruntime-genai's int4 LM head (MatMulNBits, fused at -O2) and a static
  // QDQ head: their weights and scales are the same at every position.
  std::string report = expectLastRowsAgree(R"(
graph @g(%x: f32[b, s, 4], %g: f32[4]) -> (%logits: f32[b, s, 6]) {
  const %w: i4[4, 6] = dense<[-8, 7, 3, -2, 0, 5, 1, -1, 6, -7, 2, 4, -3, 3, -5, 7, -6, 1, 0, -4, 2, 6, -8, 5]>
  const %ws: f32[1, 6] = dense<[0.5, 0.25, 1.0, 0.75, 0.125, 2.0]>
  const %qs: f32[] = dense<0.02>
  const %qz: u8[] = dense<128>
  const %qw: i8[4, 6] = dense<[-128, 127, 3, -2, 0, 5, 100, -1, 6, -7, 2, 4, -3, 3, -50, 7, -6, 1, 0, -4, 2, 6, -8, 90]>
  const %qws: f32[] = dense<0.01>
  %n = RMSNormalization(%x, %g) {axis = -1, epsilon = 1e-5}
  %h = BlockQuantizedMatMul(%n, %w, %ws) {block_size = 16}
  %q = QuantizedMatMul(%x, %qs, %qz, %qw, %qws)
  %logits = Add(%h, %q)
  return %logits
}
)");
  EXPECT_NE(report.find("(RMSNormalization, BlockQuantizedMatMul, QuantizedMatMul, Add on"),
            std::string::npos)
      << report;
}

TEST(LastPositionLogits, ADynamicallyQuantizedHeadKeepsEveryPosition) {
  // DynamicQuantizedMatMul quantizes A with one scale from all of its
  // positions: on the last position alone that scale, and the logits, would
  // differ. The chain ends at a Slice of its result.
  std::string report = expectLastRowsAgree(R"(
graph @g(%x: f32[b, s, 4], %r: f32[b, s, 4]) -> (%logits: f32[b, s, 6]) {
  const %w: i8[4, 6] = dense<[-128, 127, 3, -2, 0, 5, 100, -1, 6, -7, 2, 4, -3, 3, -50, 7, -6, 1, 0, -4, 2, 6, -8, 90]>
  const %ws: f32[] = dense<0.01>
  %n = Add(%x, %r)
  %logits = DynamicQuantizedMatMul(%n, %w, %ws)
  return %logits
}
)");
  EXPECT_EQ(report.find("DynamicQuantizedMatMul"), std::string::npos) << report;
  EXPECT_NE(report.find("Slice"), std::string::npos) << report;
}

TEST(LastPositionLogits, AValueReadElsewhereEndsTheChainAtASlice) {
  // %n is also an output (hidden states): the head takes a Slice of it, and the
  // hidden states stay whole.
  std::string report = expectLastRowsAgree(R"(
graph @g(%x: f32[b, s, 4], %r: f32[b, s, 4], %w: f32[4, 6]) -> (%logits: f32[b, s, 6],
                                                                  %n: f32[b, s, 4]) {
  %n = Add(%x, %r)
  %logits = MatMul(%n, %w)
  return %logits, %n
}
)");
  EXPECT_NE(report.find("MatMul"), std::string::npos) << report;
  EXPECT_EQ(report.find("Add"), std::string::npos) << report;
}

TEST(LastPositionLogits, AnOpThatMixesPositionsEndsTheChainAtASlice) {
  // Softmax over the sequence, and a MatMul whose right side is a batch of matrices.
  for (const char *text : {R"(
graph @g(%x: f32[b, s, 4], %r: f32[b, s, 4], %w: f32[4, 6]) -> (%logits: f32[b, s, 6]) {
  %mixed = Softmax(%x) {axis = 1}
  %n = Add(%mixed, %r)
  %logits = MatMul(%n, %w)
  return %logits
}
)",
                           R"(
graph @g(%x: f32[b, s, 4], %r: f32[b, 4, 6]) -> (%logits: f32[b, s, 6]) {
  %n = Relu(%x)
  %logits = MatMul(%n, %r)
  return %logits
}
)"}) {
    std::string report = expectLastRowsAgree(text);
    EXPECT_EQ(report.find("Softmax"), std::string::npos) << report;
  }
}

TEST(LastPositionLogits, GraphsWithoutSequenceLogitsAreLeftAlone) {
  for (const char *text : {R"(
graph @g(%x: f32[b, s, 4]) -> (%hidden: f32[b, s, 4]) {
  %hidden = Relu(%x)
  return %hidden
}
)",
                           R"(
graph @g(%x: f32[b, 1, 4]) -> (%logits: f32[b, 1, 4]) {
  %logits = Relu(%x)
  return %logits
}
)",
                           R"(
graph @g(%x: f32[b, 4, s]) -> (%logits: f32[b, 4, s]) {
  %logits = Relu(%x)
  return %logits
}
)"}) {
    std::unique_ptr<Graph> graph = parseGraph(text);
    EXPECT_EQ(keepLastPositionLogits(*graph), "");
    EXPECT_EQ(countKind(*graph, OpKind::Slice), 0u);
  }
}

} // namespace
