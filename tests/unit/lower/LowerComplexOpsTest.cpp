//===- tests/unit/lower/LowerComplexOpsTest.cpp - Attention, Conv, RNN kernels ---===//
//
// Each test compiles a small graph through lowering + JIT + runtime and
// compares with the reference evaluator: Attention (3-D/4-D, GQA, masks,
// causal, scale, softcap, past/present, qk_matmul_output modes, every float
// type), RotaryEmbedding, Conv (1-D to 3-D, groups, pads, auto_pad, strides,
// dilations) and LSTM/GRU/RNN (directions, layouts, activations, clip,
// sequence_lens, initial states, peepholes), with symbolic dims where the
// op allows them, and the cases the lowering refuses.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <array>
#include <map>
#include <string>
#include <vector>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::GraphText;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;

using Feeds = std::map<std::string, Tensor>;

// ---- Attention ---------------------------------------------------------------------

TEST(LowerAttention, FourDimensionalGroupedQuerySymbolic) {
  GraphText g;
  g.input("q", "f32[b, 4, s, 8]").input("k", "f32[b, 2, t, 8]").input("v", "f32[b, 2, t, 6]");
  g.node("%y = Attention(%q, %k, %v)").output("y", "f32[b, 4, s, 6]");
  auto graph = parseGraph(g.str());
  for (auto [b, s, t] : std::vector<std::array<int64_t, 3>>{{1, 1, 1}, {2, 3, 5}, {3, 7, 2}})
    expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {b, 4, s, 8}, 1)},
                                            {"k", randomOf(DType::F32, {b, 2, t, 8}, 2)},
                                            {"v", randomOf(DType::F32, {b, 2, t, 6}, 3)}});
}

TEST(LowerAttention, ThreeDimensionalCausalScaledSoftcap) {
  struct Case {
    int64_t kvHeads;
    std::string attrs;
  };
  for (const Case &c : {Case{2, "is_causal = 1"}, Case{4, "scale = 0.3"},
                        Case{1, "softcap = 2.5, is_causal = 1"}}) {
    SCOPED_TRACE(c.attrs);
    int64_t kvHidden = 5 * c.kvHeads; // head size 5: Q is 4 heads of 5
    std::string kv = "f32[b, s, " + std::to_string(kvHidden) + "]";
    GraphText g;
    g.input("q", "f32[b, s, 20]").input("k", kv).input("v", kv);
    g.node("%y = Attention(%q, %k, %v) {kv_num_heads = " + std::to_string(c.kvHeads) +
           ", q_num_heads = 4, " + c.attrs + "}");
    g.output("y", "f32[b, s, 20]");
    auto graph = parseGraph(g.str());
    for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 6}})
      expectCompiledMatchesReference(*graph,
                                     {{"q", randomOf(DType::F32, {b, s, 20}, 4, -3, 3)},
                                      {"k", randomOf(DType::F32, {b, s, kvHidden}, 5, -3, 3)},
                                      {"v", randomOf(DType::F32, {b, s, kvHidden}, 6)}});
  }
}

TEST(LowerAttention, MasksBoolFloatShortAndFullyMaskedRows) {
  GraphText g;
  g.input("q", "f32[2, 3, 4, 8]").input("k", "f32[2, 3, 5, 8]").input("v", "f32[2, 3, 5, 8]");
  g.input("bmask", "bool[4, 5]").input("fmask", "f32[2, 1, 4, 5]").input("short", "f32[3, 4, 3]");
  g.node("%yb = Attention(%q, %k, %v, %bmask)").output("yb", "f32[2, 3, 4, 8]");
  g.node("%yf = Attention(%q, %k, %v, %fmask) {is_causal = 1}").output("yf", "f32[2, 3, 4, 8]");
  g.node("%ys = Attention(%q, %k, %v, %short)").output("ys", "f32[2, 3, 4, 8]");
  auto graph = parseGraph(g.str());
  Tensor bmask = randomOf(DType::Bool, {4, 5}, 7);
  for (int64_t j = 0; j < 5; ++j) // row 1 has every key masked: NaN, as in the reference
    bmask.setElementFromDouble(5 + j, 0.0);
  bmask.setElementFromDouble(0, 1.0);
  expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {2, 3, 4, 8}, 8)},
                                          {"k", randomOf(DType::F32, {2, 3, 5, 8}, 9)},
                                          {"v", randomOf(DType::F32, {2, 3, 5, 8}, 10)},
                                          {"bmask", bmask},
                                          {"fmask", randomOf(DType::F32, {2, 1, 4, 5}, 11, -2, 0)},
                                          {"short", randomOf(DType::F32, {3, 4, 3}, 12)}});
}

