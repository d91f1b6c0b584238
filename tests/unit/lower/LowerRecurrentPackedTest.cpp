//===- tests/unit/lower/LowerRecurrentPackedTest.cpp - LSTM/GRU/RNN on GEMMs ----===//
//
// The packed recurrent emitter (codegen/lower/RecurrentPacked*.cpp) with
// its weights as constants, as real models have them (packed at compile
// time; LowerComplexOpsTest.cpp feeds them as inputs, which packs them at
// run time): every op and attribute, both layouts and directions, at the
// shapes the per-step dot products never ran — batch 3 with lengths
// shorter than the sequence (and 0), hidden and input sizes that are not
// multiples of a vector, sequences spanning several GEMM row tiles — at
// both kernel widths and on two threads, against the reference evaluator.
// Also what the plan holds: W and R stored packed once, nothing raw, and
// the projection handed to the loop through one arena buffer.
//
//===----------------------------------------------------------------------===//
#include "LoweringTestSupport.h"

#include "codegen/TargetSelection.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace onnxc {
namespace {

using lowertest::GraphText;
using lowertest::lowerOnly;
using lowertest::parseGraph;
using lowertest::randomOf;

using Feeds = std::map<std::string, Tensor>;

std::string str(int64_t value) { return std::to_string(value); }

/// A constant declaration with `tensor`'s bytes in the text IR's hex form.
std::string constantText(const std::string &name, const std::string &type, const Tensor &tensor) {
  std::string text = "%" + name + ": " + type + " = dense<0x";
  const auto *bytes = static_cast<const uint8_t *>(tensor.rawData());
  char hex[3];
  for (size_t i = 0; i < tensor.byteSize(); ++i) {
    std::snprintf(hex, sizeof hex, "%02x", bytes[i]);
    text += hex;
  }
  return text + ">";
}

/// One recurrent node with every operand: X, sequence_lens and the initial
/// states are inputs (dims t and n symbolic), W, R, B and P constants (or
/// inputs when !constantWeights).
struct RecurrentCase {
  std::string op = "LSTM";
  std::string direction = "bidirectional";
  std::string attrs;
  int64_t input = 11, hidden = 13;
  bool batchMajor = false;
  bool constantWeights = true;

  int64_t gates() const { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }
  int64_t dirs() const { return direction == "bidirectional" ? 2 : 1; }
  bool lstm() const { return op == "LSTM"; }

  std::string graph(unsigned seed) const {
    const std::string d = str(dirs()), h = str(hidden), rows = str(gates() * hidden);
    const std::string state =
        batchMajor ? "f32[n, " + d + ", " + h + "]" : "f32[" + d + ", n, " + h + "]";
    GraphText g;
    g.input("x", batchMajor ? "f32[n, t, " + str(input) + "]" : "f32[t, n, " + str(input) + "]");
    g.input("lens", "i32[n]").input("h0", state);
    if (lstm())
      g.input("c0", state);
    auto weight = [&](const std::string &name, const std::string &type, const Tensor &value) {
      if (constantWeights)
        g.constant(constantText(name, type, value));
      else
        g.input(name, type);
    };
    for (const auto &[name, type] : weightTypes())
      weight(name, type, weights(seed).at(name));
    std::string operands = "%x, %w, %r, %b, %lens, %h0" + std::string(lstm() ? ", %c0, %p" : "");
    std::string results = lstm() ? "%y, %yh, %yc" : "%y, %yh";
    g.node(results + " = " + op + "(" + operands + ") {direction = \"" + direction +
           "\", hidden_size = " + h + ", layout = " + (batchMajor ? "1" : "0") +
           (attrs.empty() ? "" : ", " + attrs) + "}");
    g.output("y",
             batchMajor ? "f32[n, t, " + d + ", " + h + "]" : "f32[t, " + d + ", n, " + h + "]");
    g.output("yh", state);
    if (lstm())
      g.output("yc", state);
    return g.str();
  }

  std::vector<std::pair<std::string, std::string>> weightTypes() const {
    const std::string d = str(dirs()), rows = str(gates() * hidden);
    std::vector<std::pair<std::string, std::string>> types = {
        {"w", "f32[" + d + ", " + rows + ", " + str(input) + "]"},
        {"r", "f32[" + d + ", " + rows + ", " + str(hidden) + "]"},
        {"b", "f32[" + d + ", " + str(2 * gates() * hidden) + "]"}};
    if (lstm())
      types.push_back({"p", "f32[" + d + ", " + str(3 * hidden) + "]"});
    return types;
  }

  Feeds weights(unsigned seed) const {
    // Small enough that the states do not all saturate over a long sequence.
    const double scale = 1.0 / std::sqrt(double(hidden));
    Feeds feeds = {
        {"w", randomOf(DType::F32, {dirs(), gates() * hidden, input}, seed + 1, -scale, scale)},
        {"r", randomOf(DType::F32, {dirs(), gates() * hidden, hidden}, seed + 2, -scale, scale)},
        {"b", randomOf(DType::F32, {dirs(), 2 * gates() * hidden}, seed + 3)}};
    if (lstm())
      feeds["p"] = randomOf(DType::F32, {dirs(), 3 * hidden}, seed + 4);
    return feeds;
  }

