//===- tests/unit/lower/LowerMovementTest.cpp - Movement and creation lowerings --===//
//
// Every case runs the compiled graph and the reference evaluator on the same
// inputs and expects bit-identical outputs (movement is byte moves), with
// symbolic dims, odd sizes, and inputs large enough to be split over tasks.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>

namespace onnxc {
namespace {

using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runCompiled;
using lowertest::runReference;

using Inputs = std::map<std::string, Tensor>;

/// Compiled outputs must equal the evaluator's byte for byte.
void expectIdentical(const Graph &graph, const Inputs &inputs, int threads = 1) {
  std::vector<Tensor> expected = runReference(graph, inputs);
  std::vector<Tensor> actual = runCompiled(graph, inputs, threads);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    const Tensor &a = actual[i], &e = expected[i];
    std::string what = "output " + graph.outputs()[i].name + " (" + e.typeString() + ")";
    ASSERT_EQ(a.typeString(), e.typeString()) << what;
    if (a.identicalTo(e))
      continue;
    int64_t first = 0;
    while (first < e.numElements() && a.elementAsDouble(first) == e.elementAsDouble(first))
      ++first;
    ADD_FAILURE() << what << " differs first at element " << first << ": compiled "
                  << a.elementAsDouble(first) << ", reference " << e.elementAsDouble(first);
  }
}

std::string dimsText(const std::vector<int64_t> &dims) {
  std::string text;
  for (size_t i = 0; i < dims.size(); ++i)
    text += (i ? ", " : "") + std::to_string(dims[i]);
  return text;
}

// ---- views ---------------------------------------------------------------

TEST(LowerMovement, ViewsMakeNoSteps) {
  auto graph = parseGraph(R"(
graph @views(%x: f32[b, 1, 6, 4]) -> (%y: unknown[*]) {
  const %shape: i64[3] = dense<[0, 24, 1]>
  const %axes: i64[1] = dense<[2]>
  const %axes0: i64[1] = dense<[0]>
  %r = Reshape(%x, %shape)
  %s = Squeeze(%r, %axes)
  %u = Unsqueeze(%s, %axes0)
  %f = Flatten(%u) {axis = 2}
  %i = Identity(%f)
  %d = Dropout(%i)
  %y = Transpose(%d) {perm = [1, 0]}
  return %y
}
)");
  ModelPlan plan = lowerOnly(*graph);
  EXPECT_EQ(plan.steps.size(), 1u) << "only the transpose computes";
  for (int64_t b : {1, 3})
    expectIdentical(*graph, {{"x", randomOf(DType::F32, {b, 1, 6, 4}, 5)}});
}

TEST(LowerMovement, ViewReturnedAsOutputIsCopied) {
  auto graph = parseGraph(R"(
graph @view_out(%x: i16[n, 6]) -> (%y: unknown[*]) {
  const %shape: i64[3] = dense<[-1, 2, 3]>
  %y = Reshape(%x, %shape)
  return %y
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::I16, {5, 6}, 1, -100, 100)}});
}

TEST(LowerMovement, DropoutMaskIsAllTrue) {
  auto graph = parseGraph(R"(
graph @dropout(%x: f16[n, 7]) -> (%y: unknown[*], %m: unknown[*]) {
  const %ratio: f32[] = dense<0.25>
  const %train: bool[] = dense<false>
  %y, %m = Dropout(%x, %ratio, %train)
  return %y, %m
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F16, {3, 7}, 2)}});
}

TEST(LowerMovement, TrainingDropoutIsRefused) {
  auto graph = parseGraph(R"(
graph @train(%x: f32[4]) -> (%y: unknown[*]) {
  const %ratio: f32[] = dense<0.5>
  const %train: bool[] = dense<true>
  %y = Dropout(%x, %ratio, %train)
  return %y
}
)");
  EXPECT_THROW(lowerOnly(*graph), Error);
}

// ---- Transpose -----------------------------------------------------------

