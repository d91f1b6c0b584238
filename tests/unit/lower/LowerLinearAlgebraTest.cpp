//===- tests/unit/lower/LowerLinearAlgebraTest.cpp - MatMul, Gemm, Einsum --------===//
//
// Every case compiles the graph and compares with the reference evaluator:
// f32 through the packed (constant B) and runtime-B GEMM kernels with
// transformer shapes, odd M/N/K, symbolic dims and several threads; other
// dtypes, transA, 1-D operands and Einsum through the loop nests (integers
// must be exact, wraparound included).
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "codegen/ModelPlan.h"
#include "codegen/TargetSelection.h"
#include "driver/CompiledSession.h"
#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runReference;

using Inputs = std::map<std::string, Tensor>;

/// A constant declaration with `tensor`'s bytes in the text IR's hex form.
std::string constantText(const std::string &name, const std::string &type, const Tensor &tensor) {
  std::string text = "  const %" + name + ": " + type + " = dense<0x";
  const auto *bytes = static_cast<const uint8_t *>(tensor.rawData());
  char hex[3];
  for (size_t i = 0; i < tensor.byteSize(); ++i) {
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    text += hex;
  }
  return text + ">\n";
}

/// Number of constant buffers of the plan and their total bytes.
int64_t constantBytes(const ModelPlan &plan) {
  int64_t bytes = 0;
  for (const PlanBuffer &buffer : plan.buffers)
    if (buffer.kind == BufferKind::Constant)
      bytes += int64_t(buffer.constant.size);
  return bytes;
}

// ---- MatMul with constant B: the packed GEMM ---------------------------------

TEST(LowerMatMul, TransformerProjectionWithSymbolicRows) {
  Tensor w = randomOf(DType::F32, {384, 1536}, 1);
  auto graph = parseGraph(
      "graph @ffn(%x: f32[batch, seq, 384]) -> (%y: f32[batch, seq, 1536]) {\n" +
      constantText("w", "f32[384, 1536]", w) + "  %y = MatMul(%x, %w)\n  return %y\n}\n");
  // B is packed: the raw weights are not embedded besides the packed copy.
  ModelPlan plan = lowerOnly(*graph);
  EXPECT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(constantBytes(plan), 384 * 1536 * 4);
  for (auto [batch, seq, threads] : {std::tuple{2, 37, 4}, {1, 1, 1}, {3, 128, 3}})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {batch, seq, 384}, 2)}},
                                   1e-4, 1e-5, threads);
}

TEST(LowerMatMul, PackedOddSizes) {
  // N not a multiple of 16, M not a multiple of 6, K = 1, and a deep K that
  // takes several K blocks.
  for (auto [k, n] : {std::pair<int64_t, int64_t>{64, 50}, {1, 20}, {7, 3}, {700, 33}}) {
    Tensor w = randomOf(DType::F32, {k, n}, unsigned(k + n));
    std::string kn = std::to_string(k) + ", " + std::to_string(n);
    auto graph = parseGraph("graph @g(%x: f32[m, " + std::to_string(k) + "]) -> (%y: f32[m, " +
                            std::to_string(n) + "]) {\n" + constantText("w", "f32[" + kn + "]", w) +
                            "  %y = MatMul(%x, %w)\n  return %y\n}\n");
    for (int64_t m : {1, 13, 100})
      expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {m, k}, 5)}}, 1e-4, 1e-5,
                                     2);
  }
}

TEST(LowerMatMul, FewRowsSplitColumnsAcrossThreads) {
  // Up to 32 rows (a decoder's step, a batch of them) are split by columns:
  // chunks of whole four-panel groups over N = 2600 (the last chunk holds the
  // tail panel), with the bias and GELU fused into the store; 33 rows split by
  // rows; any thread count must give the single-thread result.
  Tensor w = randomOf(DType::F32, {64, 2600}, 11), bias = randomOf(DType::F32, {2600}, 12);
  auto graph =
      parseGraph("graph @g(%x: f32[m, 64]) -> (%y: f32[m, 2600]) {\n" +
                 constantText("w", "f32[64, 2600]", w) + constantText("b", "f32[2600]", bias) +
                 "  %p = MatMul(%x, %w)\n  %q = Add(%p, %b)\n  %y = Relu(%q)\n"
                 "  return %y\n}\n");
  for (int64_t m : {1, 2, 5, 13, 32, 33})
    for (int threads : {1, 2, 3})
      expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {m, 64}, unsigned(m))}},
                                     1e-4, 1e-5, threads);
}

