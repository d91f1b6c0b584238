//===- tests/unit/ir/ShapeAssumptionTest.cpp - What inference took on trust --===//
//
// Shape rules that give one symbolic type by relying on an unprovable fact
// record it (ir/shape/ShapeAssumption.h); the evaluator, the JIT and compiled
// libraries refuse inputs that break it. Before, the compiled path computed
// Add(x[seq], c[4]) at seq = 5 as if seq were 4 and returned a wrong answer.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "driver/InputSpecialization.h"
#include "ir/Error.h"
#include "ir/eval/Evaluator.h"
#include "ir/infer/ShapeInference.h"
#include "ir/text/Parser.h"
#include "ir/text/Printer.h"

#include <gtest/gtest.h>

#include <sstream>

using namespace onnxc;
using namespace onnxc::lowertest;

namespace {

Tensor ones(std::vector<int64_t> dims) {
  Tensor t(DType::F32, std::move(dims));
  for (int64_t i = 0; i < t.numElements(); ++i)
    t.data<float>()[i] = 1.0f;
  return t;
}

using onnxc::test::errorOf;

std::string printed(const Graph &graph) {
  std::ostringstream os;
  printGraph(graph, os);
  return os.str();
}

const char *kBroadcast = R"(
graph @b(%x: f32[seq]) -> (%y: unknown[*]) {
  const %c: f32[4] = dense<[0.0, 1.0, 2.0, 3.0]>
  %y = Add(%x, %c) loc("add")
  return %y
}
)";

} // namespace

TEST(ShapeAssumption, BroadcastAgainstAConstantIsCheckedOnEveryPath) {
  auto graph = lowertest::parseGraph(kBroadcast);
  ASSERT_EQ(graph->assumptions().size(), 1u);
  EXPECT_EQ(graph->assumptions()[0].message,
            "node 'add': the broadcast dimension seq must be 1 or 4");
  for (int64_t seq : {1, 4})
    expectCompiledMatchesReference(*graph, {{"x", ones({seq})}});
  std::string want =
      "node 'add': the broadcast dimension seq must be 1 or 4; the inputs give seq = 5";
  EXPECT_EQ(errorOf([&] { runReference(*graph, {{"x", ones({5})}}); }), want);
  EXPECT_EQ(errorOf([&] { runCompiled(*graph, {{"x", ones({5})}}); }), want);
}

TEST(ShapeAssumption, SymbolicContractionDimensionMustEqualTheWeights) {
  auto graph = lowertest::parseGraph(R"(
graph @m(%x: f32[2, k]) -> (%y: unknown[*]) {
  const %w: f32[4, 3] = dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>
  %y = MatMul(%x, %w) loc("mm")
  return %y
}
)");
  expectCompiledMatchesReference(*graph, {{"x", ones({2, 4})}});
  EXPECT_EQ(errorOf([&] {
              runCompiled(*graph, {{"x", ones({2, 5})}});
            }),
            "node 'mm': the matmul contraction dimension k must equal 4; the inputs give k = 5");
}

TEST(ShapeAssumption, LayerNormScaleMustCoverTheNormalizedDims) {
  auto graph = lowertest::parseGraph(R"(
graph @n(%x: f32[2, k]) -> (%y: unknown[*]) {
  const %g: f32[4] = dense<[1.0, 2.0, 3.0, 4.0]>
  %y = LayerNormalization(%x, %g) {axis = -1, epsilon = 1e-5} loc("ln")
  return %y
}
)");
  expectCompiledMatchesReference(*graph, {{"x", ones({2, 4})}});
  // k = 5 would read a fifth scale element past the 4 stored.
  EXPECT_NE(errorOf([&] {
              runCompiled(*graph, {{"x", ones({2, 5})}});
            }).find("node 'ln': the normalized dimension matching the scale k must equal 4"),
            std::string::npos);
}

TEST(ShapeAssumption, WhatIsProvableRecordsNothing) {
  auto graph = lowertest::parseGraph(R"(
graph @p(%x: f32[b, s, 4], %y: f32[b, s, 4], %one: f32[1, s, 1]) -> (%z: unknown[*]) {
  const %w: f32[4, 4] = dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]>
  %a = Add(%x, %y)
  %c = Mul(%a, %one)
  %z = MatMul(%c, %w)
  return %z
}
)");
  EXPECT_TRUE(graph->assumptions().empty()) << printed(*graph);
}

TEST(ShapeAssumption, ProvablyBrokenIsAnErrorAtOnce) {
  EXPECT_NE(errorOf([] {
              lowertest::parseGraph(R"(
graph @q(%x: f32[5]) -> (%y: unknown[*]) {
  const %c: f32[4] = dense<[1.0, 1.0, 1.0, 1.0]>
  %y = Add(%x, %c)
  return %y
}
)");
            }).find("cannot be broadcast"),
            std::string::npos);
}

