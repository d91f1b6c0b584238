//===- tests/unit/lower/LowerScatterGatherTest.cpp - GatherElements, ScatterND ---===//
//
// Compiled (lowering + JIT + runtime) against the reference evaluator, bit
// for bit: every axis and several dtypes and index types, symbolic dims,
// duplicate ScatterND rows under every reduction, slices split over two
// threads, the mask-building form HF LLaMA exports, and the failing runs
// (indices out of range) with their messages.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>

namespace onnxc {
namespace {

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
    const Tensor &a = actual[i], &e = expected[i];
    ASSERT_EQ(a.typeString(), e.typeString());
    if (a.identicalTo(e))
      continue;
    int64_t first = 0;
    while (first < e.numElements() && a.elementAsDouble(first) == e.elementAsDouble(first))
      ++first;
    ADD_FAILURE() << "output " << i << " differs first at element " << first << ": compiled "
                  << a.elementAsDouble(first) << ", reference " << e.elementAsDouble(first);
  }
}

/// The compiled run's error message ("" when it succeeds); the reference
/// must fail on the same inputs too.
std::string compiledError(const Graph &graph, const Inputs &inputs, int threads = 1) {
  EXPECT_THROW(runReference(graph, inputs), Error);
  try {
    runCompiled(graph, inputs, threads);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

// ---- GatherElements -------------------------------------------------------

TEST(LowerGatherElements, EveryAxisDTypeAndIndexType) {
  for (const char *dtype : {"f32", "bf16", "i64", "bool"})
    for (const char *indexType : {"i64", "i32"})
      for (int axis : {0, 1, 2, -1}) {
        std::string text =
            std::string("graph @g(%x: ") + dtype + "[4, n, 6], %i: " + indexType +
            "[3, m, 5]) -> (%y: unknown[*]) {\n  %y = GatherElements(%x, %i) {axis = " +
            std::to_string(axis) + "}\n  return %y\n}\n";
        SCOPED_TRACE(text);
        auto graph = parseGraph(text);
        int64_t size = axis == 0 ? 4 : axis == 1 ? 5 : 6;
        expectIdentical(*graph, {{"x", randomOf(*parseDType(dtype), {4, 5, 6}, 1, -9, 9)},
                                 {"i", randomOf(*parseDType(indexType), {3, 4, 5}, 2, -double(size),
                                                double(size))}});
      }
}

TEST(LowerGatherElements, RelativePositionsOverThreads) {
  // DeBERTa-v2's form: scores [b, h, q, 2k] gathered at per-position
  // indices [b, h, q, k] along the last axis.
  auto graph = parseGraph(R"(
graph @g(%c2p: f32[b, 4, s, r], %index: i64[b, 4, s, s]) -> (%y: unknown[*]) {
  %y = GatherElements(%c2p, %index) {axis = 3}
  return %y
}
)");
  for (int threads : {1, 2})
    expectIdentical(*graph,
                    {{"c2p", randomOf(DType::F32, {2, 4, 70, 140}, 3)},
                     {"index", randomOf(DType::I64, {2, 4, 70, 70}, 4, 0, 140)}},
                    threads);
}

TEST(LowerGatherElements, OutOfRangeIndexFailsTheRun) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[2, 3], %i: i64[2, n]) -> (%y: unknown[*]) {
  %y = GatherElements(%x, %i) {axis = 1} loc("rel_pos")
  return %y
}
)");
  Tensor x = randomOf(DType::F32, {2, 3}, 1);
  for (int64_t bad : {int64_t(3), int64_t(-4), int64_t(1) << 40}) {
    SCOPED_TRACE(bad);
    Tensor i = Tensor::fromVector<int64_t>({2, 2}, {0, -1, bad, 2});
    EXPECT_EQ(compiledError(*graph, {{"x", x}, {"i", i}}),
              "step 'GatherElements rel_pos': an index of 'i' is out of range [-3, 3) for axis 1 "
              "of 'x'");
  }
}