TEST(LowerMatMul, PackedBatchedWeightsAndBroadcastA) {
  // B [3, 8, 24] constant with A [s, 8] broadcast against each of its items.
  Tensor w = randomOf(DType::F32, {3, 8, 24}, 7);
  auto graph =
      parseGraph("graph @g(%x: f32[s, 8]) -> (%y: f32[3, s, 24]) {\n" +
                 constantText("w", "f32[3, 8, 24]", w) + "  %y = MatMul(%x, %w)\n  return %y\n}\n");
  for (int64_t s : {1, 5, 40})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {s, 8}, 8)}}, 1e-4, 1e-5, 3);
}

TEST(LowerMatMul, OneDimensionalOperands) {
  Tensor w = randomOf(DType::F32, {9, 5}, 11), v = randomOf(DType::F32, {9}, 12);
  auto graph =
      parseGraph("graph @g(%x: f32[9], %m: f32[4, 9]) -> (%a: f32[5], %b: f32[4], %c: f32[]) {\n" +
                 constantText("w", "f32[9, 5]", w) + constantText("v", "f32[9]", v) +
                 "  %a = MatMul(%x, %w)\n  %b = MatMul(%m, %v)\n  %c = MatMul(%x, %x)\n"
                 "  return %a, %b, %c\n}\n");
  expectCompiledMatchesReference(
      *graph, {{"x", randomOf(DType::F32, {9}, 13)}, {"m", randomOf(DType::F32, {4, 9}, 14)}});
}

// ---- MatMul of two run-time operands ----------------------------------------

TEST(LowerMatMul, AttentionScoresAndContext) {
  auto graph = parseGraph(R"(
graph @attn(%q: f32[b, 4, s, 16], %kt: f32[b, 4, 16, s], %v: f32[b, 4, s, 16]) -> (%scores: f32[b, 4, s, s], %context: f32[b, 4, s, 16]) {
  %scores = MatMul(%q, %kt)
  %context = MatMul(%scores, %v)
  return %scores, %context
}
)");
  for (auto [b, s, threads] : {std::tuple{2, 23, 3}, {1, 1, 1}, {1, 130, 2}})
    expectCompiledMatchesReference(*graph,
                                   {{"q", randomOf(DType::F32, {b, 4, s, 16}, 1)},
                                    {"kt", randomOf(DType::F32, {b, 4, 16, s}, 2)},
                                    {"v", randomOf(DType::F32, {b, 4, s, 16}, 3)}},
                                   1e-4, 1e-5, threads);
}

TEST(LowerMatMul, RuntimeBroadcastBatch) {
  auto graph = parseGraph(R"(
graph @g(%a: f32[2, 1, 5, 8], %b: f32[3, 8, 7], %c: f32[n, 1, 6, 8], %d: f32[1, h, 8, 19]) -> (%x: f32[2, 3, 5, 7], %y: f32[n, h, 6, 19]) {
  %x = MatMul(%a, %b)
  %y = MatMul(%c, %d)
  return %x, %y
}
)");
  for (auto [n, h] : {std::pair<int64_t, int64_t>{2, 3}, {1, 1}, {3, 1}})
    expectCompiledMatchesReference(*graph,
                                   {{"a", randomOf(DType::F32, {2, 1, 5, 8}, 1)},
                                    {"b", randomOf(DType::F32, {3, 8, 7}, 2)},
                                    {"c", randomOf(DType::F32, {n, 1, 6, 8}, 3)},
                                    {"d", randomOf(DType::F32, {1, h, 8, 19}, 4)}},
                                   1e-4, 1e-5, 2);
}