TEST(LowerAttention, PastPresentAndQkOutputModes) {
  for (int mode = 0; mode <= 3; ++mode) {
    SCOPED_TRACE(mode);
    GraphText g;
    g.input("q", "f32[b, 4, s, 8]").input("k", "f32[b, 2, s, 8]").input("v", "f32[b, 2, s, 6]");
    g.input("mask", "f32[s, p + s]").input("pk", "f32[b, 2, p, 8]").input("pv", "f32[b, 2, p, 6]");
    g.node("%y, %pk2, %pv2, %qk = Attention(%q, %k, %v, %mask, %pk, %pv) {is_causal = 1, "
           "qk_matmul_output_mode = " +
           std::to_string(mode) + ", softcap = 3.0}");
    g.output("y", "f32[b, 4, s, 6]").output("pk2", "f32[b, 2, p + s, 8]");
    g.output("pv2", "f32[b, 2, p + s, 6]").output("qk", "f32[b, 4, s, p + s]");
    auto graph = parseGraph(g.str());
    for (auto [b, s, p] : std::vector<std::array<int64_t, 3>>{{1, 2, 3}, {2, 3, 1}})
      expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {b, 4, s, 8}, 13, -2, 2)},
                                              {"k", randomOf(DType::F32, {b, 2, s, 8}, 14, -2, 2)},
                                              {"v", randomOf(DType::F32, {b, 2, s, 6}, 15)},
                                              {"mask", randomOf(DType::F32, {s, p + s}, 16)},
                                              {"pk", randomOf(DType::F32, {b, 2, p, 8}, 17)},
                                              {"pv", randomOf(DType::F32, {b, 2, p, 6}, 18)}});
  }
}

TEST(LowerAttention, ThreeDimensionalPresentOnly) {
  // present_value requested, present_key and qk output skipped.
  GraphText g;
  g.input("q", "f32[1, s, 12]").input("k", "f32[1, s, 6]").input("v", "f32[1, s, 6]");
  g.input("pk", "f32[1, 2, 2, 3]").input("pv", "f32[1, 2, 2, 3]");
  g.node(
      "%y, %unused, %pv2 = Attention(%q, %k, %v, _, %pk, %pv) {kv_num_heads = 2, q_num_heads = 4}");
  g.output("y", "f32[1, s, 12]").output("pv2", "f32[1, 2, 2 + s, 3]");
  auto graph = parseGraph(g.str());
  for (int64_t s : {1, 4})
    expectCompiledMatchesReference(*graph, {{"q", randomOf(DType::F32, {1, s, 12}, 19)},
                                            {"k", randomOf(DType::F32, {1, s, 6}, 20)},
                                            {"v", randomOf(DType::F32, {1, s, 6}, 21)},
                                            {"pk", randomOf(DType::F32, {1, 2, 2, 3}, 22)},
                                            {"pv", randomOf(DType::F32, {1, 2, 2, 3}, 23)}});
}