TEST(LowerMovement, TransposeEveryPermutationOf4D) {
  std::vector<int64_t> perm = {0, 1, 2, 3};
  do {
    std::string text = R"(
graph @t(%x: f32[a, 5, b, 3]) -> (%y: unknown[*]) {
  %y = Transpose(%x) {perm = [)" +
                       dimsText(perm) + R"(]}
  return %y
}
)";
    auto graph = parseGraph(text);
    SCOPED_TRACE("perm " + dimsText(perm));
    expectIdentical(*graph, {{"x", randomOf(DType::F32, {2, 5, 7, 3}, 11)}});
    expectIdentical(*graph, {{"x", randomOf(DType::F32, {19, 5, 37, 3}, 12)}}, 3);
  } while (std::next_permutation(perm.begin(), perm.end()));
}

TEST(LowerMovement, TransposeEveryDType) {
  for (DType type :
       {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::U8, DType::I16,
        DType::U16, DType::I32, DType::U32, DType::I64, DType::U64, DType::Bool}) {
    std::string name(dtypeName(type));
    auto graph = parseGraph(R"(
graph @t(%x: )" + name + R"([n, 33, 17]) -> (%y: unknown[*], %z: unknown[*]) {
  %y = Transpose(%x) {perm = [0, 2, 1]}
  %z = Transpose(%x)
  return %y, %z
}
)");
    SCOPED_TRACE(name);
    expectIdentical(*graph, {{"x", randomOf(type, {3, 33, 17}, 4, -50, 50)}}, 2);
  }
}

TEST(LowerMovement, TransposeLargeTiledOverThreads) {
  auto graph = parseGraph(R"(
graph @t(%x: f32[s, h]) -> (%y: unknown[*]) {
  %y = Transpose(%x) {perm = [1, 0]}
  return %y
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {301, 517}, 8)}}, 4);
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {1, 9}, 8)}}, 4);
}

TEST(LowerMovement, TransposeHeadsKeepsRows) {
  // The attention pattern [B, S, H, D] -> [B, H, S, D]: runs of D.
  auto graph = parseGraph(R"(
graph @heads(%x: f32[b, s, 4, 16]) -> (%y: unknown[*]) {
  %y = Transpose(%x) {perm = [0, 2, 1, 3]}
  return %y
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {2, 300, 4, 16}, 9)}}, 3);
}

// ---- Concat, Split ---------------------------------------------------------

TEST(LowerMovement, ConcatEveryAxis) {
  for (int axis : {0, 1, 2, -1}) {
    auto graph = parseGraph(R"(
graph @c(%a: i32[n, 3, 5], %b: i32[n, 3, 5], %c: i32[n, 3, 5]) -> (%y: unknown[*]) {
  %y = Concat(%a, %b, %c) {axis = )" +
                            std::to_string(axis) + R"(}
  return %y
}
)");
    SCOPED_TRACE("axis " + std::to_string(axis));
    for (int64_t n : {1, 4})
      expectIdentical(*graph, {{"a", randomOf(DType::I32, {n, 3, 5}, 1, -9, 9)},
                               {"b", randomOf(DType::I32, {n, 3, 5}, 2, -9, 9)},
                               {"c", randomOf(DType::I32, {n, 3, 5}, 3, -9, 9)}});
  }
}

TEST(LowerMovement, ConcatOfManyInputsSpansSeveralSteps) {
  // 150 inputs, of symbolic and constant lengths along the axis: the
  // lowering cuts them into steps of 64 (LLVM's time grows with the square
  // of the copy loops in one kernel), each starting where the last ended.
  const int count = 150;
  std::string inputs, operands;
  for (int i = 0; i < count; ++i) {
    std::string length = i % 3 == 0 ? "s" + std::to_string(i % 7) : std::to_string(i % 5 + 1);
    inputs += std::string(i ? ", " : "") + "%x" + std::to_string(i) + ": f32[2, " + length + "]";
    operands += std::string(i ? ", " : "") + "%x" + std::to_string(i);
  }
  auto graph = parseGraph("graph @many(" + inputs + ") -> (%y: unknown[*]) {\n  %y = Concat(" +
                          operands + ") {axis = 1}\n  return %y\n}\n");
  Inputs feeds;
  for (int i = 0; i < count; ++i) {
    int64_t length = i % 3 == 0 ? i % 7 : i % 5 + 1; // symbol s_k bound to k (0 included)
    feeds["x" + std::to_string(i)] = randomOf(DType::F32, {2, length}, uint32_t(i + 1));
  }
  expectIdentical(*graph, feeds);
  expectIdentical(*graph, feeds, 2);
}

