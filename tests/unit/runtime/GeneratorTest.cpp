//===- tests/unit/runtime/GeneratorTest.cpp - The token loop on hand-built decoders ===//
//
// The toy decoders of GeneratorTestModel.h through the C API: both modes give
// the tokens the toy's rule predicts, stops, capacity, sampling, roles and
// the one-line errors.
//
//===----------------------------------------------------------------------===//
#include "GeneratorTestModel.h"
#include "GeneratorTestSupport.h"
#include "onnxc/onnxc_generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <numeric>
#include <string>
#include <vector>

using namespace onnxc::runtime::testing::toy;

namespace {

using onnxc::runtime::testing::GeneratorPtr;
using onnxc::runtime::testing::greedyOptions;

std::vector<int64_t> expectedTokens(std::vector<int64_t> sequence, int64_t count) {
  std::vector<int64_t> produced;
  for (int64_t i = 0; i < count; ++i) {
    int64_t sum = std::accumulate(sequence.begin(), sequence.end(), int64_t(0));
    produced.push_back(nextId(sum, int64_t(sequence.size())));
    sequence.push_back(produced.back());
  }
  return produced;
}

std::vector<int64_t> generate(onnxc_generator *generator, const std::vector<int64_t> &prompt,
                              int64_t room = 1000) {
  std::vector<int64_t> out(static_cast<size_t>(room));
  int64_t count =
      onnxc_generate(generator, prompt.data(), int64_t(prompt.size()), out.data(), room);
  EXPECT_GE(count, 0) << onnxc_generator_error(generator);
  out.resize(size_t(std::max<int64_t>(count, 0)));
  return out;
}

} // namespace

TEST(Generator, CacheModeCarriesTheCachePast64Positions) {
  ToyDecoder toy(true);
  onnxc_generate_options opts = greedyOptions(100);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_EQ(onnxc_generator_mode(generator.get()), ONNXC_GENERATE_KV_CACHE);
  EXPECT_NE(std::string(onnxc_generator_describe(generator.get())).find("present_key_0"),
            std::string::npos);
  std::vector<int64_t> prompt = {3, 9, 4};
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 100));
  EXPECT_EQ(onnxc_generator_capacity(generator.get()), 103);
  // A second generation starts from an empty cache.
  std::vector<int64_t> other = {5};
  EXPECT_EQ(generate(generator.get(), other), expectedTokens(other, 100));
}

TEST(Generator, FullSequenceModeMatchesTheCacheMode) {
  ToyDecoder toy(false);
  onnxc_generate_options opts = greedyOptions(70);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_EQ(onnxc_generator_mode(generator.get()), ONNXC_GENERATE_FULL_SEQUENCE);
  std::vector<int64_t> prompt = {1, 2, 3, 4, 5};
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 70));
}

TEST(Generator, PositionIdsAndI32TokenIds) {
  ToyDecoder toy(true, true);
  onnxc_generate_options opts = greedyOptions(40);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_NE(std::string(onnxc_generator_describe(generator.get())).find("positions 'position_ids'"),
            std::string::npos);
  std::vector<int64_t> prompt = {7, 1, 12, 5};
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 40));
}

TEST(Generator, StopsAtTheEndTokenAndAtMaxNewTokens) {
  ToyDecoder toy(true);
  std::vector<int64_t> prompt = {3, 9, 4}, all = expectedTokens(prompt, 20);
  onnxc_generate_options opts = greedyOptions(20);
  opts.eos_token_id = all[5];
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  std::vector<int64_t> got = generate(generator.get(), prompt);
  size_t firstEos = size_t(std::find(all.begin(), all.end(), all[5]) - all.begin());
  EXPECT_EQ(got, std::vector<int64_t>(all.begin(), all.begin() + long(firstEos) + 1));
  int64_t token = 0;
  EXPECT_EQ(onnxc_generator_next(generator.get(), &token), 0);
  opts = greedyOptions(4);
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_EQ(generate(generator.get(), prompt).size(), 4u);
}

