//===- tests/unit/runtime/CApiContractTest.cpp - Every entry point refuses bad arguments ===//
//
// The public C headers walked one entry point at a time with NULL handles,
// NULL pointers and negative counts: each returns its failure value, and
// every failure that has an error channel leaves a non-empty message there.
// Nothing crashes (these tests also run under ASan).
//
//===----------------------------------------------------------------------===//
#include "GeneratorTestModel.h"
#include "RuntimeTestModel.h"
#include "onnxc/model_info.h"
#include "onnxc/onnxc.h"
#include "onnxc/onnxc_generate.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

namespace {

struct SessionDeleter {
  void operator()(onnxc_session *session) const { onnxc_session_destroy(session); }
};
struct GeneratorDeleter {
  void operator()(onnxc_generator *generator) const { onnxc_generator_destroy(generator); }
};
using SessionPtr = std::unique_ptr<onnxc_session, SessionDeleter>;
using GeneratorPtr = std::unique_ptr<onnxc_generator, GeneratorDeleter>;

std::string text(const char *message) { return message ? message : "(null)"; }

GeneratorPtr toyGenerator(onnxc::runtime::testing::toy::ToyDecoder &toy) {
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = 4;
  options.num_threads = 1;
  return GeneratorPtr(onnxc_generator_create(toy.descriptor(), &options));
}

} // namespace

TEST(CApiContract, ModelInfoReadersTakeNull) {
  EXPECT_NE(text(onnxc_model_check(nullptr)), "(null)");
  EXPECT_EQ(onnxc_dim_num_terms(nullptr), 0);
  onnxc_dim_term term = onnxc_dim_get_term(nullptr, 0);
  EXPECT_EQ(term.coefficient, 0);
  EXPECT_EQ(term.symbols, nullptr);
  int64_t value = 7;
  EXPECT_EQ(onnxc_dim_is_constant(nullptr, &value), 0);
  EXPECT_EQ(value, 7);
  char buffer[8] = "x";
  EXPECT_EQ(onnxc_dim_format(nullptr, nullptr, buffer, sizeof buffer), 0u);
  EXPECT_STREQ(buffer, "");
  onnxc::runtime::testing::TestModel model;
  const onnxc_model_descriptor *descriptor = model.descriptor();
  onnxc_dim_expr dim = descriptor->inputs[0].dims[0];
  size_t length = onnxc_dim_format(descriptor, dim, nullptr, 16); // NULL buffer: length only
  EXPECT_GT(length, 0u);
  EXPECT_EQ(onnxc_dim_get_term(dim, -1).coefficient, 0);
}

TEST(CApiContract, SessionEntryPointsTakeNull) {
  EXPECT_EQ(onnxc_session_create(nullptr, 1), nullptr);
  EXPECT_FALSE(text(onnxc_last_error()).empty());
  onnxc_session_destroy(nullptr);
  onnxc_tensor outputs[2] = {};
  EXPECT_EQ(onnxc_session_run(nullptr, nullptr, 0, outputs, 2), -1);
  EXPECT_FALSE(text(onnxc_session_error(nullptr)).empty());
  EXPECT_EQ(onnxc_session_arena_bytes(nullptr), 0u);
  onnxc_session_set_memory_limit(nullptr, 1);
  EXPECT_EQ(onnxc_session_set_cache_capacity(nullptr, 1), -1);
  EXPECT_EQ(onnxc_session_cache_pair_of_input(nullptr, 0), -1);
  onnxc_session_set_profiling(nullptr, 1);
  EXPECT_EQ(onnxc_session_step_nanoseconds(nullptr, 0), 0);
}