TEST(LowerGatherElements, IndicesLargerThanTheDataFailTheRun) {
  // Off the axis the indices must not exceed the data; with symbolic dims
  // only the run can tell: the shape assumption the rule recorded fails
  // when the inputs are bound (the kernel would check it too).
  auto graph = parseGraph(R"(
graph @g(%x: f32[n, 3], %i: i64[m, 3]) -> (%y: unknown[*]) {
  %y = GatherElements(%x, %i) {axis = 1} loc("ge")
  return %y
}
)");
  Tensor x = randomOf(DType::F32, {2, 3}, 1);
  expectIdentical(*graph, {{"x", x}, {"i", randomOf(DType::I64, {2, 3}, 2, 0, 3)}});
  EXPECT_EQ(compiledError(*graph, {{"x", x}, {"i", randomOf(DType::I64, {3, 3}, 2, 0, 3)}}),
            "node 'ge': dimension 0 of the indices m must be at most n; the inputs give m = 3, "
            "n = 2");
}

// ---- ScatterND --------------------------------------------------------------

/// `count` index tuples of `depth` coordinates, each in [-size, size) of
/// its axis of `dims`, with repeats (a small range per axis).
Tensor tuples(int64_t count, const std::vector<int64_t> &dims, size_t depth, unsigned seed) {
  Tensor t(DType::I64, {count, int64_t(depth)});
  for (int64_t r = 0; r < count; ++r)
    for (size_t j = 0; j < depth; ++j) {
      Tensor one =
          randomOf(DType::I64, {1}, seed + unsigned(r * 7 + j), -double(dims[j]), double(dims[j]));
      t.data<int64_t>()[r * int64_t(depth) + int64_t(j)] = one.data<int64_t>()[0];
    }
  return t;
}

std::string scatterGraph(const std::string &dtype, const std::string &dataDims,
                         const std::string &updateDims, size_t depth,
                         const std::string &reduction) {
  return "graph @g(%x: " + dtype + "[" + dataDims + "], %i: i64[r, " + std::to_string(depth) +
         "], %u: " + dtype + "[" + updateDims + "]) -> (%y: unknown[*]) {\n" +
         "  %y = ScatterND(%x, %i, %u) {reduction = \"" + reduction + "\"}\n  return %y\n}\n";
}

TEST(LowerScatterND, EveryReductionWithDuplicateRows) {
  // data [5, 4, 3]; k = 1, 2, 3 give slices of 12, 3 and 1 elements.
  std::vector<int64_t> dims = {5, 4, 3};
  const char *updateDims[] = {"r, 4, 3", "r, 3", "r"};
  for (const char *dtype : {"f32", "f16", "i32", "u8", "f64"})
    for (size_t depth : {1, 2, 3})
      for (const char *reduction : {"none", "add", "mul", "max", "min"}) {
        std::string text = scatterGraph(dtype, "5, 4, 3", updateDims[depth - 1], depth, reduction);
        SCOPED_TRACE(text);
        DType type = *parseDType(dtype);
        std::vector<int64_t> update = {17};
        update.insert(update.end(), dims.begin() + int64_t(depth), dims.end());
        expectIdentical(*parseGraph(text), {{"x", randomOf(type, dims, 1, 0, 9)},
                                            {"i", tuples(17, dims, depth, 3)},
                                            {"u", randomOf(type, update, 2, 0, 9)}});
      }
}

TEST(LowerScatterND, BoolAndNaNUnderMaxMin) {
  auto boolGraph = parseGraph(scatterGraph("bool", "6", "r", 1, "none"));
  expectIdentical(*boolGraph, {{"x", randomOf(DType::Bool, {6}, 1)},
                               {"i", tuples(9, {6}, 1, 2)},
                               {"u", randomOf(DType::Bool, {9}, 3)}});
  for (const char *reduction : {"max", "min"}) {
    auto graph = parseGraph(scatterGraph("f32", "4", "r", 1, reduction));
    Tensor x = Tensor::fromVector<float>({4}, {1, NAN, -0.0f, 2});
    Tensor u = Tensor::fromVector<float>({4}, {NAN, 5, 0.0f, -1});
    expectIdentical(*graph,
                    {{"x", x}, {"i", Tensor::fromVector<int64_t>({4, 1}, {0, 1, 2, 3})}, {"u", u}});
  }
}

