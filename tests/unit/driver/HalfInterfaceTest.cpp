//===- tests/unit/driver/HalfInterfaceTest.cpp - f32 interface of a half model -===//
//
// widenHalfInterface (driver/HalfInterface.h): after widen-half-precision a
// half decoder's cache goes from past to present with no Cast between them
// (so the cache pair proof sees the plain Concat) and its inputs and outputs
// are f32; on a graph the pass has not seen, the half values are rounded
// where they are read and widened where they leave, so the outputs are the
// original's bit for bit.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "driver/HalfInterface.h"
#include "ir/eval/Evaluator.h"
#include "passes/PassManager.h"
#include "passes/PassRegistry.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace onnxc;
using namespace onnxc::test;
using lowertest::parseGraph;
using lowertest::randomOf;

namespace {

const char *const kHalfDecoder = R"(
graph @step(%x: f16[b, s, 4], %past: f16[b, p, 4]) -> (%logits: f16[b, s, 3], %present: f16[b, p + s, 4]) {
  const %w: f16[4, 3] = dense<[1.0, 0.5, -0.25, 2.0, 1.5, 1.0, 0.125, -3.0, 4.0, 1.0, 1.0, -1.0]>
  %present = Concat(%past, %x) {axis = 1}
  %h = Tanh(%x)
  %logits = MatMul(%h, %w)
  return %logits, %present
}
)";

size_t countCasts(const Graph &graph) { return graph.nodesOfKind(OpKind::Cast).size(); }

/// f16 feeds for the decoder at b = 2, s = 3, p = 5, and the same values in f32.
std::pair<std::map<std::string, Tensor>, std::map<std::string, Tensor>> decoderFeeds() {
  std::map<std::string, Tensor> half, wide;
  unsigned seed = 7;
  for (auto [name, dims] :
       {std::pair<const char *, std::vector<int64_t>>{"x", {2, 3, 4}}, {"past", {2, 5, 4}}}) {
    Tensor values = randomOf(DType::F16, dims, seed++);
    Tensor widened(DType::F32, dims);
    for (int64_t i = 0; i < values.numElements(); ++i)
      widened.data<float>()[i] = halfToFloat(values.data<uint16_t>()[i]);
    half.emplace(name, values);
    wide.emplace(name, widened);
  }
  return {half, wide};
}

TEST(HalfInterface, WidenedDecoderHasAnF32InterfaceAndNoCastBetweenPastAndPresent) {
  std::unique_ptr<Graph> graph = parseGraph(kHalfDecoder);
  PassManager pm;
  pm.addPass("widen-half-precision");
  pm.run(*graph);
  EXPECT_EQ(countCasts(*graph), 4u); // two widenings in, two roundings out
  std::string report = widenHalfInterface(*graph);
  EXPECT_EQ(report, "f32 interface: 2 inputs and 2 outputs were f16");
  EXPECT_EQ(countCasts(*graph), 0u);
  for (const Value *input : graph->inputs())
    EXPECT_EQ(input->dtype(), DType::F32) << input->name();
  for (const GraphOutput &output : graph->outputs())
    EXPECT_EQ(output.value->dtype(), DType::F32) << output.name;
  const Node *concat = graph->outputs()[1].value->definingNode();
  ASSERT_TRUE(concat && concat->kind() == OpKind::Concat);
  EXPECT_EQ(concat->operand(0), graph->inputs()[1]);

  // The f32 graph computes the half one's values before their rounding.
  auto [half, wide] = decoderFeeds();
  std::vector<Tensor> want = evaluateGraph(*parseGraph(kHalfDecoder), half);
  std::vector<Tensor> got = evaluateGraph(*graph, wide);
  for (size_t i = 0; i < want.size(); ++i)
    for (int64_t e = 0; e < want[i].numElements(); ++e) {
      float expected = halfToFloat(want[i].data<uint16_t>()[e]);
      EXPECT_NEAR(got[i].data<float>()[e], expected, 1e-3 * (1 + std::fabs(expected)))
          << "output " << i << " element " << e;
    }
}

TEST(HalfInterface, UnwidenedGraphRoundsWhereItReadsAndGivesTheSameBits) {
  std::unique_ptr<Graph> graph = parseGraph(kHalfDecoder);
  EXPECT_FALSE(widenHalfInterface(*graph).empty());
  auto [half, wide] = decoderFeeds();
  std::vector<Tensor> want = evaluateGraph(*parseGraph(kHalfDecoder), half);
  std::vector<Tensor> got = evaluateGraph(*graph, wide);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(got[i].dtype(), DType::F32);
    for (int64_t e = 0; e < want[i].numElements(); ++e)
      EXPECT_EQ(got[i].data<float>()[e], halfToFloat(want[i].data<uint16_t>()[e]))
          << "output " << i << " element " << e;
  }
}

TEST(HalfInterface, F32GraphIsLeftAlone) {
  std::unique_ptr<Graph> graph =
      parseGraph("graph @g(%x: f32[2]) -> (%y: f32[2]) {\n  %y = Tanh(%x)\n  return %y\n}\n");
  EXPECT_EQ(widenHalfInterface(*graph), "");
  EXPECT_EQ(countCasts(*graph), 0u);
}

} // namespace