/// Expects the evaluator and the compiled run to refuse `inputs`, naming the
/// node and the shape assumption the inputs break.
void expectMultiplyRefused(const Graph &graph, const Inputs &inputs, const std::string &node) {
  EXPECT_THROW(runReference(graph, inputs), Error);
  try {
    lowertest::runCompiled(graph, inputs);
    ADD_FAILURE() << "the compiled run did not fail";
  } catch (const Error &e) {
    std::string message = e.what();
    EXPECT_EQ(message.rfind("node " + node, 0), 0u) << message;
    EXPECT_NE(message.find(" must "), std::string::npos) << message;
  }
}

TEST(LowerMatMul, UnprovenDimsAreCheckedAtRunTime) {
  // Inference takes k (against 3) and b (against 4) on trust, as shape
  // assumptions; a compiled run with other values must be refused as the
  // evaluator refuses it, not read past
  // an operand (found by the jit-differential fuzzer: MatMul of [0] and
  // [3, 5] returned numbers).
  Tensor w = randomOf(DType::F32, {3, 5}, 1), batched = randomOf(DType::F32, {4, 3, 2}, 2);
  auto graph =
      parseGraph("graph @g(%x: f32[k], %y: f32[b, 6, 3]) -> (%u: unknown[*], %v: unknown[*]) {\n" +
                 constantText("w", "f32[3, 5]", w) + constantText("wb", "f32[4, 3, 2]", batched) +
                 "  %u = MatMul(%x, %w)\n  %v = MatMul(%y, %wb)\n  return %u, %v\n}\n");
  auto gemm = parseGraph(R"(
graph @g(%p: f32[2, k], %q: f32[3, 2], %c: f32[r, 2]) -> (%g: unknown[*]) {
  %g = Gemm(%p, %q, %c)
  return %g
}
)");
  auto inputs = [](int64_t k, int64_t b) {
    return Inputs{{"x", randomOf(DType::F32, {k}, 3)}, {"y", randomOf(DType::F32, {b, 6, 3}, 4)}};
  };
  auto gemmInputs = [](int64_t k, int64_t r) {
    return Inputs{{"p", randomOf(DType::F32, {2, k}, 5)},
                  {"q", randomOf(DType::F32, {3, 2}, 6)},
                  {"c", randomOf(DType::F32, {r, 2}, 7)}};
  };
  for (int64_t b : {1, 4})
    expectCompiledMatchesReference(*graph, inputs(3, b), 1e-4, 1e-5);
  for (int64_t r : {1, 2})
    expectCompiledMatchesReference(*gemm, gemmInputs(3, r), 1e-4, 1e-5);
  for (int64_t k : {0, 2, 4}) {
    expectMultiplyRefused(*graph, inputs(k, 1), "MatMul");
    expectMultiplyRefused(*gemm, gemmInputs(k, 1), "Gemm");
  }
  for (int64_t b : {0, 2, 5})
    expectMultiplyRefused(*graph, inputs(3, b), "MatMul");
  for (int64_t r : {0, 3})
    expectMultiplyRefused(*gemm, gemmInputs(3, r), "Gemm");
}

TEST(LowerMatMul, RuntimeColumnBlocksAndDeepK) {
  // K symbolic: B is packed in column blocks of 65536 / K floats; K > 4096
  // takes the loop nest; N symbolic with a 2-D runtime B split over rows.
  auto graph = parseGraph(R"(
graph @g(%a: f32[m, k], %b: f32[k, 2000], %c: f32[m, 32], %d: f32[32, n]) -> (%x: f32[m, 2000], %y: f32[m, n]) {
  %x = MatMul(%a, %b)
  %y = MatMul(%c, %d)
  return %x, %y
}
)");
  for (auto [m, k, n] :
       {std::tuple<int64_t, int64_t, int64_t>{7, 100, 5}, {200, 40, 1100}, {3, 4100, 17}})
    expectCompiledMatchesReference(*graph,
                                   {{"a", randomOf(DType::F32, {m, k}, 1)},
                                    {"b", randomOf(DType::F32, {k, 2000}, 2)},
                                    {"c", randomOf(DType::F32, {m, 32}, 3)},
                                    {"d", randomOf(DType::F32, {32, n}, 4)}},
                                   1e-4, 1e-5, 2);
}

