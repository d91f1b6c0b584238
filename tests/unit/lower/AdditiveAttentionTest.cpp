//===- tests/unit/lower/AdditiveAttentionTest.cpp - The AdditiveAttention op -----===//
//
// onnxc's AdditiveAttention (made by fuse-additive-attention): the unfused
// Bahdanau graph, the graph after the pass through the reference evaluator
// and the compiled kernel must agree, masks included (a row hiding every key
// is NaN with a -inf fill, the mean of the values with a finite one); the
// kernel against the reference at key counts of one, a tile and a bit,
// value sizes past a chunk, sizes below the vector width, f64, two threads;
// the shape rule's refusals.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "ir/Error.h"
#include "passes/PassRegistry.h"

#include <gtest/gtest.h>

#include <cmath>

using namespace onnxc;
using namespace onnxc::test;
using lowertest::expectCompiledMatchesReference;
using lowertest::parseGraph;
using lowertest::randomOf;
using lowertest::runCompiled;
using lowertest::runReference;

namespace {

enum class MaskKind { None, Hidden, Visible, Additive };

/// The exported Bahdanau pattern over q [b, t, d], k [b, s, d], v [b, s, dv]
/// with score vector w [d]; the mask input `m` is bool [b, 1, s] (Hidden:
/// Where(m, fill, s); Visible: Where(m, s, fill)) or f32 [b, t, s].
std::string unfusedGraph(int64_t d, int64_t dv, MaskKind mask, const std::string &fill) {
  std::string sizes = std::to_string(d), values = std::to_string(dv);
  std::string maskInput = mask == MaskKind::None       ? ""
                          : mask == MaskKind::Additive ? ", %m: f32[b, t, s]"
                                                       : ", %m: bool[b, 1, s]";
  std::string text = "graph @g(%q: f32[b, t, " + sizes + "], %k: f32[b, s, " + sizes +
                     "], %v: f32[b, s, " + values + "], %w: f32[" + sizes + "]" + maskInput +
                     ") -> (%y: f32[b, t, " + values +
                     "]) {\n"
                     "  const %a1: i64[1] = dense<[1]>\n"
                     "  const %a2: i64[1] = dense<[2]>\n"
                     "  const %fill: f32[] = dense<" +
                     fill +
                     ">\n"
                     "  %qu = Unsqueeze(%q, %a2)\n"
                     "  %ku = Unsqueeze(%k, %a1)\n"
                     "  %e = Add(%qu, %ku)\n"
                     "  %t = Tanh(%e)\n"
                     "  %s = MatMul(%t, %w)\n";
  switch (mask) {
  case MaskKind::None:
    text += "  %p = Softmax(%s) {axis = -1}\n";
    break;
  case MaskKind::Hidden:
    text += "  %sm = Where(%m, %fill, %s)\n";
    break;
  case MaskKind::Visible:
    text += "  %sm = Where(%m, %s, %fill)\n";
    break;
  case MaskKind::Additive:
    text += "  %sm = Add(%s, %m)\n";
    break;
  }
  if (mask != MaskKind::None)
    text += "  %p = Softmax(%sm) {axis = -1}\n";
  return text + "  %y = MatMul(%p, %v)\n"
                "  return %y\n}\n";
}

/// The fused op over the same inputs (`attrs` as in the text IR, or "").
std::string fusedGraph(const std::string &dtype, const std::string &d, const std::string &dv,
                       const std::string &maskType, const std::string &attrs = "") {
  std::string maskInput = maskType.empty() ? "" : ", %m: " + maskType;
  return "graph @g(%q: " + dtype + "[b, t, " + d + "], %k: " + dtype + "[b, s, " + d +
         "], %v: " + dtype + "[b, s, " + dv + "], %w: " + dtype + "[" + d + "]" + maskInput +
         ") -> (%y: " + dtype + "[b, t, " + dv + "]) {\n  %y = AdditiveAttention(%q, %k, %v, %w" +
         (maskType.empty() ? "" : ", %m") + ")" + (attrs.empty() ? "" : " {" + attrs + "}") +
         "\n  return %y\n}\n";
}

std::map<std::string, Tensor> inputsFor(DType dtype, int64_t b, int64_t t, int64_t s, int64_t d,
                                        int64_t dv, const std::string &maskType = "",
                                        unsigned seed = 1) {
  std::map<std::string, Tensor> in = {{"q", randomOf(dtype, {b, t, d}, seed)},
                                      {"k", randomOf(dtype, {b, s, d}, seed + 1)},
                                      {"v", randomOf(dtype, {b, s, dv}, seed + 2)},
                                      {"w", randomOf(dtype, {d}, seed + 3, -2.0, 2.0)}};
  if (maskType == "bool")
    in.emplace("m", randomOf(DType::Bool, {b, 1, s}, seed + 4));
  else if (maskType == "f32")
    in.emplace("m", randomOf(DType::F32, {b, t, s}, seed + 4, -3.0, 0.0));
  return in;
}

/// Every element of `got` is NaN where `expected` is, else within tolerance.
void expectSameValues(const Tensor &got, const Tensor &expected, double tolerance = 2e-5) {
  ASSERT_EQ(got.dims(), expected.dims());
  std::vector<double> a = asDoubles(got), b = asDoubles(expected);
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(b[i])) {
      EXPECT_TRUE(std::isnan(a[i])) << "element " << i << " is " << a[i] << ", expected NaN";
      continue;
    }
    EXPECT_NEAR(a[i], b[i], tolerance * (1 + std::fabs(b[i]))) << "element " << i;
  }
}

