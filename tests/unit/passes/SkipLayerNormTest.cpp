//===- tests/unit/passes/SkipLayerNormTest.cpp - The SkipLayerNormalization op ----===//
//
// onnxc's SkipLayerNormalization (made by fuse-skip-layernorm): the reference
// kernel against LayerNormalization of the sum, the shape rule, and the
// compiled row kernel against the reference at row lengths around the
// vector width, with and without bias and the sum result.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

using namespace onnxc;
using namespace onnxc::test;
using lowertest::expectCompiledMatchesReference;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;

namespace {

TEST(SkipLayerNorm, EvaluatorIsLayerNormOfTheSum) {
  Tensor x = randomTensor({2, 3, 5}, 1), skip = randomTensor({2, 3, 5}, 2);
  Tensor gamma = randomTensor({5}, 3), beta = randomTensor({5}, 4);
  Tensor sum = runOp(OpKind::Add, {x, skip});
  AttributeMap attrs = {{"epsilon", 1e-3f}};
  Tensor expected = runOp(OpKind::LayerNormalization, {sum, gamma, beta}, attrs);
  std::vector<Tensor> got =
      runOpResults(OpKind::SkipLayerNormalization, {x, skip, gamma, beta}, attrs, 2);
  EXPECT_EQ(values<float>(got[0]), values<float>(expected));
  EXPECT_EQ(values<float>(got[1]), values<float>(sum));
  // Without bias, one result.
  Tensor noBias = runOp(OpKind::LayerNormalization, {sum, gamma}, attrs);
  EXPECT_EQ(values<float>(runOp(OpKind::SkipLayerNormalization, {x, skip, gamma}, attrs)),
            values<float>(noBias));
}

TEST(SkipLayerNorm, EvaluatorRejectsBroadcastingAndOtherAxes) {
  Tensor x = randomTensor({2, 4}, 1), gamma = randomTensor({4}, 3);
  EXPECT_THROW(runOp(OpKind::SkipLayerNormalization, {x, randomTensor({1, 4}, 2), gamma}), Error);
  EXPECT_THROW(runOp(OpKind::SkipLayerNormalization, {x, x, randomTensor({2, 4}, 2)},
                     {{"axis", int64_t(0)}}),
               Error);
}

TEST(SkipLayerNorm, ShapeRuleTypesBothResultsLikeTheInput) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[n, s, 8], %h: f32[n, s, 8], %g: f32[8]) -> (%y: f32[n, s, 8], %sum: f32[n, s, 8]) {
  %y, %sum = SkipLayerNormalization(%x, %h, %g) {axis = -1, epsilon = 1e-5}
  return %y, %sum
}
)");
  for (const GraphOutput &output : graph->outputs())
    EXPECT_EQ(output.value->type().str(), "f32[n, s, 8]");
  EXPECT_THROW(parseGraph(R"(
graph @g(%x: f32[2, 8], %h: f32[1, 8], %g: f32[8]) -> (%y: f32[2, 8]) {
  %y = SkipLayerNormalization(%x, %h, %g)
  return %y
}
)"),
               Error);
  EXPECT_THROW(parseGraph(R"(
graph @g(%x: f32[4, 8], %h: f32[4, 8], %g: f32[4, 8]) -> (%y: f32[4, 8]) {
  %y = SkipLayerNormalization(%x, %h, %g) {axis = 0}
  return %y
}
)"),
               Error);
}

/// A SkipLayerNormalization over rows of `rowDim` (constant or symbolic).
std::string skipGraph(const std::string &rowDim, bool bias, bool sum) {
  std::string t = "f32[n, 3, " + rowDim + "]";
  std::string text = "graph @g(%x: " + t + ", %h: " + t + ", %g: f32[" + rowDim + "]" +
                     (bias ? ", %b: f32[" + rowDim + "]" : "") + ") -> (%y: " + t +
                     (sum ? ", %s: " + t : "") + ") {\n";
  text += std::string("  %y") + (sum ? ", %s" : "") + " = SkipLayerNormalization(%x, %h, %g" +
          (bias ? ", %b" : "") + ") {axis = -1, epsilon = 1e-5}\n";
  return text + "  return %y" + (sum ? ", %s" : "") + "\n}\n";
}

TEST(SkipLayerNorm, CompiledMatchesReferenceAroundTheVectorWidth) {
  for (int64_t length : {1, 7, 8, 9, 31, 64, 100, 384}) {
    for (bool bias : {false, true}) {
      for (bool sum : {false, true}) {
        for (bool symbolic : {false, true}) {
          SCOPED_TRACE("length " + std::to_string(length) + (bias ? " bias" : "") +
                       (sum ? " sum" : "") + (symbolic ? " symbolic" : ""));
          auto graph = parseGraph(skipGraph(symbolic ? "m" : std::to_string(length), bias, sum));
          std::map<std::string, Tensor> inputs = {
              {"x", randomOf(DType::F32, {2, 3, length}, 1)},
              {"h", randomOf(DType::F32, {2, 3, length}, 2, -3.0, 5.0)},
              {"g", randomOf(DType::F32, {length}, 3)}};
          if (bias)
            inputs.emplace("b", randomOf(DType::F32, {length}, 4));
          expectCompiledMatchesReference(*graph, inputs);
        }
      }
    }
  }
}

TEST(SkipLayerNorm, CompiledOnTwoThreadsWithManyRows) {
  auto graph = parseGraph(skipGraph("384", true, true));
  std::map<std::string, Tensor> inputs = {{"x", randomOf(DType::F32, {7, 3, 384}, 1)},
                                          {"h", randomOf(DType::F32, {7, 3, 384}, 2)},
                                          {"g", randomOf(DType::F32, {384}, 3)},
                                          {"b", randomOf(DType::F32, {384}, 4)}};
  expectCompiledMatchesReference(*graph, inputs, 1e-4, 1e-6, /*threads=*/2);
}

TEST(SkipLayerNorm, LoweringRefusesWhatItCannotCompile) {
  // f64 and a broadcast scale are the evaluator's only; the pass never makes them.
  EXPECT_THROW(lowerOnly(*parseGraph(R"(
graph @g(%x: f64[2, 8], %h: f64[2, 8], %g: f64[8]) -> (%y: f64[2, 8]) {
  %y = SkipLayerNormalization(%x, %h, %g)
  return %y
}
)")),
               Error);
  EXPECT_THROW(lowerOnly(*parseGraph(R"(
graph @g(%x: f32[2, 8], %h: f32[2, 8], %g: f32[1]) -> (%y: f32[2, 8]) {
  %y = SkipLayerNormalization(%x, %h, %g)
  return %y
}
)")),
               Error);
}

} // namespace