TEST(LowerScatterND, WideSlicesSplitOverThreads) {
  // pe[0::2] = table: rows of 4096 elements; duplicates add in row order.
  auto graph = parseGraph(scatterGraph("f32", "n, 4096", "r, 4096", 1, "add"));
  for (int threads : {1, 2})
    expectIdentical(*graph,
                    {{"x", randomOf(DType::F32, {40, 4096}, 1)},
                     {"i", tuples(50, {40}, 1, 5)},
                     {"u", randomOf(DType::F32, {50, 4096}, 2)}},
                    threads);
  auto replace = parseGraph(scatterGraph("f32", "n, 4096", "r, 4096", 1, "none"));
  expectIdentical(*replace,
                  {{"x", randomOf(DType::F32, {40, 4096}, 1)},
                   {"i", tuples(50, {40}, 1, 6)},
                   {"u", randomOf(DType::F32, {50, 4096}, 2)}},
                  2);
}

TEST(LowerScatterND, LlamaMaskFill) {
  // The exported `mask[:, :, :, :n] = mask[...].masked_fill(...)`: full
  // coordinates [b, 1, s, s, 4] into a [b, 1, s, s] mask, one element each.
  auto graph = parseGraph(R"(
graph @g(%mask: f32[b, 1, s, t], %i: i64[b, 1, s, s, 4], %u: f32[b, 1, s, s]) -> (%y: unknown[*]) {
  %y = ScatterND(%mask, %i, %u)
  return %y
}
)");
  int64_t b = 2, s = 9, t = 12;
  Tensor indices(DType::I64, {b, 1, s, s, 4});
  int64_t *at = indices.data<int64_t>();
  for (int64_t n = 0; n < b; ++n)
    for (int64_t q = 0; q < s; ++q)
      for (int64_t k = 0; k < s; ++k, at += 4) {
        at[0] = n, at[1] = 0, at[2] = q, at[3] = k;
      }
  expectIdentical(*graph, {{"mask", randomOf(DType::F32, {b, 1, s, t}, 1)},
                           {"i", indices},
                           {"u", randomOf(DType::F32, {b, 1, s, s}, 2)}});
}

TEST(LowerScatterND, OutOfRangeIndexFailsTheRun) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[3, n], %i: i64[r, 2], %u: f32[r]) -> (%y: unknown[*]) {
  %y = ScatterND(%x, %i, %u) loc("mask_fill")
  return %y
}
)");
  Tensor x = randomOf(DType::F32, {3, 4}, 1);
  Tensor u = randomOf(DType::F32, {3}, 2);
  for (int64_t bad : {int64_t(4), int64_t(-5), int64_t(1) << 40})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(bad) + " threads " + std::to_string(threads));
      Tensor i = Tensor::fromVector<int64_t>({3, 2}, {0, 0, -1, bad, 2, 3});
      EXPECT_EQ(compiledError(*graph, {{"x", x}, {"i", i}, {"u", u}}, threads),
                "step 'ScatterND mask_fill': an index of 'i' is out of range for 'x' [3, n] "
                "(index 2-tuples must lie in [-3, 3), [-n, n))");
    }
}

TEST(LowerScatterND, UpdatesThatDoNotFitFailTheRun) {
  auto graph = parseGraph(R"(
graph @g(%x: f32[3, n], %i: i64[r, 1], %u: f32[q, m]) -> (%y: unknown[*]) {
  %y = ScatterND(%x, %i, %u) loc("rows")
  return %y
}
)");
  Tensor x = randomOf(DType::F32, {3, 4}, 1);
  Tensor i = Tensor::fromVector<int64_t>({2, 1}, {2, 0});
  expectIdentical(*graph, {{"x", x}, {"i", i}, {"u", randomOf(DType::F32, {2, 4}, 2)}});
  EXPECT_EQ(compiledError(*graph, {{"x", x}, {"i", i}, {"u", randomOf(DType::F32, {2, 3}, 2)}}),
            "node 'rows': dimension 1 of the updates m must equal n; the inputs give m = 3, n = 4");
}

} // namespace
} // namespace onnxc