TEST(LowerAttention, OtherFloatTypesAndLongValueHeads) {
  for (const char *type : {"f16", "bf16", "f64"}) {
    SCOPED_TRACE(type);
    DType dtype = *parseDType(type);
    std::string t = type;
    GraphText g;
    g.input("q", t + "[2, 2, 3, 4]").input("k", t + "[2, 1, 5, 4]").input("v", t + "[2, 1, 5, 4]");
    g.input("m", "bool[2, 1, 3, 5]");
    g.node("%y = Attention(%q, %k, %v, %m) {softcap = 1.5}").output("y", t + "[2, 2, 3, 4]");
    auto graph = parseGraph(g.str());
    Tensor mask = randomOf(DType::Bool, {2, 1, 3, 5}, 24);
    for (int64_t row = 0; row < 6; ++row)
      mask.setElementFromDouble(row * 5, 1.0);
    double rtol = dtype == DType::F64 ? 1e-5 : dtype == DType::F16 ? 2e-3 : 1e-2;
    expectCompiledMatchesReference(*graph,
                                   {{"q", randomOf(dtype, {2, 2, 3, 4}, 25)},
                                    {"k", randomOf(dtype, {2, 1, 5, 4}, 26)},
                                    {"v", randomOf(dtype, {2, 1, 5, 4}, 27)},
                                    {"m", mask}},
                                   rtol, 1e-5);
  }
  // A value head of 600 takes three passes over the keys (chunks of 256).
  GraphText g;
  g.input("q", "f32[1, 2, 3, 5]").input("k", "f32[1, 2, 4, 5]").input("v", "f32[1, 2, 4, 600]");
  g.node("%y = Attention(%q, %k, %v)").output("y", "f32[1, 2, 3, 600]");
  auto graph = parseGraph(g.str());
  expectCompiledMatchesReference(*graph,
                                 {{"q", randomOf(DType::F32, {1, 2, 3, 5}, 28)},
                                  {"k", randomOf(DType::F32, {1, 2, 4, 5}, 29)},
                                  {"v", randomOf(DType::F32, {1, 2, 4, 600}, 30)}},
                                 1e-4, 1e-6, /*threads=*/2);
}

TEST(LowerAttention, RefusesMaskThatDoesNotBroadcast) {
  // Refused by shape inference already, naming the dim (before any
  // lowering): a mask of 2 heads against 4.
  GraphText g;
  g.input("q", "f32[1, 4, 3, 8]").input("k", "f32[1, 4, 3, 8]").input("v", "f32[1, 4, 3, 8]");
  g.input("m", "f32[2, 3, 3]");
  g.node("%y = Attention(%q, %k, %v, %m)").output("y", "f32[1, 4, 3, 8]");
  try {
    auto graph = parseGraph(g.str());
    lowerOnly(*graph);
    FAIL() << "expected the mask to be refused";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("attention mask head dim 2 must be 1 or 4"),
              std::string::npos)
        << e.what();
  }
}

// ---- RotaryEmbedding ---------------------------------------------------------------

TEST(LowerRotaryEmbedding, PositionIdsInterleavedAndPartial) {
  for (const char *attrs : {"", "{interleaved = 1}", "{rotary_embedding_dim = 4}",
                            "{interleaved = 1, rotary_embedding_dim = 4}"}) {
    SCOPED_TRACE(attrs);
    bool partial = std::string(attrs).find("rotary") != std::string::npos;
    std::string half = partial ? "2" : "4";
    GraphText g;
    g.input("x", "f32[b, 3, s, 8]").input("cos", "f32[16, " + half + "]");
    g.input("sin", "f32[16, " + half + "]").input("pos", "i64[b, s]");
    g.node(std::string("%y = RotaryEmbedding(%x, %cos, %sin, %pos) ") + attrs)
        .output("y", "f32[b, 3, s, 8]");
    auto graph = parseGraph(g.str());
    int64_t h = partial ? 2 : 4;
    for (auto [b, s] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {2, 5}})
      expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {b, 3, s, 8}, 31)},
                                              {"cos", randomOf(DType::F32, {16, h}, 32)},
                                              {"sin", randomOf(DType::F32, {16, h}, 33)},
                                              {"pos", randomOf(DType::I64, {b, s}, 34, 0, 16)}});
  }
}

TEST(LowerRotaryEmbedding, ThreeDimensionalWithoutPositionIds) {
  for (const char *type : {"f32", "f16"}) {
    SCOPED_TRACE(type);
    DType dtype = *parseDType(type);
    std::string t = type;
    GraphText g;
    g.input("x", t + "[2, 3, 12]").input("cos", t + "[2, 3, 3]").input("sin", t + "[2, 3, 3]");
    g.node("%y = RotaryEmbedding(%x, %cos, %sin) {num_heads = 2}").output("y", t + "[2, 3, 12]");
    auto graph = parseGraph(g.str());
    expectCompiledMatchesReference(*graph,
                                   {{"x", randomOf(dtype, {2, 3, 12}, 35)},
                                    {"cos", randomOf(dtype, {2, 3, 3}, 36)},
                                    {"sin", randomOf(dtype, {2, 3, 3}, 37)}},
                                   2e-3, 1e-5);
  }
}