TEST(LowerMovement, LargeConcatOutputsAreStreamedExactly) {
  // A Concat that is a graph output writes rows of 16 KiB or more with
  // non-temporal stores (StridedCopy's streamElements): lines up to the
  // first 64-byte boundary of the destination and after the last whole one
  // through memcpy. Rows of 61 floats put every head's part off that
  // boundary; p = 70 gives 17 KiB rows (streamed), p = 60 15 KiB (not), and
  // the u8 Concat rows of odd byte counts. %h, used again, is not an output.
  auto graph = parseGraph(R"(
graph @c(%past: f32[b, 3, p, 61], %new: f32[b, 3, s, 61], %x: u8[b, q], %z: u8[b, r]) -> (%y: unknown[*], %w: unknown[*], %u: unknown[*]) {
  %y = Concat(%past, %new) {axis = 2}
  %h = Concat(%new, %past) {axis = 2}
  %w = Relu(%h)
  %u = Concat(%x, %z) {axis = 1}
  return %y, %w, %u
}
)");
  for (auto [p, s] : std::vector<std::array<int64_t, 2>>{{70, 1}, {60, 5}, {300, 13}}) {
    SCOPED_TRACE("p " + std::to_string(p) + ", s " + std::to_string(s));
    expectIdentical(*graph, {{"past", randomOf(DType::F32, {2, 3, p, 61}, 1)},
                             {"new", randomOf(DType::F32, {2, 3, s, 61}, 2)},
                             {"x", randomOf(DType::U8, {2, 16400 + p}, 3, 0, 255)},
                             {"z", randomOf(DType::U8, {2, 17001}, 4, 0, 255)}});
  }
}

TEST(LowerMovement, ConcatSymbolicAxisAndConstants) {
  auto graph = parseGraph(R"(
graph @c(%past: f32[b, 2, p, 8], %new: f32[b, 2, s, 8]) -> (%y: unknown[*]) {
  const %zeros: f32[1, 2, 0, 8] = dense<[]>
  %y = Concat(%past, %new) {axis = 2}
  return %y
}
)");
  expectIdentical(*graph,
                  {{"past", randomOf(DType::F32, {3, 2, 1000, 8}, 1)},
                   {"new", randomOf(DType::F32, {3, 2, 7, 8}, 2)}},
                  3);
  expectIdentical(*graph, {{"past", randomOf(DType::F32, {1, 2, 0, 8}, 1)},
                           {"new", randomOf(DType::F32, {1, 2, 3, 8}, 2)}});
}

TEST(LowerMovement, SplitEqualAndVariable) {
  auto graph = parseGraph(R"(
graph @s(%x: u8[n, 10]) -> (%a: unknown[*], %b: unknown[*], %c: unknown[*], %d: unknown[*], %e: unknown[*]) {
  const %sizes: i64[2] = dense<[3, 7]>
  %a, %b = Split(%x, %sizes) {axis = 1}
  %c, %d, %e = Split(%x) {axis = 1, num_outputs = 3}
  return %a, %b, %c, %d, %e
}
)");
  for (int64_t n : {1, 5, 7000})
    expectIdentical(*graph, {{"x", randomOf(DType::U8, {n, 10}, 3, 0, 255)}}, 2);
}

TEST(LowerMovement, SplitWritesOnlyUsedParts) {
  auto graph = parseGraph(R"(
graph @s(%x: bf16[n, 9]) -> (%b: unknown[*]) {
  %a, %b, %c = Split(%x) {axis = 1, num_outputs = 3}
  return %b
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::BF16, {4, 9}, 3)}});
}

