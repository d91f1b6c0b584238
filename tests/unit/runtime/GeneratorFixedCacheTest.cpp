//===- tests/unit/runtime/GeneratorFixedCacheTest.cpp - Generating over opset 24's fixed cache ===//
//
// A decoder whose cache has a fixed length (present = TensorScatter(past,
// new, write_indices), tests/unit/KvCacheTestModel.h) generates through the
// C API: the generator feeds write_indices, sets a symbolic length to its
// capacity and takes a constant one as the capacity, in one buffer per pair
// or in two (a pair the in-place proof refuses). Its greedy tokens are the
// reference evaluator's over the same decoder with a growing cache.
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

using onnxc::runtime::testing::GeneratorPtr;
using onnxc::runtime::testing::greedyOptions;

std::vector<int64_t> generate(const onnxc_model_descriptor *model,
                              const onnxc_generate_options &options, int64_t &pairsInPlace,
                              std::string &describe) {
  GeneratorPtr generator(onnxc_generator_create(model, &options));
  EXPECT_TRUE(generator) << onnxc_last_error();
  if (!generator)
    return {};
  pairsInPlace = onnxc_generator_cache_pairs_in_place(generator.get());
  describe = onnxc_generator_describe(generator.get());
  int64_t prompt[] = {3, 9, 4};
  std::vector<int64_t> tokens(size_t(options.max_new_tokens));
  int64_t count = onnxc_generate(generator.get(), prompt, 3, tokens.data(), int64_t(tokens.size()));
  EXPECT_EQ(count, options.max_new_tokens) << onnxc_generator_error(generator.get());
  tokens.resize(size_t(std::max<int64_t>(count, 0)));
  return tokens;
}

TEST(GeneratorFixedCache, GreedyTokensAreTheGrowingCachesWhateverTheLength) {
  const int count = 40;
  const std::vector<int64_t> want =
      kvtest::referenceGreedy(*parseGraph(kvtest::tinyDecoderText()), {3, 9, 4}, count);
  EXPECT_GT(std::set<int64_t>(want.begin(), want.end()).size(), 3u)
      << "greedy tokens this repetitive would hide a broken cache";
  struct Case {
    std::string length;
    bool presentAlsoRead;
    int64_t capacity, inPlace;
  };
  for (const Case &c : {Case{"n", false, 0, 2}, Case{"n", false, 64, 2}, Case{"48", false, 0, 2},
                        Case{"48", false, 45, 2}, Case{"n", true, 0, 1}, Case{"48", true, 0, 1}}) {
    SCOPED_TRACE("length " + c.length + (c.presentAlsoRead ? ", present_v also read" : "") +
                 ", capacity " + std::to_string(c.capacity));
    auto graph = parseGraph(kvtest::tinyFixedDecoderText(c.length, c.presentAlsoRead));
    std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
    int64_t inPlace = -1;
    std::string describe;
    EXPECT_EQ(generate(model->descriptor(), greedyOptions(count, c.capacity), inPlace, describe),
              want);
    EXPECT_EQ(inPlace, c.inPlace);
    EXPECT_NE(describe.find("write indices 'write_indices'"), std::string::npos) << describe;
    EXPECT_NE(describe.find(c.length == "n" ? "of a fixed length (the capacity)"
                                            : "of a fixed length of 48 positions"),
              std::string::npos)
        << describe;
  }
}

TEST(GeneratorFixedCache, AConstantLengthBoundsTheGeneration) {
  auto graph = parseGraph(kvtest::tinyFixedDecoderText("48"));
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  onnxc_generate_options options = greedyOptions(46);
  GeneratorPtr generator(onnxc_generator_create(model->descriptor(), &options));
  ASSERT_TRUE(generator) << onnxc_last_error();
  int64_t prompt[] = {3, 9, 4}, tokens[64];
  EXPECT_EQ(onnxc_generate(generator.get(), prompt, 3, tokens, 64), -1);
  EXPECT_STREQ(onnxc_generator_error(generator.get()),
               "the prompt's 3 tokens and max_new_tokens 46 need 49 positions, more than cache "
               "input 'past_k' [1, 2, 48, 8] holds (a fixed length of 48); at most 45 new "
               "tokens fit");
  options = greedyOptions(8, 49);
  EXPECT_FALSE(onnxc_generator_create(model->descriptor(), &options));
  EXPECT_STREQ(onnxc_last_error(), "a capacity of 49 positions is more than cache input 'past_k' "
                                   "[1, 2, 48, 8] holds (a fixed length of 48)");
  // 45 new tokens fill it exactly.
  options = greedyOptions(45);
  generator.reset(onnxc_generator_create(model->descriptor(), &options));
  ASSERT_TRUE(generator) << onnxc_last_error();
  EXPECT_EQ(onnxc_generate(generator.get(), prompt, 3, tokens, 64), 45)
      << onnxc_generator_error(generator.get());
  EXPECT_EQ(onnxc_generator_capacity(generator.get()), 48);
  // A server sizes its capacity with max_positions: the fixed length bounds it.
  EXPECT_EQ(onnxc_generator_max_positions(generator.get(), 4096), 48);
  EXPECT_EQ(onnxc_generator_max_positions(generator.get(), 20), 20);
}

TEST(GeneratorFixedCache, AGrowingAndAFixedCacheInOneModelAreRefused) {
  // past_k grows (Concat), past_v is fixed (TensorScatter): one line naming both.
  GraphText g;
  g.input("input_ids", "i64[1, s]").input("write_indices", "i64[1]");
  g.input("past_k", "f32[1, 2, p, 8]").input("past_v", "f32[1, 2, 16, 8]");
  g.constant("%axes13: i64[2] = dense<[1, 3]>");
  g.constant("%kshape: i64[4] = dense<[1, 2, 1, 8]>");
  g.constant("%axis2: i64[1] = dense<[2]>");
  g.node("%idsf = Cast(%input_ids) {to = 1}");
  g.node("%k4 = Unsqueeze(%idsf, %axes13)");
  g.node("%k = Expand(%k4, %kshape)");
  g.output("logits", "f32[1, s, 1]", "Unsqueeze(%idsf, %axis2)");
  g.output("present_k", "f32[1, 2, t, 8]", "Concat(%past_k, %k) {axis = 2}");
  g.output("present_v", "f32[1, 2, 16, 8]", "TensorScatter(%past_v, %k, %write_indices)");
  auto graph = parseGraph(g.str());
  std::unique_ptr<JitModel> model = compileModelJit(*graph, compileTarget());
  onnxc_generate_options options = greedyOptions(4);
  EXPECT_FALSE(onnxc_generator_create(model->descriptor(), &options));
  EXPECT_STREQ(onnxc_last_error(),
               "cache inputs 'past_k' [1, 2, p, 8] grows and 'past_v' [1, 2, 16, 8] is "
               "fixed-length; the generator needs every cache to grow, or every one fixed at one "
               "length");
}

} // namespace
} // namespace onnxc::lowertest