  /// Inputs for `lengths.size()` batch rows of a `seq`-step sequence.
  Feeds feeds(int64_t seq, const std::vector<int32_t> &lengths, unsigned seed) const {
    const int64_t batch = int64_t(lengths.size());
    std::vector<int64_t> state = batchMajor ? std::vector<int64_t>{batch, dirs(), hidden}
                                            : std::vector<int64_t>{dirs(), batch, hidden};
    Tensor lens = randomOf(DType::I32, {batch}, seed, 0, 1);
    for (int64_t i = 0; i < batch; ++i)
      lens.setElementFromDouble(i, double(lengths[size_t(i)]));
    Feeds feeds = {{"x", randomOf(DType::F32,
                                  batchMajor ? std::vector<int64_t>{batch, seq, input}
                                             : std::vector<int64_t>{seq, batch, input},
                                  seed + 5)},
                   {"lens", lens},
                   {"h0", randomOf(DType::F32, state, seed + 6)}};
    if (lstm())
      feeds["c0"] = randomOf(DType::F32, state, seed + 7);
    if (!constantWeights)
      for (auto &[name, value] : weights(seed))
        feeds[name] = value;
    return feeds;
  }
};

/// The targets checked: 8 lanes (AVX-512 off) and, on an AVX-512F host, 16.
std::vector<std::pair<std::string, TargetRequest>> widths() {
  std::vector<std::pair<std::string, TargetRequest>> list = {{"8 lanes", {"native", "-avx512f"}}};
  if (TargetSelection::select({}).hasFeature("avx512f"))
    list.push_back({"16 lanes", {"native", ""}});
  return list;
}

void expectMatches(const RecurrentCase &c, int64_t seq, const std::vector<int32_t> &lengths,
                   unsigned seed, int threads = 2) {
  auto graph = parseGraph(c.graph(seed));
  Feeds feeds = c.feeds(seq, lengths, seed);
  for (const auto &[name, request] : widths()) {
    SCOPED_TRACE(name);
    lowertest::ScopedTarget target(request);
    lowertest::expectCompiledMatchesReference(*graph, feeds, 1e-4, 1e-5, threads);
  }
}

TEST(LowerRecurrentPacked, LstmBidirectionalShortLengthsBatchThree) {
  // Lengths 7, 2 and 0 of 7 steps; hidden 13 and input 11 (no whole vector).
  for (bool batchMajor : {false, true}) {
    SCOPED_TRACE(batchMajor ? "layout 1" : "layout 0");
    RecurrentCase c;
    c.batchMajor = batchMajor;
    expectMatches(c, 7, {7, 2, 0}, 10);
  }
}

TEST(LowerRecurrentPacked, BatchRowsInBlocksWithTheirOwnLengths) {
  // Batch 6: a task runs a block of 4 rows (one GEMV call reads R for all of
  // them) and one of 2, each row stopping at its own length and, reversed,
  // starting from it.
  for (const char *op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    RecurrentCase c;
    c.op = op;
    c.hidden = 21;
    expectMatches(c, 9, {9, 4, 0, 7, 1, 9}, 17);
  }
}

TEST(LowerRecurrentPacked, EmptySequence) {
  // No steps: the projection has no rows, Y is empty, Y_h and Y_c are the
  // initial states.
  RecurrentCase c;
  expectMatches(c, 0, {0, 0}, 15, 1);
}

TEST(LowerRecurrentPacked, LstmReverseInputForgetClipAndActivations) {
  RecurrentCase c;
  c.direction = "reverse";
  c.attrs = "activation_alpha = [0.5], activation_beta = [0.1], activations = "
            "[\"HardSigmoid\", \"Softsign\", \"Tanh\"], clip = 0.9, input_forget = 1";
  expectMatches(c, 6, {6, 4, 1}, 20);
}

TEST(LowerRecurrentPacked, GruBothResetFormsBothLayouts) {
  for (int lbr : {0, 1})
    for (bool batchMajor : {false, true}) {
      SCOPED_TRACE("lbr " + str(lbr) + (batchMajor ? " layout 1" : " layout 0"));
      RecurrentCase c;
      c.op = "GRU";
      c.batchMajor = batchMajor;
      c.attrs = "linear_before_reset = " + str(lbr);
      expectMatches(c, 7, {3, 7, 5}, 30);
    }
}

TEST(LowerRecurrentPacked, RnnForwardAndReverse) {
  for (const char *direction : {"forward", "reverse"}) {
    SCOPED_TRACE(direction);
    RecurrentCase c;
    c.op = "RNN";
    c.direction = direction;
    c.attrs = "activations = [\"Relu\"]";
    expectMatches(c, 5, {5, 1, 3}, 40);
  }
}

TEST(LowerRecurrentPacked, LongSequenceWideHiddenEveryGemvGroupAndTile) {
  // 33 steps: projection rows over several 6-row tiles and a tail. Hidden
  // 70: LSTM's 280 and GRU's 140 + 70 columns run the GEMV's groups of four
  // panels, smaller tail groups and a partial last panel at both widths.
  for (const char *op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    RecurrentCase c;
    c.op = op;
    c.input = 45;
    c.hidden = 70;
    expectMatches(c, 33, {33}, 50, 1);
  }
}

TEST(LowerRecurrentPacked, RuntimeWeightsArePackedPerRun) {
  for (const char *op : {"LSTM", "GRU"}) {
    SCOPED_TRACE(op);
    RecurrentCase c;
    c.op = op;
    c.constantWeights = false;
    expectMatches(c, 7, {7, 2, 4}, 60);
  }
}

// ---- the plan -----------------------------------------------------------------

int64_t floatsPadded(int64_t n, int64_t nr) { return (n + nr - 1) / nr * nr; }

TEST(LowerRecurrentPacked, WeightsAreStoredPackedAndTheProjectionIsAnArenaBuffer) {
  RecurrentCase c;
  c.op = "GRU"; // two GEMV groups: z and r, then h
  auto graph = parseGraph(c.graph(70));
  ModelPlan plan = lowerOnly(*graph);
  const int64_t nr = 16; // lowerOnly lowers for 8 lanes
  const int64_t rows = 3 * c.hidden;
  // Packed W (input x padded rows) and R (hidden x padded 2h + padded h)
  // per direction, plus B as it is; W and R not also embedded raw.
  std::vector<int64_t> expected = {
      2 * c.input * floatsPadded(rows, nr) * 4,
      2 * c.hidden * (floatsPadded(2 * c.hidden, nr) + floatsPadded(c.hidden, nr)) * 4,
      2 * 2 * rows * 4};
  std::vector<int64_t> constants;
  for (const PlanBuffer &buffer : plan.buffers)
    if (buffer.kind == BufferKind::Constant)
      constants.push_back(int64_t(buffer.constant.size));
  std::sort(constants.begin(), constants.end());
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(constants, expected);
  ASSERT_EQ(plan.steps.size(), 2u);
  EXPECT_EQ(plan.steps[0].name, "GRU input projection");
  EXPECT_EQ(plan.steps[1].name, "GRU");
  // The projection's output is the loop's input, an intermediate of
  // [directions, t, n, rows] floats living over exactly these two steps.
  int shared = 0;
  for (int32_t a : plan.steps[0].buffers)
    for (int32_t b : plan.steps[1].buffers)
      if (a == b && plan.buffers[size_t(a)].kind == BufferKind::Intermediate) {
        ++shared;
        EXPECT_TRUE(plan.buffers[size_t(a)].sizeBytes.provablyEqual(
            Dim(2 * rows * 4) * Dim::symbol("t") * Dim::symbol("n")))
            << plan.buffers[size_t(a)].sizeBytes.str();
        EXPECT_EQ(plan.buffers[size_t(a)].firstStep, 0);
        EXPECT_EQ(plan.buffers[size_t(a)].lastStep, 1);
      }
  EXPECT_EQ(shared, 1);
}

TEST(LowerRecurrentPacked, ComputedWeightsTakeAPackingStep) {
  RecurrentCase c;
  c.constantWeights = false;
  ModelPlan plan = lowerOnly(*parseGraph(c.graph(80)));
  ASSERT_EQ(plan.steps.size(), 3u);
  EXPECT_EQ(plan.steps[0].name, "LSTM weight packing");
  EXPECT_EQ(plan.steps[1].name, "LSTM input projection");
  EXPECT_EQ(plan.steps[2].name, "LSTM");
}

TEST(LowerRecurrentPacked, SymbolicInputSizeKeepsTheLoopKernel) {
  // W's input dim is a symbol: no GEMM specialized to it, the per-step dot
  // products instead (one step), still matching the reference.
  GraphText g;
  g.input("x", "f32[t, n, i]").input("w", "f32[1, 16, i]").input("r", "f32[1, 16, 4]");
  g.node("%y, %yh = LSTM(%x, %w, %r) {hidden_size = 4}").output("y", "f32[t, 1, n, 4]");
  auto graph = parseGraph(g.str());
  EXPECT_EQ(lowerOnly(*graph).steps.size(), 1u);
  lowertest::expectCompiledMatchesReference(*graph, {{"x", randomOf(DType::F32, {5, 2, 19}, 90)},
                                                     {"w", randomOf(DType::F32, {1, 16, 19}, 91)},
                                                     {"r", randomOf(DType::F32, {1, 16, 4}, 92)}});
}

} // namespace
} // namespace onnxc