TEST(Generator, APresetCapacityBoundsTheSequence) {
  ToyDecoder toy(true);
  onnxc_generate_options opts = greedyOptions(20, 10);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_EQ(onnxc_generator_capacity(generator.get()), 10);
  std::vector<int64_t> prompt = {3, 9, 4}, want = expectedTokens(prompt, 20);
  ASSERT_EQ(onnxc_generator_prefill(generator.get(), prompt.data(), 3), 0);
  // Token k needs 3 + k - 1 positions: eight fit in ten.
  int64_t token = 0;
  for (size_t k = 0; k < 8; ++k) {
    ASSERT_EQ(onnxc_generator_next(generator.get(), &token), 1)
        << onnxc_generator_error(generator.get());
    EXPECT_EQ(token, want[k]);
  }
  EXPECT_EQ(onnxc_generator_next(generator.get(), &token), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "the sequence would grow to 11 positions, past the capacity of 10 (the capacity "
            "option; by default prompt + max_new_tokens)");
  std::vector<int64_t> longPrompt(11, 1);
  EXPECT_EQ(onnxc_generator_prefill(generator.get(), longPrompt.data(), 11), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "the prompt has 11 tokens but the capacity is 10 positions (the capacity option)");
}

TEST(Generator, SamplingWithASeedRepeats) {
  ToyDecoder toy(true);
  onnxc_generate_options opts = greedyOptions(30);
  opts.do_sample = 1;
  opts.temperature = 3.0f;
  opts.top_k = 8;
  opts.seed = 11;
  GeneratorPtr first(onnxc_generator_create(toy.descriptor(), &opts));
  GeneratorPtr second(onnxc_generator_create(toy.descriptor(), &opts));
  std::vector<int64_t> prompt = {3, 9, 4};
  std::vector<int64_t> a = generate(first.get(), prompt), b = generate(second.get(), prompt);
  EXPECT_EQ(a, b);
  EXPECT_EQ(generate(first.get(), prompt), a); // prefill reseeds
  EXPECT_NE(a, expectedTokens(prompt, 30));    // hot sampling is not greedy
}

TEST(Generator, RolesFromAMappingAndOtherNames) {
  ToyDecoder toy(true);
  toy.inputNames = {"tokens", "mask", "past_key_values.0.key"};
  toy.outputNames = {"lm_logits", "present.0.key"};
  onnxc_generate_options opts = greedyOptions(10);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  std::vector<int64_t> prompt = {2, 2};
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 10));

  toy.outputNames = {"scores", "cache_out"};
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_FALSE(generator);
  EXPECT_EQ(std::string(onnxc_last_error()),
            "cache input 'past_key_values.0.key' has no matching output (one named like it with "
            "'present' for 'past'); pair them with past_key_values.0.key=OUTPUT");
  std::string mapping = "past_key_values.0.key=cache_out, logits=scores";
  opts.mapping = mapping.c_str();
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 10));
}