/// Expects the compiled run (and the evaluator) to fail on `feeds`, the
/// compiled one with exactly `message`.
void expectRunFails(const Graph &graph, const Feeds &feeds, const std::string &message,
                    int threads = 1) {
  EXPECT_THROW(lowertest::runReference(graph, feeds), Error);
  try {
    lowertest::runCompiled(graph, feeds, threads);
    ADD_FAILURE() << "the run did not fail";
  } catch (const Error &e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(LowerRotaryEmbedding, PositionIdOutsideTheCacheFailsTheRun) {
  GraphText g;
  g.input("x", "f32[b, 3, s, 8]").input("cos", "f32[16, 4]");
  g.input("sin", "f32[16, 4]").input("pos", "i64[b, s]");
  g.node("%y = RotaryEmbedding(%x, %cos, %sin, %pos) loc(\"rope\")").output("y", "f32[b, 3, s, 8]");
  auto graph = parseGraph(g.str());
  for (int64_t bad : {16, -1}) {
    SCOPED_TRACE(bad);
    Tensor pos = randomOf(DType::I64, {2, 5}, 34, 0, 16);
    pos.setElementFromDouble(7, double(bad));
    expectRunFails(*graph,
                   {{"x", randomOf(DType::F32, {2, 3, 5, 8}, 31)},
                    {"cos", randomOf(DType::F32, {16, 4}, 32)},
                    {"sin", randomOf(DType::F32, {16, 4}, 33)},
                    {"pos", pos}},
                   "step 'RotaryEmbedding rope': a position id in 'pos' is out of range [0, 16) "
                   "for axis 0 of 'cos'",
                   2);
  }
}

// ---- Conv ----------------------------------------------------------------------------

TEST(LowerConv, TwoDimensionalPadsStridesDilationsGroups) {
  GraphText g;
  g.input("x", "f32[n, 4, 7, 9]").input("w", "f32[6, 2, 3, 2]").input("bias", "f32[6]");
  g.node("%y = Conv(%x, %w, %bias) {dilations = [2, 1], group = 2, pads = [1, 0, 2, 1], "
         "strides = [1, 2]}");
  g.output("y", "f32[n, 6, 6, 5]");
  g.input("wd", "f32[4, 1, 3, 3]");
  g.node("%depthwise = Conv(%x, %wd) {group = 4, pads = [1, 1, 1, 1]}")
      .output("depthwise", "f32[n, 4, 7, 9]");
  auto graph = parseGraph(g.str());
  for (int64_t n : {1, 3})
    expectCompiledMatchesReference(*graph,
                                   {{"x", randomOf(DType::F32, {n, 4, 7, 9}, 40)},
                                    {"w", randomOf(DType::F32, {6, 2, 3, 2}, 41)},
                                    {"bias", randomOf(DType::F32, {6}, 42)},
                                    {"wd", randomOf(DType::F32, {4, 1, 3, 3}, 43)}},
                                   1e-4, 1e-6, /*threads=*/2);
}

TEST(LowerConv, OneDimensionalAutoPadOverSymbolicLength) {
  for (const char *pad : {"SAME_UPPER", "SAME_LOWER", "VALID"}) {
    SCOPED_TRACE(pad);
    std::string outLen = std::string(pad) == "VALID" ? "l - 3" : "l";
    GraphText g;
    g.input("x", "f32[2, 3, l]").input("w", "f32[5, 3, 4]");
    g.node(std::string("%y = Conv(%x, %w) {auto_pad = \"") + pad + "\"}");
    g.output("y", "f32[2, 5, " + outLen + "]");
    auto graph = parseGraph(g.str());
    for (int64_t l : {4, 5, 11})
      expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {2, 3, l}, 44)},
                                              {"w", randomOf(DType::F32, {5, 3, 4}, 45)}});
  }
  // Stride 2 with SAME: the output length is ceil(l / 2), known here.
  GraphText g;
  g.input("x", "f32[1, 2, 9]").input("w", "f32[3, 2, 4]");
  g.node("%y = Conv(%x, %w) {auto_pad = \"SAME_LOWER\", strides = [2]}")
      .output("y", "f32[1, 3, 5]");
  auto graph = parseGraph(g.str());
  expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {1, 2, 9}, 46)},
                                          {"w", randomOf(DType::F32, {3, 2, 4}, 47)}});
}