TEST(LowerMovement, SplitSymbolicAxis) {
  // Concat makes the axis s + s = 2*s, which splits into two halves of s.
  auto graph = parseGraph(R"(
graph @s(%x: f32[s, 3], %y: f32[s, 3]) -> (%a: unknown[*], %b: unknown[*]) {
  %c = Concat(%x, %y) {axis = 0}
  %a, %b = Split(%c) {axis = 0, num_outputs = 2}
  return %b, %a
}
)");
  for (int64_t s : {1, 6, 9000})
    expectIdentical(
        *graph, {{"x", randomOf(DType::F32, {s, 3}, 1)}, {"y", randomOf(DType::F32, {s, 3}, 2)}},
        2);
}

// ---- Slice -----------------------------------------------------------------

TEST(LowerMovement, SliceConstantBoundsAndNegativeSteps) {
  struct Case {
    const char *starts, *ends, *axes, *steps;
  };
  for (Case c :
       {Case{"1, 0", "3, 10", "0, 1", "1, 1"}, Case{"-1", "-100", "2", "-1"},
        Case{"5, -2", "-1000, 0", "1, 2", "-2, -3"}, Case{"0", "9223372036854775807", "-1", "3"},
        Case{"2, 100", "0, -100", "0, 1", "-1, -4"}, Case{"1", "1", "1", "1"}}) {
    std::string text = std::string(R"(
graph @s(%x: f32[4, 9, 11]) -> (%y: unknown[*]) {
  const %starts: i64[_] = dense<[)") +
                       c.starts + R"(]>
  const %ends: i64[_] = dense<[)" +
                       c.ends + R"(]>
  const %axes: i64[_] = dense<[)" +
                       c.axes + R"(]>
  const %steps: i64[_] = dense<[)" +
                       c.steps + R"(]>
  %y = Slice(%x, %starts, %ends, %axes, %steps)
  return %y
}
)";
    std::string axes = c.axes;
    std::string n = std::to_string(std::count(axes.begin(), axes.end(), ',') + 1);
    for (size_t p; (p = text.find("_]")) != std::string::npos;)
      text.replace(p, 1, n);
    SCOPED_TRACE(text);
    auto graph = parseGraph(text);
    expectIdentical(*graph, {{"x", randomOf(DType::F32, {4, 9, 11}, 6)}});
  }
}

TEST(LowerMovement, SliceSymbolicDimAndDefaultAxes) {
  auto graph = parseGraph(R"(
graph @s(%x: i64[b, s, 6]) -> (%y: unknown[*], %z: unknown[*]) {
  const %starts: i64[2] = dense<[0, 1]>
  const %ends: i64[2] = dense<[9223372036854775807, 9223372036854775807]>
  const %last: i64[1] = dense<[-1]>
  const %begin: i64[1] = dense<[0]>
  const %axis: i64[1] = dense<[1]>
  %y = Slice(%x, %starts, %ends)
  %z = Slice(%x, %begin, %last, %axis)
  return %y, %z
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::I64, {2, 5, 6}, 7, -1000, 1000)}});
  expectIdentical(*graph, {{"x", randomOf(DType::I64, {3, 4000, 6}, 7, -1000, 1000)}}, 3);
}

TEST(LowerMovement, SliceRunTimeStart) {
  // starts = [m] comes from a Shape at run time: the kernel reads and clamps it.
  auto graph = parseGraph(R"(
graph @s(%x: f32[n, 20], %y: f32[n, m]) -> (%z: unknown[*]) {
  const %ends: i64[1] = dense<[9223372036854775807]>
  const %axes: i64[1] = dense<[1]>
  %starts = Shape(%y) {start = 1}
  %z = Slice(%x, %starts, %ends, %axes)
  return %z
}
)");
  for (int64_t m : {0, 3, 20})
    expectIdentical(
        *graph, {{"x", randomOf(DType::F32, {3, 20}, 1)}, {"y", randomOf(DType::F32, {3, m}, 2)}});
}

