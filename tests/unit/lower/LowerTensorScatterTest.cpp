//===- tests/unit/lower/LowerTensorScatterTest.cpp - TensorScatter, BitCast --===//
//
// Opset 24-26's byte movers, compiled (lowering + JIT + runtime) against the
// reference evaluator, bit for bit: TensorScatter on every axis but the
// batch, both modes, with and without write indices, symbolic dims, over two
// threads, and the failing run (a linear write index that leaves no room);
// BitCast between the types of one size, which costs no step.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

namespace onnxc {
namespace {

using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runCompiled;
using lowertest::runReference;

using Inputs = std::map<std::string, Tensor>;

void expectIdentical(const Graph &graph, const Inputs &inputs, int threads = 1) {
  std::vector<Tensor> expected = runReference(graph, inputs);
  std::vector<Tensor> actual = runCompiled(graph, inputs, threads);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i].typeString(), expected[i].typeString());
    int64_t first = 0;
    while (first < expected[i].numElements() &&
           actual[i].elementAsDouble(first) == expected[i].elementAsDouble(first))
      ++first;
    EXPECT_TRUE(actual[i].identicalTo(expected[i]))
        << "output " << i << " differs first at element " << first;
  }
}

/// A [b, 3, n, 5] cache (its dim `axis` of `rows`) and its update of
/// `len` there: scattered linearly at %wl, circularly at %wc, and without
/// write indices in either mode.
std::string scatterGraph(const char *dtype, int axis) {
  std::vector<std::string> cache = {"b", "3", "n", "5"}, update = cache;
  size_t a = size_t(axis < 0 ? axis + 4 : axis);
  cache[a] = "rows";
  update[a] = "len";
  auto shape = [&](const std::vector<std::string> &dims) {
    return std::string(dtype) + "[" + dims[0] + ", " + dims[1] + ", " + dims[2] + ", " + dims[3] +
           "]";
  };
  std::string attrs = " {axis = " + std::to_string(axis);
  return "graph @g(%past: " + shape(cache) + ", %update: " + shape(update) +
         ", %wl: i64[b], %wc: i64[b]) -> (%lw: unknown[*], %cw: unknown[*], %l: unknown[*], "
         "%c: unknown[*]) {\n" +
         "  %lw = TensorScatter(%past, %update, %wl)" + attrs + "}\n" +
         "  %cw = TensorScatter(%past, %update, %wc)" + attrs + ", mode = \"circular\"}\n" +
         "  %l = TensorScatter(%past, %update)" + attrs + "}\n" +
         "  %c = TensorScatter(%past, %update)" + attrs + ", mode = \"circular\"}\n" +
         "  return %lw, %cw, %l, %c\n}\n";
}

TEST(LowerTensorScatter, EveryAxisModeAndDType) {
  const std::vector<int64_t> cache = {2, 3, 4, 5};
  for (const char *dtype : {"f32", "bf16", "i64", "bool"})
    for (int axis : {1, 3, -2}) {
      std::string text = scatterGraph(dtype, axis);
      SCOPED_TRACE(text);
      auto graph = parseGraph(text);
      size_t a = size_t(axis < 0 ? axis + 4 : axis);
      std::vector<int64_t> pastDims = cache, updateDims = cache;
      pastDims[a] = 7;
      updateDims[a] = 3;
      DType type = *parseDType(dtype);
      // Linear: anywhere with room for 3 positions; circular: any index,
      // negative ones and ones past the end included, so rows wrap.
      expectIdentical(*graph, {{"past", randomOf(type, pastDims, 1, -9, 9)},
                               {"update", randomOf(type, updateDims, 2, -9, 9)},
                               {"wl", Tensor::fromVector<int64_t>({2}, {4, 1})},
                               {"wc", Tensor::fromVector<int64_t>({2}, {6, -9})}});
    }
}