TEST(LowerMatMul, PortableTargetTakesTheLoopNest) {
  // Without AVX2+FMA the f32 products use the loop nest (double sums).
  Tensor w = randomOf(DType::F32, {24, 40}, 1);
  auto graph = parseGraph("graph @g(%x: f32[m, 24], %y: f32[3, 40, 7]) -> (%a: f32[m, 40], %b: "
                          "f32[m, 40], %c: f32[3, m, 7]) {\n" +
                          constantText("w", "f32[24, 40]", w) +
                          "  %a = MatMul(%x, %w)\n  %b = Gemm(%x, %w) {alpha = 0.5}\n"
                          "  %c = MatMul(%a, %y)\n  return %a, %b, %c\n}\n");
  Inputs inputs = {{"x", randomOf(DType::F32, {9, 24}, 2)},
                   {"y", randomOf(DType::F32, {3, 40, 7}, 3)}};
  std::unique_ptr<JitModel> model = compileModelJit(*graph, TargetSelection::genericX86_64());
  CompiledSession session(model->descriptor(), 2);
  std::vector<Tensor> actual = session.run({&inputs.at("x"), &inputs.at("y")});
  std::vector<Tensor> expected = runReference(*graph, inputs);
  ASSERT_EQ(actual.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    ASSERT_EQ(actual[i].typeString(), expected[i].typeString());
    for (int64_t e = 0; e < expected[i].numElements(); ++e) {
      double got = actual[i].elementAsDouble(e), want = expected[i].elementAsDouble(e);
      ASSERT_LE(std::fabs(got - want), 1e-6 + 1e-6 * std::fabs(want))
          << "output " << i << " @" << e;
    }
  }
}

// ---- Gemm ------------------------------------------------------------------

TEST(LowerGemm, ConstantWeightsWithBiasForms) {
  // transB weights (a Linear layer), alpha and beta folded, C as a row bias,
  // a full [M, N] residual (constant or computed), a column, a scalar.
  Tensor w = randomOf(DType::F32, {40, 24}, 1), row = randomOf(DType::F32, {40}, 2);
  Tensor column = randomOf(DType::F32, {5, 1}, 3), full = randomOf(DType::F32, {5, 40}, 4);
  auto graph = parseGraph(
      "graph @g(%x: f32[m, 24], %y: f32[5, 24], %r: f32[m, 40]) -> (%a: f32[m, 40], %b: f32[m, "
      "40], "
      "%c: f32[5, 40], %d: f32[5, 40], %e: f32[m, 40], %f: f32[m, 40], %g: f32[m, 40]) {\n" +
      constantText("w", "f32[40, 24]", w) + constantText("bias", "f32[40]", row) +
      constantText("column", "f32[5, 1]", column) + constantText("full", "f32[5, 40]", full) +
      constantText("one", "f32[1]", randomOf(DType::F32, {1}, 5)) +
      "  %a = Gemm(%x, %w, %bias) {transB = 1}\n"
      "  %b = Gemm(%x, %w, %bias) {alpha = 0.5, beta = -2.0, transB = 1}\n"
      "  %c = Gemm(%y, %w, %column) {beta = 3.0, transB = 1}\n"
      "  %d = Gemm(%y, %w, %full) {alpha = 2.0, beta = 0.25, transB = 1}\n"
      "  %e = Gemm(%x, %w, %one) {transB = 1}\n"
      "  %f = Gemm(%x, %w, %r) {transB = 1}\n"
      "  %g = Gemm(%x, %w, %r) {beta = 1.5, transB = 1}\n"
      "  return %a, %b, %c, %d, %e, %f, %g\n}\n");
  for (int64_t m : {1, 5, 61})
    expectCompiledMatchesReference(*graph,
                                   {{"x", randomOf(DType::F32, {m, 24}, 6)},
                                    {"y", randomOf(DType::F32, {5, 24}, 7)},
                                    {"r", randomOf(DType::F32, {m, 40}, 8)}},
                                   1e-4, 1e-5, 2);
}