TEST(CApiContract, SessionRefusesNullArraysAndNegativeCounts) {
  onnxc::runtime::testing::TestModel model;
  EXPECT_EQ(onnxc_session_create(model.descriptor(), -1), nullptr);
  EXPECT_NE(text(onnxc_last_error()).find("num_threads"), std::string::npos);
  SessionPtr session(onnxc_session_create(model.descriptor(), 1));
  ASSERT_TRUE(session) << onnxc_last_error();
  onnxc_tensor outputs[2] = {};
  onnxc::runtime::testing::TestCase test(2, 3);
  std::vector<onnxc_tensor> inputs = test.inputs();
  struct Call {
    const onnxc_tensor *inputs;
    int32_t numInputs;
    onnxc_tensor *outputs;
    int32_t numOutputs;
  };
  for (Call call :
       {Call{nullptr, int32_t(inputs.size()), outputs, 2}, Call{inputs.data(), -1, outputs, 2},
        Call{inputs.data(), 0, outputs, 2}, Call{inputs.data(), int32_t(inputs.size()), nullptr, 2},
        Call{inputs.data(), int32_t(inputs.size()), outputs, -1}}) {
    EXPECT_EQ(onnxc_session_run(session.get(), call.inputs, call.numInputs, call.outputs,
                                call.numOutputs),
              1);
    EXPECT_FALSE(text(onnxc_session_error(session.get())).empty());
  }
  EXPECT_EQ(onnxc_session_set_cache_capacity(session.get(), -1), -1);
  EXPECT_NE(text(onnxc_session_error(session.get())).find("-1"), std::string::npos);
  EXPECT_EQ(onnxc_session_cache_pair_of_input(session.get(), -1), -1);
  EXPECT_EQ(onnxc_session_step_nanoseconds(session.get(), -1), 0);
  EXPECT_EQ(onnxc_session_step_nanoseconds(session.get(), 1 << 30), 0);
  // After all of that, the session still runs.
  EXPECT_EQ(onnxc_session_run(session.get(), inputs.data(), int32_t(inputs.size()), outputs, 2), 0)
      << onnxc_session_error(session.get());
}

TEST(CApiContract, GeneratorEntryPointsTakeNull) {
  onnxc_generate_options_init(nullptr);
  EXPECT_EQ(onnxc_generator_create(nullptr, nullptr), nullptr);
  EXPECT_FALSE(text(onnxc_last_error()).empty());
  EXPECT_EQ(onnxc_generator_create_seq2seq(nullptr, nullptr, nullptr), nullptr);
  EXPECT_FALSE(text(onnxc_last_error()).empty());
  onnxc_generator_destroy(nullptr);
  EXPECT_EQ(onnxc_generator_mode(nullptr), 0);
  EXPECT_FALSE(text(onnxc_generator_describe(nullptr)).empty());
  EXPECT_EQ(onnxc_generator_cache_pairs_in_place(nullptr), 0);
  EXPECT_EQ(onnxc_generator_state_pairs(nullptr), 0);
  EXPECT_EQ(onnxc_generator_cache_pairs(nullptr), 0);
  int64_t ids[2] = {1, 2}, token = 0;
  EXPECT_EQ(onnxc_generator_prefill(nullptr, ids, 2), -1);
  EXPECT_EQ(onnxc_generator_encode(nullptr, ids, 2), -1);
  EXPECT_EQ(onnxc_generator_next(nullptr, &token), -1);
  EXPECT_EQ(onnxc_generate(nullptr, ids, 2, ids, 2), -1);
  EXPECT_EQ(onnxc_generator_capacity(nullptr), 0);
  EXPECT_FALSE(text(onnxc_generator_error(nullptr)).empty());
  const int64_t *rows[1] = {ids};
  int32_t produced = 0;
  float value = 0;
  EXPECT_EQ(onnxc_generator_prefill_batch(nullptr, rows, ids, 1), -1);
  EXPECT_EQ(onnxc_generator_next_batch(nullptr, &token, &produced), -1);
  EXPECT_EQ(onnxc_generator_rows(nullptr), 0);
  EXPECT_EQ(onnxc_generator_beam_search(nullptr, ids, 2), -1);
  EXPECT_EQ(onnxc_generator_sequence(nullptr, 0, nullptr, nullptr), -1);
  EXPECT_EQ(onnxc_generator_logprob(nullptr, 0, &value), -1);
  EXPECT_EQ(onnxc_generator_top_logprobs(nullptr, 0, ids, &value, 1), -1);
}