TEST(LowerMovement, SliceRunTimeEndBeyondInferredExtentFailsTheRun) {
  // Inference takes ends = [m] to be in range (extent m), which it records
  // as the assumption m <= 20; with m > 20 the run is refused when the
  // inputs are bound, before the kernel (which also checks) could overread.
  auto graph = parseGraph(R"(
graph @s(%x: f32[n, 20], %y: f32[n, m]) -> (%z: unknown[*]) {
  const %starts: i64[1] = dense<[0]>
  const %axes: i64[1] = dense<[1]>
  %ends = Shape(%y) {start = 1}
  %z = Slice(%x, %starts, %ends, %axes)
  return %z
}
)");
  expectIdentical(
      *graph, {{"x", randomOf(DType::F32, {2, 20}, 1)}, {"y", randomOf(DType::F32, {2, 5}, 2)}});
  try {
    runCompiled(*graph,
                {{"x", randomOf(DType::F32, {2, 20}, 1)}, {"y", randomOf(DType::F32, {2, 25}, 2)}});
    ADD_FAILURE() << "the run did not fail";
  } catch (const Error &e) {
    EXPECT_NE(
        std::string(e.what()).find("the slice end m must be at most 20; the inputs give m = 25"),
        std::string::npos)
        << e.what();
  }
}

// ---- Gather ----------------------------------------------------------------

TEST(LowerMovement, GatherEmbeddingRows) {
  auto graph = parseGraph(R"(
graph @g(%ids: i64[b, s]) -> (%y: unknown[*]) {
  const %table: f32[7, 5] = dense<[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 19.0, 20.0, 21.0, 22.0, 23.0, 24.0, 25.0, 26.0, 27.0, 28.0, 29.0, 30.0, 31.0, 32.0, 33.0, 34.0]>
  %y = Gather(%table, %ids) {axis = 0}
  return %y
}
)");
  expectIdentical(*graph, {{"ids", randomOf(DType::I64, {2, 9}, 3, -7, 7)}});
  expectIdentical(*graph, {{"ids", randomOf(DType::I64, {4, 3001}, 3, -7, 7)}}, 3);
}

TEST(LowerMovement, GatherEveryAxisAndIndexType) {
  for (const char *indexType : {"i32", "i64", "u8", "i16"})
    for (int axis : {0, 1, 2, -1}) {
      auto graph = parseGraph(std::string(R"(
graph @g(%x: bf16[4, n, 6], %i: )") +
                              indexType + R"([2, 3]) -> (%y: unknown[*]) {
  %y = Gather(%x, %i) {axis = )" +
                              std::to_string(axis) + R"(}
  return %y
}
)");
      SCOPED_TRACE(std::string(indexType) + " axis " + std::to_string(axis));
      bool unsignedIndex = indexType[0] == 'u';
      expectIdentical(
          *graph, {{"x", randomOf(DType::BF16, {4, 5, 6}, 1)},
                   {"i", randomOf(*parseDType(indexType), {2, 3}, 2, unsignedIndex ? 0 : -4, 4)}});
    }
}

TEST(LowerMovement, GatherScalarIndex) {
  auto graph = parseGraph(R"(
graph @g(%x: i64[3], %i: i64[]) -> (%y: unknown[*]) {
  %y = Gather(%x, %i)
  return %y
}
)");
  expectIdentical(
      *graph, {{"x", randomOf(DType::I64, {3}, 1, 0, 100)}, {"i", Tensor::scalar<int64_t>(-1)}});
}

