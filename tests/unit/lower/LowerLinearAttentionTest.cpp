//===- tests/unit/lower/LowerLinearAttentionTest.cpp - LinearAttention (opset 27) ===//
//
// The compiled LinearAttention kernel (codegen/lower/attention/
// LinearAttentionLowering.cpp) against the reference evaluator, on shapes
// the ONNX node cases (T = 1 or 4, d_k = d_v = 8) do not have: every update
// rule, a T = 1 decode step and a T = 37 prefill after a past state, GQA
// 4:1, MQA 12:1 (query heads past one pass's accumulators), MHA with wide
// column blocks, per-head and per-key decay, beta per head and shared,
// d_v off the column block (masked lanes), several blocks per task, a
// prefill longer than a chunk of steps, no past, f16 activations with an
// f32 state, and two threads. Keys are L2-normalized per head, as the
// spec asks for the delta rules, so the state stays bounded over 37 steps.
//
// Tolerance: |compiled - reference| <= 1e-5 + 1e-4 |reference|. Both keep
// the state in f32; they differ in the rounding of the dot products (the
// reference sums them in double, the kernel in f32 FMAs, S^T k in four
// partial sums), a few ulps per step. f16 outputs: one f16 ulp (1e-3).
//
// Also the shape rule's refusals, each one line naming the node (LinearAttentionRule.*,
// which the sanitizer leg runs too: it leaves only the Lower* suites to the normal one).
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"
#include "TestUtil.h"

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

namespace onnxc {
namespace {

using lowertest::expectCompiledMatchesReference;
using lowertest::parseGraph;
using lowertest::randomOf;
using test::errorOf;

using Feeds = std::map<std::string, Tensor>;

std::string str(int64_t value) { return std::to_string(value); }

/// One LinearAttention node's configuration.
struct Config {
  std::string rule = "gated_delta";
  int64_t qHeads = 8, kvHeads = 2, keySize = 16, valueSize = 24;
  bool past = true, present = true;
  bool perKeyDecay = true, perHeadBeta = true;
  std::string type = "f32", stateType = "f32";
  std::string extraAttrs;