TEST(Generator, ErrorsAreOneLine) {
  ToyDecoder noCache(false);
  noCache.outputNames = {"hidden"};
  onnxc_generate_options opts = greedyOptions(4);
  // An output that is f32 [batch, seq, 16] is the logits by elimination.
  GeneratorPtr generator(onnxc_generator_create(noCache.descriptor(), &opts));
  EXPECT_TRUE(generator) << onnxc_last_error();

  ToyDecoder toy(true);
  std::string mapping = "logits=nothing";
  opts.mapping = mapping.c_str();
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_FALSE(generator);
  EXPECT_EQ(std::string(onnxc_last_error()),
            "mapping: logits=nothing names no output of the model");
  mapping = "colour=red";
  opts.mapping = mapping.c_str();
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_EQ(std::string(onnxc_last_error()),
            "mapping: 'colour' is neither a role (input_ids, attention_mask, position_ids, "
            "write_indices, nonpad_kv_seqlen, logits) nor an input of the model");
  // Without a mask the generator cannot fill attention_mask.
  mapping = "attention_mask=";
  opts.mapping = mapping.c_str();
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_EQ(std::string(onnxc_last_error()),
            "input 'attention_mask' is none of token ids, attention mask, position ids, write "
            "indices, valid lengths or a cache input; the generator cannot fill it (name its role "
            "with the mapping)");
  opts.mapping = nullptr;
  opts.top_p = 0.0f;
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  EXPECT_EQ(std::string(onnxc_last_error()), "top_p is 0.000000; it must be in (0, 1]");

  opts = greedyOptions(4);
  generator.reset(onnxc_generator_create(toy.descriptor(), &opts));
  ASSERT_TRUE(generator);
  int64_t token = 0;
  EXPECT_EQ(onnxc_generator_next(generator.get(), &token), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "no generation is under way: call prefill first (or again after an error)");
  EXPECT_EQ(onnxc_generator_prefill(generator.get(), nullptr, 0), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "the prompt is empty; generation needs at least one token");
}

TEST(Generator, NoLogitsOutputIsRefused) {
  ToyDecoder toy(true);
  toy.outputNames = {"hidden", "present_key_0"};
  toy.descriptor();
  // Make the only non-cache output an integer tensor: nothing is logits.
  toy.outputs[0].dtype = ONNXC_I32;
  onnxc_generate_options opts = greedyOptions(4);
  GeneratorPtr generator(onnxc_generator_create(&toy.model, &opts));
  EXPECT_FALSE(generator);
  EXPECT_EQ(std::string(onnxc_last_error()),
            "the model has no logits output (a float [batch, seq, vocab] output named logits); "
            "name it with logits=NAME");
}

TEST(Generator, EncoderDecoderPlumbingAndErrors) {
  // The no-cache toy stands in for an encoder (ids and mask in, a float
  // [batch, seq, 16] out that no decoder input reads): encode must run before
  // prefill, and the tokens are then the decoder's own.
  ToyDecoder encoder(false), decoder(true);
  encoder.outputNames = {"last_hidden_state"};
  onnxc_generate_options opts = greedyOptions(10);
  GeneratorPtr generator(
      onnxc_generator_create_seq2seq(encoder.descriptor(), decoder.descriptor(), &opts));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_EQ(onnxc_generator_mode(generator.get()), ONNXC_GENERATE_KV_CACHE);
  std::vector<int64_t> prompt = {3, 9}, source = {1, 2, 3, 4, 5};
  EXPECT_EQ(onnxc_generator_prefill(generator.get(), prompt.data(), 2), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "no source is encoded: call encode with the source ids before prefill");
  EXPECT_EQ(onnxc_generator_encode(generator.get(), source.data(), 0), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(generator.get())),
            "the source is empty; encoding needs at least one token");
  ASSERT_EQ(onnxc_generator_encode(generator.get(), source.data(), 5), 0)
      << onnxc_generator_error(generator.get());
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 10));

  // A plain generator has nothing to encode; a seq2seq one needs its encoder.
  GeneratorPtr plain(onnxc_generator_create(decoder.descriptor(), &opts));
  ASSERT_TRUE(plain);
  EXPECT_EQ(onnxc_generator_encode(plain.get(), source.data(), 5), -1);
  EXPECT_EQ(std::string(onnxc_generator_error(plain.get())),
            "this generator has no encoder: encode applies to encoder-decoder generators "
            "(onnxc_generator_create_seq2seq)");
  EXPECT_FALSE(onnxc_generator_create_seq2seq(nullptr, decoder.descriptor(), &opts));
  EXPECT_EQ(std::string(onnxc_last_error()), "the encoder is NULL");

  // A context mapping without an encoder, and one naming no encoder output.
  std::string mapping = "attention_mask=source_mask";
  opts.mapping = mapping.c_str();
  EXPECT_FALSE(onnxc_generator_create(decoder.descriptor(), &opts));
  mapping = "past_key_0=encoder:nothing";
  EXPECT_FALSE(onnxc_generator_create_seq2seq(encoder.descriptor(), decoder.descriptor(), &opts));
  EXPECT_EQ(std::string(onnxc_last_error()),
            "mapping: past_key_0=encoder:nothing names no output of the encoder");
  // The two models swapped: the decoder's logits output says which is which.
  EXPECT_FALSE(onnxc_generator_create_seq2seq(decoder.descriptor(), encoder.descriptor(), &opts));
  EXPECT_NE(std::string(onnxc_last_error()).find("the encoder has a logits output ('logits')"),
            std::string::npos)
      << onnxc_last_error();
  // The encoder in the decoder's place: its hidden states are not logits.
  opts.mapping = nullptr;
  ToyDecoder plainEncoder(false);
  plainEncoder.outputNames = {"last_hidden_state"};
  EXPECT_FALSE(
      onnxc_generator_create_seq2seq(encoder.descriptor(), plainEncoder.descriptor(), &opts));
  EXPECT_NE(std::string(onnxc_last_error())
                .find("the decoder's output 'last_hidden_state' holds "
                      "hidden states, not logits: it is an encoder"),
            std::string::npos)
      << onnxc_last_error();
  // An encoder input the generator cannot fill is refused naming it.
  ToyDecoder cached(true);
  cached.outputNames[0] = "last_hidden_state";
  EXPECT_FALSE(onnxc_generator_create_seq2seq(cached.descriptor(), decoder.descriptor(), &opts));
  EXPECT_EQ(std::string(onnxc_last_error()),
            "encoder: input 'past_key_0' is none of token ids, attention mask, position ids, write "
            "indices, valid lengths or a cache input; the generator cannot fill it (name its role "
            "with the mapping)");
}