TEST(LowerGemm, RuntimeOperandsAndTransA) {
  auto graph = parseGraph(R"(
graph @g(%a: f32[m, 12], %b: f32[20, 12], %c: f32[20], %at: f32[12, m], %bt: f32[12, 20]) -> (%x: f32[m, 20], %y: f32[m, 20], %z: f32[m, 20]) {
  %x = Gemm(%a, %b, %c) {alpha = 0.5, beta = 2.0, transB = 1}
  %y = Gemm(%at, %bt, %c) {transA = 1}
  %z = Gemm(%at, %b) {transA = 1, transB = 1}
  return %x, %y, %z
}
)");
  for (int64_t m : {1, 7, 50})
    expectCompiledMatchesReference(*graph,
                                   {{"a", randomOf(DType::F32, {m, 12}, 1)},
                                    {"b", randomOf(DType::F32, {20, 12}, 2)},
                                    {"c", randomOf(DType::F32, {20}, 3)},
                                    {"at", randomOf(DType::F32, {12, m}, 4)},
                                    {"bt", randomOf(DType::F32, {12, 20}, 5)}},
                                   1e-4, 1e-5, 2);
}

TEST(LowerGemm, OtherDTypes) {
  auto graph = parseGraph(R"(
graph @g(%a: f64[4, 6], %b: f64[6, 3], %c: f64[3], %i: i32[4, 6], %j: i32[6, 3]) -> (%x: f64[4, 3], %y: i32[4, 3]) {
  %x = Gemm(%a, %b, %c) {alpha = 0.75, beta = 0.5}
  %y = Gemm(%i, %j) {alpha = 2.0}
  return %x, %y
}
)");
  expectCompiledMatchesReference(*graph,
                                 {{"a", randomOf(DType::F64, {4, 6}, 1)},
                                  {"b", randomOf(DType::F64, {6, 3}, 2)},
                                  {"c", randomOf(DType::F64, {3}, 3)},
                                  {"i", randomOf(DType::I32, {4, 6}, 4, -50, 50)},
                                  {"j", randomOf(DType::I32, {6, 3}, 5, -50, 50)}},
                                 1e-12, 1e-12);
}

// ---- other dtypes ------------------------------------------------------------

TEST(LowerMatMul, IntegersAreExactWithWraparound) {
  auto graph = parseGraph(R"(
graph @g(%a: i8[b, 5, 9], %b: i8[9, 4], %c: i64[3, 7], %d: i64[7, 2], %e: u8[6, 5], %f: u8[5, 6], %g: i32[2, 3, 4], %h: i32[2, 4, 3]) -> (%w: i8[b, 5, 4], %x: i64[3, 2], %y: u8[6, 6], %z: i32[2, 3, 3]) {
  %w = MatMul(%a, %b)
  %x = MatMul(%c, %d)
  %y = MatMul(%e, %f)
  %z = MatMul(%g, %h)
  return %w, %x, %y, %z
}
)");
  // i8 and u8 products overflow their type: the result wraps like the
  // evaluator's (i64 arithmetic, truncated).
  expectCompiledMatchesReference(
      *graph, {{"a", randomOf(DType::I8, {2, 5, 9}, 1, -128, 128)},
               {"b", randomOf(DType::I8, {9, 4}, 2, -128, 128)},
               {"c", randomOf(DType::I64, {3, 7}, 3, -3000000000.0, 3000000000.0)},
               {"d", randomOf(DType::I64, {7, 2}, 4, -3000000000.0, 3000000000.0)},
               {"e", randomOf(DType::U8, {6, 5}, 5, 0, 256)},
               {"f", randomOf(DType::U8, {5, 6}, 6, 0, 256)},
               {"g", randomOf(DType::I32, {2, 3, 4}, 7, -100000, 100000)},
               {"h", randomOf(DType::I32, {2, 4, 3}, 8, -100000, 100000)}});
}

TEST(LowerMatMul, HalfAndDoublePrecision) {
  auto graph = parseGraph(R"(
graph @g(%a: f16[s, 8], %b: f16[8, 5], %c: bf16[3, 8], %d: bf16[8, 2], %e: f64[2, s, 6], %f: f64[6, 3]) -> (%x: f16[s, 5], %y: bf16[3, 2], %z: f64[2, s, 3]) {
  %x = MatMul(%a, %b)
  %y = MatMul(%c, %d)
  %z = MatMul(%e, %f)
  return %x, %y, %z
}
)");
  expectCompiledMatchesReference(*graph,
                                 {{"a", randomOf(DType::F16, {7, 8}, 1)},
                                  {"b", randomOf(DType::F16, {8, 5}, 2)},
                                  {"c", randomOf(DType::BF16, {3, 8}, 3)},
                                  {"d", randomOf(DType::BF16, {8, 2}, 4)},
                                  {"e", randomOf(DType::F64, {2, 7, 6}, 5)},
                                  {"f", randomOf(DType::F64, {6, 3}, 6)}},
                                 1e-3, 1e-6);
}