/// Runs fuse-additive-attention and dce on `graph`; returns how many
/// AdditiveAttention ops it has afterwards.
size_t fuse(Graph &graph) {
  for (const char *name : {"fuse-additive-attention", "dce"}) {
    PassContext context(name);
    createPass(name)->run(graph, context);
  }
  return countKind(graph, OpKind::AdditiveAttention);
}

/// The unfused graph through the evaluator, the fused one through the
/// evaluator and the compiled kernel: all the same on `inputs`.
void expectFusedMatchesUnfused(MaskKind mask, const std::string &fill,
                               const std::map<std::string, Tensor> &inputs, int64_t d, int64_t dv,
                               std::vector<double> *firstRow = nullptr) {
  auto graph = parseGraph(unfusedGraph(d, dv, mask, fill));
  Tensor expected = runReference(*graph, inputs)[0];
  ASSERT_EQ(fuse(*graph), 1u);
  EXPECT_EQ(countKind(*graph, OpKind::Softmax), 0u);
  expectSameValues(runReference(*graph, inputs)[0], expected);
  expectSameValues(runCompiled(*graph, inputs)[0], expected);
  if (firstRow) {
    std::vector<double> all = asDoubles(expected);
    firstRow->assign(all.begin(), all.begin() + dv);
  }
}

TEST(AdditiveAttention, FusedMatchesTheUnfusedGraphForEveryMaskForm) {
  for (MaskKind mask : {MaskKind::None, MaskKind::Hidden, MaskKind::Visible, MaskKind::Additive}) {
    SCOPED_TRACE(int(mask));
    std::string type = mask == MaskKind::None ? "" : mask == MaskKind::Additive ? "f32" : "bool";
    expectFusedMatchesUnfused(mask, "-inf", inputsFor(DType::F32, 2, 5, 9, 12, 6, type), 12, 6);
    if (type == "bool")
      expectFusedMatchesUnfused(mask, "-3.5", inputsFor(DType::F32, 2, 5, 9, 12, 6, type, 7), 12,
                                6);
  }
}

TEST(AdditiveAttention, RowHidingEveryKeyIsNanWithMinusInfAndUniformWithAFiniteFill) {
  const int64_t b = 2, t = 3, s = 70, d = 20, dv = 11;
  std::map<std::string, Tensor> inputs = inputsFor(DType::F32, b, t, s, d, dv, "bool");
  Tensor &mask = inputs.at("m");
  for (int64_t j = 0; j < s; ++j) // batch 0: every key hidden (Where(m, fill, s))
    mask.setElementFromDouble(j, 1.0);
  std::vector<double> row;
  expectFusedMatchesUnfused(MaskKind::Hidden, "-inf", inputs, d, dv, &row);
  for (double value : row)
    EXPECT_TRUE(std::isnan(value));
  expectFusedMatchesUnfused(MaskKind::Hidden, "-10000.0", inputs, d, dv, &row);
  std::vector<double> v = asDoubles(inputs.at("v"));
  for (int64_t c = 0; c < dv; ++c) {
    double mean = 0;
    for (int64_t j = 0; j < s; ++j)
      mean += v[size_t(j * dv + c)] / double(s);
    EXPECT_NEAR(row[size_t(c)], mean, 1e-5);
  }
}