// A program built against version 1 of onnxc_generate.h: its struct (the
// fields up to `mapping`) and the unversioned symbols it linked.
namespace {
struct OptionsV1 {
  int64_t max_new_tokens, capacity;
  int32_t do_sample;
  float temperature;
  int32_t top_k;
  float top_p;
  uint64_t seed;
  int64_t eos_token_id;
  int32_t num_threads;
  const char *mapping;
};
} // namespace
#undef onnxc_generate_options_init
#undef onnxc_generator_create
extern "C" void onnxc_generate_options_init(void *options);
extern "C" onnxc_generator *onnxc_generator_create(const onnxc_model_descriptor *model,
                                                   const void *options);

TEST(Generator, VersionOneProgramsKeepTheirStructSize) {
  // The version-1 init writes the defaults into version 1's fields and not
  // one byte past them (version 2's init would write ~60 more).
  std::vector<unsigned char> bytes(sizeof(OptionsV1) + 64, 0xAB);
  onnxc_generate_options_init(bytes.data());
  for (size_t i = sizeof(OptionsV1); i < bytes.size(); ++i)
    ASSERT_EQ(bytes[i], 0xAB) << "byte " << i << " past the version-1 struct was written";
  OptionsV1 v1;
  std::memcpy(&v1, bytes.data(), sizeof v1);
  EXPECT_EQ(v1.max_new_tokens, 32);
  EXPECT_EQ(v1.eos_token_id, -1);
  EXPECT_FLOAT_EQ(v1.top_p, 1.0f);

  // Its create reads only those fields: what lies past them (0xAB garbage
  // here, as on a caller's stack) does not reach the generator, which runs
  // with version 2's defaults (no penalties, one beam).
  v1.max_new_tokens = 12;
  v1.num_threads = 1;
  std::memcpy(bytes.data(), &v1, sizeof v1);
  ToyDecoder toy(true);
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), bytes.data()));
  ASSERT_TRUE(generator) << onnxc_last_error();
  std::vector<int64_t> prompt = {3, 9, 4};
  EXPECT_EQ(generate(generator.get(), prompt), expectedTokens(prompt, 12));
}