TEST(LowerConv, ThreeDimensionalAndOtherFloatTypes) {
  for (const char *type : {"f32", "f64", "f16"}) {
    SCOPED_TRACE(type);
    DType dtype = *parseDType(type);
    std::string t = type;
    GraphText g;
    g.input("x", t + "[1, 2, 4, 5, 3]").input("w", t + "[3, 2, 2, 3, 2]").input("b", t + "[3]");
    g.node("%y = Conv(%x, %w, %b) {pads = [0, 1, 1, 1, 0, 0], strides = [2, 1, 1]}");
    g.output("y", t + "[1, 3, 2, 4, 3]");
    auto graph = parseGraph(g.str());
    expectCompiledMatchesReference(*graph,
                                   {{"x", randomOf(dtype, {1, 2, 4, 5, 3}, 48)},
                                    {"w", randomOf(dtype, {3, 2, 2, 3, 2}, 49)},
                                    {"b", randomOf(dtype, {3}, 50)}},
                                   dtype == DType::F16 ? 2e-3 : 1e-5, 1e-5);
  }
}

// ---- LSTM, GRU, RNN ---------------------------------------------------------------

/// Inputs of a recurrent op with `gates` gates, `dirs` directions, input 3,
/// hidden 4, by layout.
Feeds recurrentFeeds(int64_t gates, int64_t dirs, int64_t seq, int64_t batch, bool batchMajor,
                     unsigned seed) {
  const int64_t input = 3, hidden = 4;
  std::vector<int64_t> x = batchMajor ? std::vector<int64_t>{batch, seq, input}
                                      : std::vector<int64_t>{seq, batch, input};
  std::vector<int64_t> state = batchMajor ? std::vector<int64_t>{batch, dirs, hidden}
                                          : std::vector<int64_t>{dirs, batch, hidden};
  Tensor lens = randomOf(DType::I32, {batch}, seed + 5, 0, double(seq + 1));
  lens.setElementFromDouble(0, double(seq));
  return {{"x", randomOf(DType::F32, x, seed)},
          {"w", randomOf(DType::F32, {dirs, gates * hidden, input}, seed + 1)},
          {"r", randomOf(DType::F32, {dirs, gates * hidden, hidden}, seed + 2)},
          {"b", randomOf(DType::F32, {dirs, 2 * gates * hidden}, seed + 3)},
          {"h0", randomOf(DType::F32, state, seed + 4)},
          {"c0", randomOf(DType::F32, state, seed + 6)},
          {"p", randomOf(DType::F32, {dirs, 3 * hidden}, seed + 7)},
          {"lens", lens}};
}

/// A graph around one recurrent node with every operand, both layouts'
/// shapes written out symbolically.
std::string recurrentGraph(const std::string &op, int64_t gates, int64_t dirs, bool batchMajor,
                           const std::string &attrs, bool withC) {
  std::string d = std::to_string(dirs), rows = std::to_string(gates * 4);
  std::string x = batchMajor ? "f32[n, t, 3]" : "f32[t, n, 3]";
  std::string state = batchMajor ? "f32[n, " + d + ", 4]" : "f32[" + d + ", n, 4]";
  std::string y = batchMajor ? "f32[n, t, " + d + ", 4]" : "f32[t, " + d + ", n, 4]";
  GraphText g;
  g.input("x", x)
      .input("w", "f32[" + d + ", " + rows + ", 3]")
      .input("r", "f32[" + d + ", " + rows + ", 4]");
  g.input("b", "f32[" + d + ", " + std::to_string(2 * gates * 4) + "]").input("lens", "i32[n]");
  g.input("h0", state);
  if (withC)
    g.input("c0", state).input("p", "f32[" + d + ", 12]");
  std::string operands =
      withC ? "%x, %w, %r, %b, %lens, %h0, %c0, %p" : "%x, %w, %r, %b, %lens, %h0";
  std::string results = withC ? "%y, %yh, %yc" : "%y, %yh";
  std::string layout = batchMajor ? "layout = 1" : "layout = 0";
  g.node(results + " = " + op + "(" + operands + ") {" + layout + (attrs.empty() ? "" : ", ") +
         attrs + "}");
  g.output("y", y).output("yh", state);
  if (withC)
    g.output("yc", state);
  return g.str();
}