TEST(LowerMovement, GatherOutOfRangeIndexFailsTheRun) {
  // The evaluator throws; so does the compiled run, naming step and operand.
  auto graph = parseGraph(R"(
graph @g(%x: f32[3, 2], %i: i64[n]) -> (%y: unknown[*]) {
  %y = Gather(%x, %i) loc("emb")
  return %y
}
)");
  Tensor x = Tensor::fromVector<float>({3, 2}, {1, 2, 3, 4, 5, 6});
  std::vector<Tensor> y =
      runCompiled(*graph, {{"x", x}, {"i", Tensor::fromVector<int64_t>({2}, {2, -3})}});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_TRUE(y[0].identicalTo(Tensor::fromVector<float>({2, 2}, {5, 6, 1, 2})));
  for (int64_t bad : {int64_t(3), int64_t(-4), int64_t(1) << 40})
    for (int threads : {1, 2}) {
      SCOPED_TRACE(std::to_string(bad) + " threads " + std::to_string(threads));
      Tensor i = Tensor::fromVector<int64_t>({4}, {2, bad, 0, -3});
      EXPECT_THROW(runReference(*graph, {{"x", x}, {"i", i}}), Error);
      try {
        runCompiled(*graph, {{"x", x}, {"i", i}}, threads);
        ADD_FAILURE() << "the run did not fail";
      } catch (const Error &e) {
        EXPECT_STREQ(e.what(), "step 'Gather emb': an index of 'i' is out of range [-3, 3) for "
                               "axis 0 of 'x'");
      }
    }
}

// ---- Expand, Tile, Trilu ------------------------------------------------------

TEST(LowerMovement, ExpandBroadcasts) {
  auto graph = parseGraph(R"(
graph @e(%x: f32[3, 1], %m: bool[b, 1, 1, s]) -> (%y: unknown[*], %z: unknown[*], %w: unknown[*]) {
  const %shape: i64[3] = dense<[2, 3, 4]>
  const %one: i64[1] = dense<[1]>
  %y = Expand(%x, %shape)
  %z = Expand(%x, %one)
  %sh = Shape(%m)
  %w = Expand(%m, %sh)
  return %y, %z, %w
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {3, 1}, 1)},
                           {"m", randomOf(DType::Bool, {2, 1, 1, 5}, 2)}});
}

TEST(LowerMovement, ExpandSymbolicTarget) {
  // [b, 1, 1, s] -> [b, 1, s, s]: the attention-mask pattern.
  auto graph = parseGraph(R"(
graph @e(%m: i64[b, 1, 1, s], %q: f32[b, s]) -> (%y: unknown[*]) {
  const %first: i64[1] = dense<[0]>
  const %second: i64[1] = dense<[1]>
  const %two: i64[1] = dense<[2]>
  const %one: i64[1] = dense<[1]>
  %shape = Shape(%q)
  %bs = Slice(%shape, %first, %second)
  %ss = Slice(%shape, %second, %two)
  %target = Concat(%bs, %one, %ss, %ss) {axis = 0}
  %y = Expand(%m, %target)
  return %y
}
)");
  expectIdentical(*graph,
                  {{"m", randomOf(DType::I64, {2, 1, 1, 37}, 1, 0, 2)},
                   {"q", randomOf(DType::F32, {2, 37}, 2)}},
                  2);
}

TEST(LowerMovement, TileRepeats) {
  auto graph = parseGraph(R"(
graph @t(%x: i8[n, 3, 2]) -> (%y: unknown[*], %z: unknown[*]) {
  const %r1: i64[3] = dense<[2, 1, 3]>
  const %r2: i64[3] = dense<[1, 4, 1]>
  %y = Tile(%x, %r1)
  %z = Tile(%x, %r2)
  return %y, %z
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::I8, {5, 3, 2}, 1, -100, 100)}});
}

TEST(LowerMovement, TriluUpperLowerEveryK) {
  for (int64_t k : {-9, -2, -1, 0, 1, 3, 9, 1000000})
    for (int upper : {0, 1}) {
      auto graph = parseGraph(R"(
graph @t(%x: f64[b, 4, 6]) -> (%y: unknown[*]) {
  const %k: i64[] = dense<)" + std::to_string(k) +
                              R"(>
  %y = Trilu(%x, %k) {upper = )" +
                              std::to_string(upper) + R"(}
  return %y
}
)");
      SCOPED_TRACE("k " + std::to_string(k) + " upper " + std::to_string(upper));
      expectIdentical(*graph, {{"x", randomOf(DType::F64, {2, 4, 6}, 5)}});
    }
}