// ---- Einsum --------------------------------------------------------------------

TEST(LowerEinsum, ContractionsDiagonalsAndReductions) {
  // bmm and scores are batched products (lowered as MatMul); the others take
  // the Einsum loop nest.
  auto graph = parseGraph(R"(
graph @g(%a: f32[b, 4, 5], %c: f32[b, 5, 3], %q: f32[b, 2, s, 8], %k: f32[b, 2, s, 8], %sq: f32[6, 6], %v: f32[7], %w: f32[4]) -> (%bmm: f32[b, 4, 3], %scores: f32[b, 2, s, s], %diag: f32[6], %total: f32[], %outer: f32[7, 4], %transposed: f32[6, 6], %chain: f32[6, 6], %dot: f32[], %permuted: f32[b, 3, 4]) {
  %bmm = Einsum(%a, %c) {equation = "bij,bjk->bik"}
  %permuted = Einsum(%a, %c) {equation = "bij,bjk->bki"}
  %scores = Einsum(%q, %k) {equation = "bhqd,bhkd->bhqk"}
  %diag = Einsum(%sq) {equation = "ii->i"}
  %total = Einsum(%sq) {equation = "ij->"}
  %outer = Einsum(%v, %w) {equation = "i,j->ij"}
  %transposed = Einsum(%sq) {equation = "ji"}
  %chain = Einsum(%sq, %sq, %sq) {equation = "ij,jk,kl->il"}
  %dot = Einsum(%v, %v) {equation = "i,i"}
  return %bmm, %scores, %diag, %total, %outer, %transposed, %chain, %dot, %permuted
}
)");
  for (auto [b, s] : {std::pair<int64_t, int64_t>{2, 5}, {1, 1}})
    expectCompiledMatchesReference(*graph,
                                   {{"a", randomOf(DType::F32, {b, 4, 5}, 1)},
                                    {"c", randomOf(DType::F32, {b, 5, 3}, 2)},
                                    {"q", randomOf(DType::F32, {b, 2, s, 8}, 3)},
                                    {"k", randomOf(DType::F32, {b, 2, s, 8}, 4)},
                                    {"sq", randomOf(DType::F32, {6, 6}, 5)},
                                    {"v", randomOf(DType::F32, {7}, 6)},
                                    {"w", randomOf(DType::F32, {4}, 7)}},
                                   1e-5, 1e-6, 2);
}

TEST(LowerEinsum, EllipsisBroadcastAndIntegers) {
  auto graph = parseGraph(R"(
graph @g(%a: f64[2, 1, 3, 4], %c: f64[5, 4, 2], %i: i64[3, 3], %j: i32[2, 3], %l: i32[3, 4]) -> (%x: f64[2, 5, 3, 2], %y: i64[], %z: i32[2, 4], %u: f64[3, 4]) {
  %x = Einsum(%a, %c) {equation = "...ij,...jk"}
  %y = Einsum(%i) {equation = "ii"}
  %z = Einsum(%j, %l) {equation = "ij,jk->ik"}
  %u = Einsum(%a) {equation = "...ij->ij"}
  return %x, %y, %z, %u
}
)");
  expectCompiledMatchesReference(*graph,
                                 {{"a", randomOf(DType::F64, {2, 1, 3, 4}, 1)},
                                  {"c", randomOf(DType::F64, {5, 4, 2}, 2)},
                                  {"i", randomOf(DType::I64, {3, 3}, 3, -1000, 1000)},
                                  {"j", randomOf(DType::I32, {2, 3}, 4, -1000, 1000)},
                                  {"l", randomOf(DType::I32, {3, 4}, 5, -1000, 1000)}},
                                 1e-12, 1e-12);
}

} // namespace
} // namespace onnxc