TEST(AdditiveAttention, CompiledMatchesReferenceAcrossTilesChunksAndTails) {
  struct Case {
    int64_t b, t, s, d, dv;
  };
  // One key; a tile and a bit (64 + 64 + 2 keys); a value size past a chunk
  // (512 + 8); sizes below the vector width; vector width plus a tail.
  for (Case c : {Case{2, 3, 1, 44, 36}, Case{1, 2, 130, 8, 5}, Case{2, 2, 65, 16, 520},
                 Case{1, 1, 7, 3, 3}, Case{3, 4, 17, 13, 9}}) {
    SCOPED_TRACE(std::to_string(c.s) + " keys, size " + std::to_string(c.d) + ", values " +
                 std::to_string(c.dv));
    std::string d = std::to_string(c.d), dv = std::to_string(c.dv);
    expectCompiledMatchesReference(*parseGraph(fusedGraph("f32", d, dv, "")),
                                   inputsFor(DType::F32, c.b, c.t, c.s, c.d, c.dv));
    expectCompiledMatchesReference(*parseGraph(fusedGraph("f32", d, dv, "bool[b, 1, s]")),
                                   inputsFor(DType::F32, c.b, c.t, c.s, c.d, c.dv, "bool"));
    expectCompiledMatchesReference(
        *parseGraph(fusedGraph("f32", d, dv, "bool[b, 1, s]", "mask_fill = -2.5")),
        inputsFor(DType::F32, c.b, c.t, c.s, c.d, c.dv, "bool"));
    expectCompiledMatchesReference(*parseGraph(fusedGraph("f32", d, dv, "f32[b, t, s]")),
                                   inputsFor(DType::F32, c.b, c.t, c.s, c.d, c.dv, "f32"));
  }
}

TEST(AdditiveAttention, CompiledSymbolicSizesF64AndThreads) {
  // Sizes known only at run time.
  expectCompiledMatchesReference(*parseGraph(fusedGraph("f32", "d", "dv", "")),
                                 inputsFor(DType::F32, 2, 3, 20, 19, 10));
  // f64 takes the scalar loops (tanh and exp at f32 accuracy).
  expectCompiledMatchesReference(*parseGraph(fusedGraph("f64", "12", "7", "bool[b, 1, s]")),
                                 inputsFor(DType::F64, 2, 3, 9, 12, 7, "bool"), 1e-5, 1e-6);
  expectCompiledMatchesReference(*parseGraph(fusedGraph("f32", "24", "16", "")),
                                 inputsFor(DType::F32, 3, 40, 33, 24, 16), 1e-4, 1e-6,
                                 /*threads=*/2);
}

TEST(AdditiveAttention, ShapeRuleTypesTheResultAndRefusesWhatDoesNotFit) {
  auto graph = parseGraph(fusedGraph("f32", "8", "5", "bool[b, 1, s]", "mask_fill = -1.0"));
  EXPECT_EQ(graph->outputs()[0].value->type().str(), "f32[b, t, 5]");
  EXPECT_NE(errorOf([] {
              parseGraph(fusedGraph("f32", "8", "5", "f32[b, t, s]", "mask_fill = -1.0"));
            }).find("mask_fill applies to a bool mask only"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseGraph(fusedGraph("f32", "8", "5", "bool[b, 1, 1, s]"));
            }).find("mask must have rank 1 to 3"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseGraph(R"(
graph @g(%q: f32[b, t, 8], %k: f32[b, s, 6], %v: f32[b, s, 5], %w: f32[8]) -> (%y: f32[b, t, 5]) {
  %y = AdditiveAttention(%q, %k, %v, %w)
  return %y
}
)");
            }).find("query/key size mismatch"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseGraph(R"(
graph @g(%q: f32[2, 3, 8], %k: f32[2, 5, 8], %v: f32[2, 5, 4], %w: f32[8], %m: bool[2, 1, 4]) -> (%y: f32[2, 3, 4]) {
  %y = AdditiveAttention(%q, %k, %v, %w, %m)
  return %y
}
)");
            }).find("mask extent mismatch"),
            std::string::npos);
  EXPECT_NE(errorOf([] {
              parseGraph(R"(
graph @g(%q: f32[b, t, 8], %k: f32[b, s, 8], %v: f32[b, s, 4], %w: f32[8]) -> (%y: f32[b, t, 4]) {
  %y = AdditiveAttention(%q, %k, %v, %w) {mask_fill = "x"}
  return %y
}
)");
            }).find("'mask_fill' must be a float"),
            std::string::npos);
}

TEST(AdditiveAttention, EvaluatorRefusesAMaskThatDoesNotBroadcast) {
  Tensor q = randomTensor({1, 2, 4}, 1), k = randomTensor({1, 3, 4}, 2);
  Tensor v = randomTensor({1, 3, 2}, 3), w = randomTensor({4}, 4);
  EXPECT_NO_THROW(runOp(OpKind::AdditiveAttention, {q, k, v, w, randomTensor({1, 2, 3}, 5)}));
  EXPECT_THROW(runOp(OpKind::AdditiveAttention, {q, k, v, w, randomTensor({1, 2, 2}, 5)}), Error);
  EXPECT_THROW(runOp(OpKind::AdditiveAttention, {q, k, v, randomTensor({3}, 4)}), Error);
}

} // namespace