TEST(CApiContract, BatchBeamAndLogprobCallsRefuseNullArrays) {
  onnxc::runtime::testing::toy::ToyDecoder toy(true);
  GeneratorPtr generator = toyGenerator(toy);
  ASSERT_TRUE(generator) << onnxc_last_error();
  onnxc_generator *g = generator.get();
  auto failsWith = [&](const char *part) {
    std::string error = text(onnxc_generator_error(g));
    EXPECT_NE(error.find(part), std::string::npos) << error;
  };
  int64_t prompt[2] = {3, 9}, counts[1] = {2}, token = 0;
  const int64_t *rows[1] = {prompt};
  int32_t produced = 0;
  EXPECT_EQ(onnxc_generator_prefill_batch(g, nullptr, counts, 1), -1);
  failsWith("no prompts");
  EXPECT_EQ(onnxc_generator_prefill_batch(g, rows, nullptr, 1), -1);
  failsWith("no prompts");
  ASSERT_EQ(onnxc_generator_prefill_batch(g, rows, counts, 1), 0) << onnxc_generator_error(g);
  EXPECT_EQ(onnxc_generator_next_batch(g, nullptr, &produced), -1);
  failsWith("NULL");
  EXPECT_EQ(onnxc_generator_next_batch(g, &token, nullptr), -1);
  failsWith("NULL");
  EXPECT_EQ(onnxc_generator_logprob(g, 0, nullptr), -1);
  failsWith("NULL");
  EXPECT_EQ(onnxc_generator_sequence(g, 0, nullptr, nullptr), -1);
  failsWith("does not exist");
  // Still usable.
  EXPECT_EQ(onnxc_generator_next_batch(g, &token, &produced), 1) << onnxc_generator_error(g);
  EXPECT_EQ(produced, 1);
}

TEST(CApiContract, GeneratorRefusesNullArraysAndNegativeCounts) {
  onnxc::runtime::testing::toy::ToyDecoder toy(true);
  GeneratorPtr generator = toyGenerator(toy);
  ASSERT_TRUE(generator) << onnxc_last_error();
  onnxc_generator *g = generator.get();
  int64_t prompt[2] = {3, 9}, out[4] = {};
  auto failsWith = [&](const char *part) {
    std::string error = text(onnxc_generator_error(g));
    EXPECT_NE(error.find(part), std::string::npos) << error;
  };
  EXPECT_EQ(onnxc_generator_prefill(g, nullptr, 2), -1);
  failsWith("empty");
  EXPECT_EQ(onnxc_generator_prefill(g, prompt, -3), -1);
  failsWith("empty");
  EXPECT_EQ(onnxc_generator_encode(g, prompt, 2), -1);
  failsWith("no encoder");
  ASSERT_EQ(onnxc_generator_prefill(g, prompt, 2), 0) << onnxc_generator_error(g);
  EXPECT_EQ(onnxc_generator_next(g, nullptr), -1);
  failsWith("token pointer is NULL");
  EXPECT_EQ(onnxc_generate(g, prompt, 2, nullptr, 4), -1);
  failsWith("out is NULL");
  EXPECT_EQ(onnxc_generate(g, prompt, 2, out, -1), -1);
  failsWith("out_capacity is -1");
  EXPECT_EQ(onnxc_generate(g, nullptr, 2, out, 4), -1);
  failsWith("empty");
  // A zero capacity generates nothing, and is no error; then a real call works.
  EXPECT_EQ(onnxc_generate(g, prompt, 2, nullptr, 0), 0) << onnxc_generator_error(g);
  EXPECT_EQ(onnxc_generate(g, prompt, 2, out, 4), 4) << onnxc_generator_error(g);
}