Feeds only(const Feeds &all, const std::vector<std::string> &names) {
  Feeds out;
  for (const std::string &name : names)
    out.emplace(name, all.at(name));
  return out;
}

TEST(LowerRecurrent, LstmEveryOperandBothLayoutsAndDirections) {
  for (bool batchMajor : {false, true})
    for (const char *direction : {"forward", "reverse", "bidirectional"}) {
      SCOPED_TRACE(std::string(direction) + (batchMajor ? " layout 1" : " layout 0"));
      int64_t dirs = std::string(direction) == "bidirectional" ? 2 : 1;
      auto graph = parseGraph(recurrentGraph(
          "LSTM", 4, dirs, batchMajor, std::string("direction = \"") + direction + "\"", true));
      for (auto [seq, batch] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {5, 3}})
        expectCompiledMatchesReference(*graph, recurrentFeeds(4, dirs, seq, batch, batchMajor, 60),
                                       1e-4, 1e-6, /*threads=*/2);
    }
}

TEST(LowerRecurrent, LstmInputForgetClipAndActivations) {
  auto graph = parseGraph(recurrentGraph(
      "LSTM", 4, 2, false,
      "activation_alpha = [0.5, 0.2], activation_beta = [0.1, 0.3], activations = "
      "[\"HardSigmoid\", "
      "\"Tanh\", \"Softsign\", \"Sigmoid\", \"Affine\", \"Tanh\"], clip = 0.7, direction = "
      "\"bidirectional\", input_forget = 1",
      true));
  expectCompiledMatchesReference(*graph, recurrentFeeds(4, 2, 4, 2, false, 70));
}

TEST(LowerRecurrent, GruLinearBeforeResetAndDirections) {
  for (int lbr : {0, 1})
    for (const char *direction : {"forward", "bidirectional"}) {
      SCOPED_TRACE(std::string(direction) + " lbr " + std::to_string(lbr));
      int64_t dirs = std::string(direction) == "bidirectional" ? 2 : 1;
      for (bool batchMajor : {false, true}) {
        auto graph =
            parseGraph(recurrentGraph("GRU", 3, dirs, batchMajor,
                                      std::string("direction = \"") + direction +
                                          "\", linear_before_reset = " + std::to_string(lbr),
                                      false));
        Feeds feeds =
            only(recurrentFeeds(3, dirs, 4, 3, batchMajor, 80), {"x", "w", "r", "b", "lens", "h0"});
        expectCompiledMatchesReference(*graph, feeds);
      }
    }
}

TEST(LowerRecurrent, RnnEveryActivation) {
  const std::vector<std::pair<const char *, const char *>> activations = {
      {"Relu", ""},
      {"Tanh", ""},
      {"Sigmoid", ""},
      {"Affine", "activation_alpha = [0.7], activation_beta = [0.2]"},
      {"LeakyRelu", "activation_alpha = [0.1]"},
      {"ThresholdedRelu", "activation_alpha = [0.3]"},
      {"ScaledTanh", "activation_alpha = [1.5], activation_beta = [0.5]"},
      {"HardSigmoid", ""},
      {"Elu", "activation_alpha = [0.9]"},
      {"Softsign", ""},
      {"Softplus", ""}};
  for (auto [name, params] : activations) {
    SCOPED_TRACE(name);
    std::string attrs = std::string("activations = [\"") + name + "\"]" +
                        (std::string(params).empty() ? "" : ", ") + params;
    auto graph = parseGraph(recurrentGraph("RNN", 1, 1, false, attrs, false));
    Feeds feeds = only(recurrentFeeds(1, 1, 5, 2, false, 90), {"x", "w", "r", "b", "lens", "h0"});
    expectCompiledMatchesReference(*graph, feeds, 1e-4, 1e-6);
  }
}