TEST(ShapeAssumption, SurvivesTheNodeThatMadeIt) {
  // A fusion that replaces the Slice (as fuse-attention does with a stored
  // causal table) must not lose the fact that the table bounds the length.
  auto graph = lowertest::parseGraph(R"(
graph @s(%x: f32[seq]) -> (%y: unknown[*], %t: unknown[*]) {
  const %table: f32[8] = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]>
  const %zero: i64[1] = dense<[0]>
  %n = Shape(%x)
  %t = Slice(%table, %zero, %n) loc("cut")
  %y = Relu(%x)
  return %y, %t
}
)");
  ASSERT_EQ(graph->assumptions().size(), 1u);
  Value *sliced = graph->findValue("t");
  graph->setOutputValue(1, graph->findValue("y"));
  graph->eraseNode(sliced->definingNode());
  inferShapes(*graph);
  ASSERT_EQ(graph->assumptions().size(), 1u);
  EXPECT_EQ(errorOf([&] {
              runReference(*graph, {{"x", ones({9})}});
            }),
            "node 'cut': the slice end seq must be at most 8; the inputs give seq = 9");
  EXPECT_EQ(errorOf([&] { runReference(*graph, {{"x", ones({8})}}); }), "");
}

TEST(ShapeAssumption, SliceFromMinusALengthCountsFromTheEnd) {
  // HF T5's decoder with a KV cache keeps the last seq rows of a past+seq
  // position bias: Slice(bias, -seq, end). The start is negative as long as
  // seq is positive, which the run time checks.
  auto graph = lowertest::parseGraph(R"(
graph @s(%table: f32[rows], %x: f32[seq]) -> (%t: unknown[*]) {
  const %end: i64[1] = dense<[9223372036854775807]>
  %n = Shape(%x)
  %start = Neg(%n)
  %t = Slice(%table, %start, %end) loc("tail")
  return %t
}
)");
  EXPECT_EQ(graph->findValue("t")->shape().str(), "[seq]");
  Tensor table(DType::F32, {8});
  for (int64_t i = 0; i < 8; ++i)
    table.data<float>()[i] = float(i);
  std::vector<Tensor> results = runReference(*graph, {{"table", table}, {"x", ones({3})}});
  ASSERT_EQ(results.size(), 1u);
  ASSERT_EQ(results[0].dims(), std::vector<int64_t>{3});
  EXPECT_EQ(results[0].data<float>()[0], 5.0f);
  EXPECT_EQ(results[0].data<float>()[2], 7.0f);
  // At seq = 0 the start is 0 (the whole table, not its last 0 rows): refused.
  EXPECT_EQ(errorOf([&] {
              runReference(*graph, {{"table", table}, {"x", ones({0})}});
            }),
            "node 'tail': the slice start -seq must be negative; the inputs give seq = 0");
  EXPECT_NE(errorOf([&] {
              runReference(*graph, {{"table", table}, {"x", ones({9})}});
            }).find("the slice start rows-seq must not be negative"),
            std::string::npos);
}

TEST(ShapeAssumption, TextFormRoundTrips) {
  auto graph = lowertest::parseGraph(kBroadcast);
  std::string text = printed(*graph);
  EXPECT_NE(text.find("  assume [seq*seq-seq*5+4] == 0 \"node 'add': the broadcast dimension seq "
                      "must be 1 or 4\"\n"),
            std::string::npos)
      << text;
  // An assumption written by hand is kept even when no node would make it.
  std::string extra = text;
  extra.insert(extra.find("  assume"), "  assume [seq-2] >= 0 \"seq is at least 2\"\n");
  auto reparsed = onnxc::parseGraph(extra, "extra.ir");
  inferShapes(*reparsed);
  EXPECT_EQ(reparsed->assumptions().size(), 2u);
  EXPECT_EQ(printed(*reparsed), extra);
  EXPECT_EQ(errorOf([&] {
              runReference(*reparsed, {{"x", ones({1})}});
            }),
            "seq is at least 2; the inputs give seq = 1");
  for (const char *bad : {"  assume [seq] = 0 \"m\"\n", "  assume [seq] == 1 \"m\"\n",
                          "  assume [seq, 2] == 0 \"m\"\n", "  assume [seq] == 0\n"}) {
    std::string broken = text;
    broken.insert(broken.find("  assume"), bad);
    EXPECT_THROW(onnxc::parseGraph(broken, "bad.ir"), Error) << bad;
  }
}

TEST(ShapeAssumption, SpecializedInputsDecideTheirAssumptions) {
  // `onnxc run` builds small input values into a JIT build; the symbols they
  // bound are then substituted, and a broken assumption is an error.
  auto graph = lowertest::parseGraph(kBroadcast);
  Tensor five = ones({5});
  EXPECT_NE(errorOf([&] {
              specializeSmallInputs(*graph, {{"x", five}});
            }).find("the broadcast dimension seq must be 1 or 4"),
            std::string::npos);
  auto fits = lowertest::parseGraph(kBroadcast);
  specializeSmallInputs(*fits, {{"x", ones({4})}});
  EXPECT_TRUE(fits->assumptions().empty());
}