TEST(LowerMovement, TriluRunTimeKAndDefault) {
  auto graph = parseGraph(R"(
graph @t(%x: i32[s, s], %k: i64[]) -> (%y: unknown[*], %z: unknown[*]) {
  %y = Trilu(%x, %k) {upper = 0}
  %z = Trilu(%x)
  return %y, %z
}
)");
  for (int64_t k : {-3, 0, 2})
    expectIdentical(
        *graph,
        {{"x", randomOf(DType::I32, {130, 130}, 5, -9, 9)}, {"k", Tensor::scalar<int64_t>(k)}}, 2);
}

// ---- creation ops ---------------------------------------------------------------

TEST(LowerMovement, ShapeAndSizeOfSymbolicDims) {
  auto graph = parseGraph(R"(
graph @s(%x: f32[b, s, 3]) -> (%a: unknown[*], %c: unknown[*], %d: unknown[*]) {
  %a = Shape(%x)
  %c = Shape(%x) {end = -1, start = 1}
  %d = Size(%x)
  return %a, %c, %d
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {2, 5, 3}, 1)}});
}

TEST(LowerMovement, RangeConstantAndRunTime) {
  // n and m come from Shape at run time; the lengths m and m - n are symbolic.
  auto graph = parseGraph(R"(
graph @r(%x: f32[n, m]) -> (%a: unknown[*], %b: unknown[*], %c: unknown[*], %d: unknown[*], %e: unknown[*]) {
  const %zero: i64[] = dense<0>
  const %one: i64[] = dense<1>
  const %fs: f32[] = dense<0.5>
  const %fl: f32[] = dense<3.0>
  const %fd: f32[] = dense<0.25>
  const %ds: f64[] = dense<-1.0>
  const %dl: f64[] = dense<1.0>
  const %dd: f64[] = dense<0.1>
  const %is: i32[] = dense<10>
  const %il: i32[] = dense<-3>
  const %id: i32[] = dense<-4>
  const %axis: i64[1] = dense<[0]>
  %ns = Shape(%x) {end = 1}
  %ms = Shape(%x) {start = 1}
  %n = Squeeze(%ns, %axis)
  %m = Squeeze(%ms, %axis)
  %a = Range(%zero, %m, %one)
  %b = Range(%n, %m, %one)
  %c = Range(%fs, %fl, %fd)
  %d = Range(%is, %il, %id)
  %e = Range(%ds, %dl, %dd)
  return %a, %b, %c, %d, %e
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {3, 7}, 1)}});
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {2, 40000}, 1)}}, 3);
}

TEST(LowerMovement, ConstantOfShapeFills) {
  auto graph = parseGraph(R"(
graph @c(%x: f32[b, s]) -> (%a: unknown[*], %b: unknown[*], %c: unknown[*], %d: unknown[*]) {
  const %fixed: i64[2] = dense<[2, 3]>
  %shape = Shape(%x)
  %a = ConstantOfShape(%shape)
  %b = ConstantOfShape(%shape) {value = dense<[1.5]> : f32[1]}
  %c = ConstantOfShape(%fixed) {value = dense<[-7]> : i32[1]}
  %d = ConstantOfShape(%shape) {value = dense<[true]> : bool[1]}
  return %a, %b, %c, %d
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {3, 300}, 1)}});
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {0, 4}, 1)}});
}

TEST(LowerMovement, ConstantNodes) {
  auto graph = parseGraph(R"(
graph @c(%x: f32[2]) -> (%a: unknown[*], %b: unknown[*], %c: unknown[*], %d: unknown[*]) {
  %a = Constant() {value = dense<[1, 2, 3]> : u16[3]}
  %b = Constant() {value_floats = [0.5, -1.25]}
  %c = Constant() {value_int = 42}
  %d = Constant() {value_ints = []: ints}
  return %a, %b, %c, %d
}
)");
  expectIdentical(*graph, {{"x", randomOf(DType::F32, {2}, 1)}});
}

} // namespace
} // namespace onnxc