TEST(LowerTensorScatter, DecodeStepsOverTwoThreads) {
  // A fixed cache of 64 positions, 16 heads of 128: the update of one
  // position per row is split over heads, a prompt's over positions too.
  auto graph = parseGraph(R"(
graph @g(%past: f32[b, h, rows, d], %update: f32[b, h, len, d], %w: i64[b]) -> (%present: unknown[*]) {
  %present = TensorScatter(%past, %update, %w)
  return %present
}
)");
  for (int64_t length : {1, 9}) {
    SCOPED_TRACE(length);
    expectIdentical(*graph,
                    {{"past", randomOf(DType::F32, {2, 16, 64, 128}, 3)},
                     {"update", randomOf(DType::F32, {2, 16, length, 128}, 4)},
                     {"w", Tensor::fromVector<int64_t>({2}, {17, 64 - length})}},
                    2);
  }
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 2u) << "a copy step and a scatter step";
}

TEST(LowerTensorScatter, ALinearWriteIndexWithoutRoomFailsTheRun) {
  auto graph = parseGraph(R"(
graph @g(%past: f32[b, 3, rows, 5], %update: f32[b, 3, len, 5], %w: i64[b]) -> (%present: unknown[*]) {
  %present = TensorScatter(%past, %update, %w) {axis = 2}
  return %present
}
)");
  for (std::vector<int64_t> w : {std::vector<int64_t>{5, 0}, {0, -1}}) {
    SCOPED_TRACE(w[0]);
    Inputs inputs = {{"past", randomOf(DType::F32, {2, 3, 7, 5}, 1)},
                     {"update", randomOf(DType::F32, {2, 3, 3, 5}, 2)},
                     {"w", Tensor::fromVector<int64_t>({2}, w)}};
    EXPECT_THROW(runReference(*graph, inputs), Error);
    try {
      runCompiled(*graph, inputs);
      ADD_FAILURE() << "the run did not fail";
    } catch (const Error &e) {
      EXPECT_STREQ(e.what(), "step 'TensorScatter': a write index in 'w' leaves no room for the "
                             "len positions of 'update' in 'past' [b, 3, rows, 5] (linear mode: "
                             "0 <= index <= rows - len)");
    }
  }
}

TEST(LowerBitCast, TypesOfOneSizeAreViews) {
  const std::pair<const char *, const char *> casts[] = {
      {"f32", "i32"},  {"i32", "f32"}, {"f64", "i64"}, {"u16", "i16"},
      {"f16", "bf16"}, {"bool", "u8"}, {"i8", "u8"},   {"u32", "f32"}};
  const std::map<std::string, int> codes = {{"i32", 6}, {"f32", 1},   {"i64", 7},
                                            {"i16", 5}, {"bf16", 16}, {"u8", 2}};
  for (const auto &[from, to] : casts) {
    std::string text = std::string("graph @g(%x: ") + from +
                       "[3, n]) -> (%y: unknown[*], %z: unknown[*]) {\n  const %two: " + to +
                       "[] = dense<1>\n  %y = BitCast(%x) {to = " + std::to_string(codes.at(to)) +
                       "}\n  %z = Add(%y, %two)\n  return %y, %z\n}\n";
    if (std::string(to) == "u8")
      text = std::string("graph @g(%x: ") + from + "[3, n]) -> (%y: unknown[*]) {\n" +
             "  %y = BitCast(%x) {to = 2}\n  return %y\n}\n";
    SCOPED_TRACE(text);
    auto graph = parseGraph(text);
    // Integers in a range whose bits, read as floats, are finite (no NaN
    // whose payload the comparison would not see).
    expectIdentical(*graph, {{"x", randomOf(*parseDType(from), {3, 4}, 5, 0, 100)}});
  }
}

TEST(LowerBitCast, RefusesTypesOfAnotherSizeAtImport) {
  for (const char *text : {"graph @g(%x: f32[3]) -> (%y: unknown[*]) {\n"
                           "  %y = BitCast(%x) {to = 7}\n  return %y\n}\n",
                           "graph @g(%x: u8[3]) -> (%y: unknown[*]) {\n"
                           "  %y = BitCast(%x) {to = 9}\n  return %y\n}\n"}) {
    try {
      parseGraph(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const Error &e) {
      EXPECT_NE(std::string(e.what()).find("BitCast"), std::string::npos) << e.what();
    }
  }
}

} // namespace
} // namespace onnxc