TEST(LowerRecurrent, WideRowsTakeEveryPartOfTheVectorDot) {
  // Input 45 (32 + 8 + 5) and hidden 37 (32 + 5): the four-accumulator
  // blocks, the single-vector tail and the masked remainder of the f32 gate
  // products all run, for x·Wᵀ, h·Rᵀ and GRU's (r ⊙ h)·Rhᵀ.
  for (const char *op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    int64_t gates = std::string(op) == "LSTM" ? 4 : 3, rows = gates * 37;
    GraphText g;
    g.input("x", "f32[t, n, 45]")
        .input("w", "f32[2, " + std::to_string(rows) + ", 45]")
        .input("r", "f32[2, " + std::to_string(rows) + ", 37]")
        .input("b", "f32[2, " + std::to_string(2 * rows) + "]");
    g.node("%y, %yh = " + std::string(op) +
           "(%x, %w, %r, %b) {direction = \"bidirectional\", hidden_size = 37}");
    g.output("y", "f32[t, 2, n, 37]").output("yh", "f32[2, n, 37]");
    auto graph = parseGraph(g.str());
    Feeds feeds = {{"x", randomOf(DType::F32, {6, 2, 45}, 101)},
                   {"w", randomOf(DType::F32, {2, rows, 45}, 102, -0.3, 0.3)},
                   {"r", randomOf(DType::F32, {2, rows, 37}, 103, -0.3, 0.3)},
                   {"b", randomOf(DType::F32, {2, 2 * rows}, 104)}};
    expectCompiledMatchesReference(*graph, feeds, 1e-4, 1e-5);
  }
}

TEST(LowerRecurrent, MinimalOperandsAndSkippedOutputs) {
  // No bias, lengths or initial state; Y skipped, only Y_h used.
  GraphText g;
  g.input("x", "f32[t, n, 3]").input("w", "f32[1, 16, 3]").input("r", "f32[1, 16, 4]");
  g.node("%y, %yh = LSTM(%x, %w, %r)").output("yh", "f32[1, n, 4]");
  g.input("wg", "f32[2, 12, 3]").input("rg", "f32[2, 12, 4]");
  g.node("%gy = GRU(%x, %wg, %rg) {direction = \"bidirectional\", hidden_size = 4}");
  g.output("gy", "f32[t, 2, n, 4]");
  auto graph = parseGraph(g.str());
  for (auto [t, n] : std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {6, 2}})
    expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {t, n, 3}, 100)},
                                            {"w", randomOf(DType::F32, {1, 16, 3}, 101)},
                                            {"r", randomOf(DType::F32, {1, 16, 4}, 102)},
                                            {"wg", randomOf(DType::F32, {2, 12, 3}, 103)},
                                            {"rg", randomOf(DType::F32, {2, 12, 4}, 104)}});
}

TEST(LowerRecurrent, LengthOutsideTheSequenceFailsTheRun) {
  for (bool batchMajor : {false, true})
    for (int32_t bad : {6, -1}) {
      SCOPED_TRACE(std::to_string(bad) + (batchMajor ? " layout 1" : " layout 0"));
      auto graph = parseGraph(
          recurrentGraph("GRU", 3, 2, batchMajor, "direction = \"bidirectional\"", false));
      Feeds feeds =
          only(recurrentFeeds(3, 2, 5, 3, batchMajor, 80), {"x", "w", "r", "b", "lens", "h0"});
      feeds["lens"] = feeds["lens"].clone();
      feeds["lens"].setElementFromDouble(2, double(bad));
      expectRunFails(
          *graph, feeds,
          std::string("step 'GRU': a length in 'lens' is out of range [0, t] for axis ") +
              (batchMajor ? "1" : "0") + " of 'x'",
          2);
    }
}

TEST(LowerRecurrent, RefusesHugeHiddenSize) {
  GraphText g;
  g.input("x", "f32[t, n, 3]").input("w", "f32[1, 40000, 3]").input("r", "f32[1, 40000, 10000]");
  g.node("%y = LSTM(%x, %w, %r)").output("y", "f32[t, 1, n, 10000]");
  auto graph = parseGraph(g.str());
  try {
    lowerOnly(*graph);
    FAIL() << "expected the lowering to refuse the hidden size";
  } catch (const Error &e) {
    EXPECT_NE(std::string(e.what()).find("hidden size 10000"), std::string::npos) << e.what();
  }
}

} // namespace
} // namespace onnxc
