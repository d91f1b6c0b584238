//===- tests/unit/runtime/GeneratorStateTest.cpp - Generating with recurrent states ===//
//
// A decoder of opset 27's recurrent kind carries states, not a KV cache: a
// LinearAttention's past_state and a causal convolution's last positions
// (CausalConvWithState's expansion), each present of its past's constant
// shape. The generator feeds each present back whole, from zeros at every
// new generation. Its tokens must be what the same decoder gives re-run over
// the whole sequence from zero states (the reference evaluator, no state
// carried), greedy and in a beam search (the states' rows reordered with the
// beams), and rows of one batch their own; prompts of different lengths and
// joining rows are refused in one line (padding would enter a state).
//
//===----------------------------------------------------------------------===//
#include "GeneratorTestSupport.h"
#include "KvCacheTestModel.h"
#include "LoweringTestSupport.h"

#include "codegen/ModelCompiler.h"
#include "ir/eval/Evaluator.h"
#include "onnxc/onnxc.h"
#include "onnxc/onnxc_generate.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

namespace onnxc::lowertest {
namespace {

using kvtest::denseValues;

/// The decoder: embedding, a depthwise causal convolution of width 3 over
/// time (its state: the last 2 positions), a gated LinearAttention of 2
/// heads of 4 (its state [b, 2, 4, 4]), a residual, logits over 11 ids.
/// `withStates` false: the same decoder over the whole sequence from zero
/// states, no state inputs or outputs.
std::string recurrentDecoderText(bool withStates) {
  std::string signature =
      withStates ? "graph @recurrent(%input_ids: i64[b, seq], %past_state: f32[b, 2, 4, 4], "
                   "%past_conv: f32[b, 8, 2]) -> (%logits: f32[b, seq, 11], %present_state: "
                   "f32[b, 2, 4, 4], %present_conv: f32[b, 8, 2]) {\n"
                 : "graph @recurrent(%input_ids: i64[b, seq]) -> (%logits: f32[b, seq, 11]) {\n";
  std::string text = signature + "  const %emb: f32[11, 8] = " + denseValues(88, 1.0, 1) +
                     "\n  const %wq: f32[8, 8] = " + denseValues(64, 1.5, 2) +
                     "\n  const %wk: f32[8, 8] = " + denseValues(64, 1.5, 3) +
                     "\n  const %wv: f32[8, 8] = " + denseValues(64, 1.5, 4) +
                     "\n  const %wd: f32[8, 2] = " + denseValues(16, 2.0, 5) +
                     "\n  const %wo: f32[8, 11] = " + denseValues(88, 1.5, 6) +
                     "\n  const %convw: f32[8, 1, 3] = " + denseValues(24, 0.8, 7) +
                     "\n  const %keep: i64[1] = dense<[-2]>\n"
                     "  const %end: i64[1] = dense<[9223372036854775807]>\n"
                     "  const %time: i64[1] = dense<[2]>\n";
  if (!withStates)
    text += "  %ids_shape = Shape(%input_ids)\n"
            "  %batch = Slice(%ids_shape, %zero_at, %one_at)\n"
            "  %conv_shape = Concat(%batch, %channels_time) {axis = 0}\n"
            "  %past_conv = ConstantOfShape(%conv_shape)\n";
  text += "  %x = Gather(%emb, %input_ids) {axis = 0}\n"
          "  %xt = Transpose(%x) {perm = [0, 2, 1]}\n"
          "  %window = Concat(%past_conv, %xt) {axis = 2}\n"
          "  %conv = Conv(%window, %convw) {group = 8}\n"
          "  %c = Transpose(%conv) {perm = [0, 2, 1]}\n"
          "  %q = MatMul(%c, %wq)\n"
          "  %k = MatMul(%c, %wk)\n"
          "  %v = MatMul(%c, %wv)\n"
          "  %d = MatMul(%c, %wd)\n"
          "  %sd = Sigmoid(%d)\n"
          "  %decay = Neg(%sd)\n";
  text += withStates ? "  %y, %present_state = LinearAttention(%q, %k, %v, %past_state, %decay) "
                       "{q_num_heads = 2, kv_num_heads = 2, update_rule = \"gated\"}\n"
                       "  %present_conv = Slice(%window, %keep, %end, %time)\n"
                     : "  %y, %state = LinearAttention(%q, %k, %v, _, %decay) "
                       "{q_num_heads = 2, kv_num_heads = 2, update_rule = \"gated\"}\n";
  text += "  %h = Add(%y, %c)\n"
          "  %logits = MatMul(%h, %wo)\n";
  text +=
      withStates ? "  return %logits, %present_state, %present_conv\n}\n" : "  return %logits\n}\n";
  if (!withStates) {
    size_t at = text.find("  const %keep");
    text.insert(at, "  const %zero_at: i64[1] = dense<[0]>\n  const %one_at: i64[1] = dense<[1]>\n"
                    "  const %channels_time: i64[2] = dense<[8, 2]>\n");
  }
  return text;
}

/// Greedy tokens of the whole-sequence decoder under the reference
/// evaluator: every step re-runs the sequence from zero states.
std::vector<int64_t> referenceGreedy(std::vector<int64_t> sequence, int count) {
  auto graph = parseGraph(recurrentDecoderText(false));
  std::vector<int64_t> produced;
  while (int(produced.size()) < count) {
    Tensor ids = Tensor::fromVector<int64_t>({1, int64_t(sequence.size())}, sequence);
    std::vector<Tensor> out = evaluateGraph(*graph, {{"input_ids", ids}});
    int64_t vocab = out[0].dims()[2], row = (out[0].dims()[1] - 1) * vocab, best = 0;
    for (int64_t j = 1; j < vocab; ++j)
      if (out[0].data<float>()[row + j] > out[0].data<float>()[row + best])
        best = j;
    produced.push_back(best);
    sequence.push_back(best);
  }
  return produced;
}

using onnxc::runtime::testing::GeneratorPtr;
using onnxc::runtime::testing::greedyOptions;

class GeneratorState : public ::testing::Test {
protected:
  static void SetUpTestSuite() {
    stateful_ = compileModelJit(*parseGraph(recurrentDecoderText(true)), compileTarget()).release();
    whole_ = compileModelJit(*parseGraph(recurrentDecoderText(false)), compileTarget()).release();
  }
  static void TearDownTestSuite() {
    delete stateful_;
    delete whole_;
  }
  static JitModel *stateful_, *whole_;
};
JitModel *GeneratorState::stateful_ = nullptr;
JitModel *GeneratorState::whole_ = nullptr;

TEST_F(GeneratorState, GreedyTokensAreTheWholeSequencesFromZeroStates) {
  const int count = 24;
  onnxc_generate_options options = greedyOptions(count);
  GeneratorPtr generator(onnxc_generator_create(stateful_->descriptor(), &options));
  ASSERT_TRUE(generator) << onnxc_last_error();
  std::string describe = onnxc_generator_describe(generator.get());
  EXPECT_NE(describe.find("2 cache pairs (past_state -> present_state, ...), 2 of them fed back "
                          "whole (states)"),
            std::string::npos)
      << describe;
  EXPECT_EQ(onnxc_generator_state_pairs(generator.get()), 2);
  EXPECT_EQ(onnxc_generator_cache_pairs(generator.get()), 2);
  const std::vector<int64_t> want = referenceGreedy({3, 9, 4}, count);
  EXPECT_GT(std::set<int64_t>(want.begin(), want.end()).size(), 3u)
      << "greedy tokens this repetitive would hide a broken state";
  int64_t prompt[] = {3, 9, 4}, other[] = {5, 1};
  std::vector<int64_t> tokens(count);
  ASSERT_EQ(onnxc_generate(generator.get(), prompt, 3, tokens.data(), count), count)
      << onnxc_generator_error(generator.get());
  EXPECT_EQ(tokens, want);
  // A second generation starts from zero states, not the first one's.
  ASSERT_EQ(onnxc_generate(generator.get(), other, 2, tokens.data(), count), count);
  EXPECT_EQ(tokens, referenceGreedy({5, 1}, count));
}

TEST_F(GeneratorState, RowsOfOneLengthAreTheirOwn) {
  onnxc_generate_options options = greedyOptions(10);
  GeneratorPtr generator(onnxc_generator_create(stateful_->descriptor(), &options));
  ASSERT_TRUE(generator) << onnxc_last_error();
  const int64_t a[] = {3, 9, 4}, b[] = {7, 2, 2};
  const int64_t *prompts[] = {a, b};
  int64_t counts[] = {3, 3};
  ASSERT_EQ(onnxc_generator_prefill_batch(generator.get(), prompts, counts, 2), 0)
      << onnxc_generator_error(generator.get());
  std::vector<std::vector<int64_t>> rows(2);
  int64_t tokens[2];
  int32_t produced[2];
  while (onnxc_generator_next_batch(generator.get(), tokens, produced) == 1)
    for (int r = 0; r < 2; ++r)
      if (produced[r])
        rows[size_t(r)].push_back(tokens[r]);
  EXPECT_EQ(rows[0], referenceGreedy({3, 9, 4}, 10));
  EXPECT_EQ(rows[1], referenceGreedy({7, 2, 2}, 10));
  // Different lengths would put padding into the states; joining likewise.
  counts[1] = 2;
  EXPECT_NE(onnxc_generator_prefill_batch(generator.get(), prompts, counts, 2), 0);
  EXPECT_STREQ(onnxc_generator_error(generator.get()),
               "prompts of different lengths cannot share a batch of a model with a recurrent "
               "state ('past_state'): the padding would enter it; give prompts of one length");
  options.capacity = 32;
  generator.reset(onnxc_generator_create(stateful_->descriptor(), &options));
  EXPECT_EQ(onnxc_generator_joinable(generator.get()), 0);
  EXPECT_STREQ(onnxc_generator_error(generator.get()),
               "rows cannot join a running batch of a model with a recurrent state (its padding "
               "would enter the state): run prompts of one length together with prefill_batch");
}

TEST_F(GeneratorState, BeamSearchReordersTheStatesWithTheBeams) {
  // The whole-sequence decoder needs no state: its beams are the reference.
  onnxc_generate_options options = greedyOptions(12);
  options.num_beams = 3;
  options.num_return_sequences = 3;
  std::vector<std::vector<int64_t>> found[2];
  JitModel *models[] = {stateful_, whole_};
  for (int m = 0; m < 2; ++m) {
    GeneratorPtr generator(onnxc_generator_create(models[m]->descriptor(), &options));
    ASSERT_TRUE(generator) << onnxc_last_error();
    int64_t prompt[] = {3, 9, 4};
    ASSERT_EQ(onnxc_generator_beam_search(generator.get(), prompt, 3), 3)
        << onnxc_generator_error(generator.get());
    for (int64_t i = 0; i < 3; ++i) {
      const int64_t *tokens = nullptr;
      float score = 0;
      int64_t length = onnxc_generator_sequence(generator.get(), i, &tokens, &score);
      ASSERT_GT(length, 0);
      found[m].emplace_back(tokens, tokens + length);
    }
  }
  EXPECT_EQ(found[0], found[1]);
  EXPECT_NE(found[0][0], found[0][1]);
}

} // namespace
} // namespace onnxc::lowertest