namespace onnxc {
namespace {

// A Linear layer with a residual, as torch exports it: MatMul -> Add bias ->
// Relu -> Add x. With the weights constant, the three nodes after the MatMul
// go into the GEMM's store: one step, same numbers as the evaluator.
TEST(LowerMatMulEpilogue, BiasActivationAndResidualFuseIntoOneStep) {
  std::string weights, bias;
  for (int i = 0; i < 40 * 40; ++i)
    weights += (i ? ", " : "") + std::to_string(((i * 29) % 23 - 11) / 50.0);
  for (int i = 0; i < 40; ++i)
    bias += (i ? ", " : "") + std::to_string((i % 7 - 3) / 10.0);
  auto graph = lowertest::parseGraph(R"(
graph @linear(%x: f32[batch, seq, 40]) -> (%y: f32[batch, seq, 40]) {
  const %w: f32[40, 40] = dense<[)" + weights +
                                     R"(]>
  const %b: f32[40] = dense<[)" + bias +
                                     R"(]>
  %h = MatMul(%x, %w)
  %a = Add(%b, %h)
  %r = Relu(%a)
  %y = Add(%r, %x)
  return %y
}
)");
  ModelPlan plan = lowertest::lowerOnly(*graph);
  ASSERT_EQ(plan.steps.size(), 1u);
  EXPECT_EQ(plan.steps[0].name.rfind("MatMul+Add+Relu+Add", 0), 0u) << plan.steps[0].name;
  for (int64_t seq : {1, 7, 50})
    lowertest::expectCompiledMatchesReference(
        *graph, {{"x", lowertest::randomOf(DType::F32, {2, seq, 40}, unsigned(seq))}}, 1e-4, 1e-5,
        2);
}

// The FFN-in of a transformer after fuse-gelu: MatMul -> Add bias -> Gelu
// (erf and tanh forms), alone and with a residual Add. The Gelu joins the
// GEMM's store; pre-activations reach about +-6, through GELU's negative tail.
TEST(LowerMatMulEpilogue, BiasAndGeluFuseIntoOneStep) {
  std::string weights, bias;
  for (int i = 0; i < 40 * 48; ++i)
    weights += (i ? ", " : "") + std::to_string(((i * 29) % 23 - 11) / 20.0);
  for (int i = 0; i < 48; ++i)
    bias += (i ? ", " : "") + std::to_string((i % 7 - 3) / 2.0);
  for (const char *approximate : {"none", "tanh"})
    for (bool residual : {false, true}) {
      SCOPED_TRACE(std::string(approximate) + (residual ? " + residual" : ""));
      std::string tail =
          residual ? "  %g = Gelu(%a) {approximate = \"" + std::string(approximate) +
                         "\"}\n  %y = Add(%g, %r)\n"
                   : "  %y = Gelu(%a) {approximate = \"" + std::string(approximate) + "\"}\n";
      auto graph = lowertest::parseGraph(R"(
graph @ffn(%x: f32[batch, seq, 40], %r: f32[batch, seq, 48]) -> (%y: f32[batch, seq, 48]) {
  const %w: f32[40, 48] = dense<[)" + weights +
                                         R"(]>
  const %b: f32[48] = dense<[)" + bias + R"(]>
  %h = MatMul(%x, %w)
  %a = Add(%h, %b)
)" + tail + R"(  return %y
}
)");
      ModelPlan plan = lowertest::lowerOnly(*graph);
      ASSERT_EQ(plan.steps.size(), 1u);
      std::string expected = residual ? "MatMul+Add+Gelu+Add" : "MatMul+Add+Gelu";
      EXPECT_EQ(plan.steps[0].name.rfind(expected, 0), 0u) << plan.steps[0].name;
      for (int64_t seq : {1, 7, 50})
        lowertest::expectCompiledMatchesReference(
            *graph,
            {{"x", lowertest::randomOf(DType::F32, {2, seq, 40}, unsigned(seq))},
             {"r", lowertest::randomOf(DType::F32, {2, seq, 48}, unsigned(seq + 100))}},
            1e-4, 1e-5, 2);
    }
}

// HF's Conv1D as exported: Gemm (C the bias) -> Reshape -> Gelu, here with a
// residual Add after it, and a Gemm without C whose bias is an Add after an
// Unsqueeze. The view and the nodes after it join the GEMM's store (one
// step); a Gemm whose C is a column (added after the GEMM) keeps its Gelu
// apart, since the activation must follow the whole sum.
TEST(LowerGemmEpilogue, ViewsBiasGeluAndResidualFuseIntoOneStep) {
  Tensor w = randomOf(DType::F32, {24, 48}, 11), bias = randomOf(DType::F32, {48}, 12);
  Tensor column = randomOf(DType::F32, {5, 1}, 13);
  auto text = [&](const std::string &body, const std::string &inputs, const std::string &results) {
    return "graph @g(" + inputs + ") -> (" + results + ") {\n" +
           constantText("w", "f32[24, 48]", w) + constantText("bias", "f32[48]", bias) +
           constantText("column", "f32[5, 1]", column) +
           "  const %shape: i64[3] = dense<[-1, 4, 12]>\n"
           "  const %axes: i64[1] = dense<[0]>\n" +
           body + "}\n";
  };
  struct Case {
    std::string body, inputs, results, step;
  };
  std::vector<Case> cases = {
      {"  %h = Gemm(%x, %w, %bias)\n  %v = Reshape(%h, %shape)\n"
       "  %g = Gelu(%v) {approximate = \"tanh\"}\n  %y = Add(%g, %r)\n  return %y\n",
       "%x: f32[m, 24], %r: f32[m, 4, 12]", "%y: f32[m, 4, 12]", "Gemm+Reshape+Gelu+Add"},
      {"  %h = Gemm(%x, %w)\n  %v = Unsqueeze(%h, %axes)\n  %a = Add(%v, %bias)\n"
       "  %y = Gelu(%a)\n  return %y\n",
       "%x: f32[m, 24], %r: f32[m, 4, 12]", "%y: f32[1, m, 48]", "Gemm+Unsqueeze+Add+Gelu"},
  };
  for (const Case &c : cases) {
    SCOPED_TRACE(c.step);
    auto graph = parseGraph(text(c.body, c.inputs, c.results));
    ModelPlan plan = lowerOnly(*graph);
    ASSERT_EQ(plan.steps.size(), 1u);
    EXPECT_EQ(plan.steps[0].name.rfind(c.step, 0), 0u) << plan.steps[0].name;
    for (int64_t m : {1, 7, 61})
      expectCompiledMatchesReference(*graph,
                                     {{"x", randomOf(DType::F32, {m, 24}, unsigned(m))},
                                      {"r", randomOf(DType::F32, {m, 4, 12}, unsigned(m + 50))}},
                                     1e-4, 1e-5, 2);
  }
  auto apart = parseGraph(text("  %h = Gemm(%y, %w, %column) {beta = 2.0}\n"
                               "  %z = Gelu(%h)\n  return %z\n",
                               "%y: f32[5, 24]", "%z: f32[5, 48]"));
  EXPECT_EQ(lowerOnly(*apart).steps.size(), 2u);
  expectCompiledMatchesReference(*apart, {{"y", randomOf(DType::F32, {5, 24}, 14)}}, 1e-4, 1e-5);
}

// The same chain where the MatMul's result is also read elsewhere: nothing
// fuses (the GEMM must store the plain product), and results still match.
TEST(LowerMatMulEpilogue, SharedResultIsNotFused) {
  auto graph = lowertest::parseGraph(R"(
graph @shared(%x: f32[n, 4]) -> (%y: f32[n, 4], %h: f32[n, 4]) {
  const %w: f32[4, 4] = dense<[1.0, 0.5, -0.5, 2.0, 0.25, -1.0, 1.5, 0.0, 0.75, 0.5, -0.25, 1.0, -2.0, 1.0, 0.5, 0.125]>
  const %b: f32[4] = dense<[0.1, 0.2, 0.3, 0.4]>
  %h = MatMul(%x, %w)
  %y = Add(%h, %b)
  return %y, %h
}
)");
  ModelPlan plan = lowertest::lowerOnly(*graph);
  EXPECT_EQ(plan.steps.size(), 2u);
  lowertest::expectCompiledMatchesReference(*graph,
                                            {{"x", lowertest::randomOf(DType::F32, {9, 4}, 3)}});
}

} // namespace
} // namespace onnxc