  bool gated() const { return rule == "gated" || rule == "gated_delta"; }
  bool delta() const { return rule == "delta" || rule == "gated_delta"; }
  int64_t decaySize() const { return perKeyDecay ? kvHeads * keySize : kvHeads; }
  int64_t betaSize() const { return perHeadBeta ? kvHeads : 1; }
};

/// The graph text of one node over inputs of symbolic batch `b` and length `t`.
std::string graphText(const Config &c) {
  auto act = [&](int64_t last) { return c.type + "[b, t, " + str(last) + "]"; };
  std::string state =
      c.stateType + "[b, " + str(c.kvHeads) + ", " + str(c.keySize) + ", " + str(c.valueSize) + "]";
  std::string inputs = "%q: " + act(c.qHeads * c.keySize) + ", %k: " + act(c.kvHeads * c.keySize) +
                       ", %v: " + act(c.kvHeads * c.valueSize);
  std::string operands = "%q, %k, %v";
  if (c.past)
    inputs += ", %past: " + state;
  operands += c.past ? ", %past" : (c.gated() || c.delta()) ? ", _" : "";
  if (c.gated())
    inputs += ", %g: " + act(c.decaySize());
  operands += c.gated() ? ", %g" : c.delta() ? ", _" : "";
  if (c.delta())
    inputs += ", %beta: " + act(c.betaSize());
  operands += c.delta() ? ", %beta" : "";
  std::string attrs = "{kv_num_heads = " + str(c.kvHeads) + ", q_num_heads = " + str(c.qHeads) +
                      ", update_rule = \"" + c.rule + "\"" + c.extraAttrs + "}";
  std::string presentType = (c.past ? c.stateType : c.type) + "[b, " + str(c.kvHeads) + ", " +
                            str(c.keySize) + ", " + str(c.valueSize) + "]";
  std::string outputs = "%y: " + act(c.qHeads * c.valueSize);
  if (c.present)
    outputs += ", %present: " + presentType;
  return "graph @g(" + inputs + ") -> (" + outputs + ") {\n  %y, %present = LinearAttention(" +
         operands + ") " + attrs + "\n  return %y" + (c.present ? ", %present" : "") + "\n}\n";
}

DType dtypeOf(const std::string &name) { return name == "f16" ? DType::F16 : DType::F32; }

/// Keys of `heads` heads of `size` scaled to unit length per head.
Tensor unitKeys(DType type, std::vector<int64_t> dims, int64_t size, unsigned seed) {
  Tensor keys = randomOf(type, dims, seed);
  for (int64_t start = 0; start < keys.numElements(); start += size) {
    double norm = 0;
    for (int64_t i = 0; i < size; ++i)
      norm += keys.elementAsDouble(start + i) * keys.elementAsDouble(start + i);
    for (int64_t i = 0; i < size; ++i)
      keys.setElementFromDouble(start + i, keys.elementAsDouble(start + i) / std::sqrt(norm));
  }
  return keys;
}

Feeds feeds(const Config &c, int64_t batch, int64_t steps, unsigned seed) {
  DType type = dtypeOf(c.type);
  Feeds f = {{"q", randomOf(type, {batch, steps, c.qHeads * c.keySize}, seed)},
             {"k", unitKeys(type, {batch, steps, c.kvHeads * c.keySize}, c.keySize, seed + 1)},
             {"v", randomOf(type, {batch, steps, c.kvHeads * c.valueSize}, seed + 2)}};
  if (c.past)
    f["past"] =
        randomOf(dtypeOf(c.stateType), {batch, c.kvHeads, c.keySize, c.valueSize}, seed + 3);
  // Log-space decay of a log-sigmoid gate, a sigmoid's update rate.
  if (c.gated())
    f["g"] = randomOf(type, {batch, steps, c.decaySize()}, seed + 4, -1.0, -0.01);
  if (c.delta())
    f["beta"] = randomOf(type, {batch, steps, c.betaSize()}, seed + 5, 0.05, 0.95);
  return f;
}

/// Compiles `c` once and checks it at a T = 1 decode step and a T = 37 prefill.
void expectDecodeAndPrefill(const Config &c, double rtol = 1e-4, double atol = 1e-5,
                            int threads = 1) {
  auto graph = parseGraph(graphText(c));
  for (int64_t steps : {1, 37}) {
    SCOPED_TRACE(c.rule + " T=" + str(steps));
    expectCompiledMatchesReference(*graph, feeds(c, 2, steps, unsigned(steps)), rtol, atol,
                                   threads);
  }
}

TEST(LowerLinearAttention, EveryRuleWithGroupedHeadsAndAPast) {
  // GQA 4:1, d_v = 24: a 16-column block and an 8-column one with masked lanes.
  for (const char *rule : {"linear", "gated", "delta", "gated_delta"}) {
    Config c;
    c.rule = rule;
    expectDecodeAndPrefill(c);
  }
}

TEST(LowerLinearAttention, PerHeadDecayAndSharedBeta) {
  Config c;
  c.perKeyDecay = false;
  c.perHeadBeta = false;
  expectDecodeAndPrefill(c);
  c.rule = "gated";
  expectDecodeAndPrefill(c);
}

TEST(LowerLinearAttention, ManyQueryHeadsPerKeyValueHead) {
  // MQA 12:1: eight heads accumulate with the state update, four in a read pass. No past, and
  // no one reads the present state.
  Config c;
  c.qHeads = 12, c.kvHeads = 1, c.keySize = 8, c.valueSize = 8;
  c.past = false, c.present = false;
  c.extraAttrs = ", scale = 0.3";
  expectDecodeAndPrefill(c);
}

TEST(LowerLinearAttention, OneQueryHeadPerKeyValueHeadOnTwoThreads) {
  // MHA: 32-column blocks; d_v = 40 and d_k = 13 are off the vector and the partial sums.
  Config c;
  c.qHeads = 3, c.kvHeads = 3, c.keySize = 13, c.valueSize = 40;
  expectDecodeAndPrefill(c, 1e-4, 1e-5, /*threads=*/2);
}

TEST(LowerLinearAttention, StepsInChunksOverManyBlocks) {
  // 16 query heads of 80 read 5.9 KB of rows a step: chunks of 33 steps, so T = 37 crosses a
  // chunk; d_v = 40 is five 8-column blocks in one task.
  Config c;
  c.qHeads = 16, c.kvHeads = 1, c.keySize = 80, c.valueSize = 40;
  expectDecodeAndPrefill(c);
}

TEST(LowerLinearAttention, HalfActivationsWithAFloatState) {
  Config c;
  c.type = "f16";
  expectDecodeAndPrefill(c, 2e-3, 1e-3);
}

/// The message of parsing (and so inferring) the graph of `c`.
std::string refusal(const Config &c) {
  return errorOf([&] { parseGraph(graphText(c)); });
}

TEST(LinearAttentionRule, Refusals) {
  Config unknown;
  unknown.rule = "retnet";
  EXPECT_NE(refusal(unknown).find("unknown update_rule 'retnet'"), std::string::npos)
      << refusal(unknown);
  Config heads;
  heads.qHeads = 6, heads.kvHeads = 4;
  EXPECT_NE(refusal(heads).find("q_num_heads (6) must be a positive multiple of kv_num_heads (4)"),
            std::string::npos)
      << refusal(heads);
  Config beta;
  beta.perHeadBeta = false;
  beta.kvHeads = 2;
  std::string text = graphText(beta);
  text.replace(text.find("%beta: f32[b, t, 1]"), 19, "%beta: f32[b, t, 3]");
  std::string message = errorOf([&] { parseGraph(text); });
  EXPECT_NE(message.find("beta of shape [b, t, 3] must have last dim kv_num_heads or 1"),
            std::string::npos)
      << message;
  Config past;
  text = graphText(past);
  text.replace(text.find("%past: f32[b, 2, 16, 24]"), 24, "%past: f32[b, 2, 24, 16]");
  message = errorOf([&] { parseGraph(text); });
  EXPECT_NE(message.find("past_state of shape [b, 2, 24, 16] must be (B, H_kv, d_k, d_v)"),
            std::string::npos)
      << message;
  Config integers;
  integers.type = "i32";
  EXPECT_NE(refusal(integers).find("must be float32, float16 or bfloat16, got i32"),
            std::string::npos)
      << refusal(integers);
}

TEST(LinearAttentionRule, DecayAndBetaFollowTheUpdateRule) {
  Config noDecay;
  noDecay.rule = "delta";
  std::string text = graphText(noDecay);
  // A delta node given a decay, and a gated node without one.
  text.replace(text.find("%past, _, %beta"), 15, "%past, %k, %beta");
  std::string message = errorOf([&] { parseGraph(text); });
  EXPECT_NE(message.find("update_rule 'delta' takes no decay input"), std::string::npos) << message;
  Config gated;
  gated.rule = "gated";
  text = graphText(gated);
  text.replace(text.find("%past, %g"), 9, "%past");
  message = errorOf([&] { parseGraph(text); });
  EXPECT_NE(message.find("update_rule 'gated' needs decay input"), std::string::npos) << message;
}

} // namespace
} // namespace onnxc
