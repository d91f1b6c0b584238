//===- tests/unit/runtime/GeneratorJoinTest.cpp - Rows joining and leaving a running batch -===//
//
// Continuous batching on the toy cache decoder with position ids: rows that
// join mid-generation (behind padding, or pushing the others right), the
// rows that stay after another leaves, and rows that go on past the point
// where the shared sequence reaches the capacity (the padding all rows have
// is dropped) get the tokens they get alone; the calls refuse what they
// cannot do. The padded toy sums only the ids under mask 1 from its cache,
// so a cache row copied to the wrong place changes its tokens.
//
//===----------------------------------------------------------------------===//
#include "GeneratorTestModel.h"
#include "GeneratorTestSupport.h"
#include "onnxc/onnxc_generate.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

using namespace onnxc::runtime::testing::toy;

namespace {

using onnxc::runtime::testing::GeneratorPtr;

onnxc_generate_options joinOptions() {
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  options.max_new_tokens = 8;
  options.capacity = 32;
  options.num_threads = 1;
  return options;
}

std::vector<int64_t> alone(ToyDecoder &toy, const std::vector<int64_t> &prompt, int64_t count) {
  if (count == 0)
    return {};
  onnxc_generate_options options = joinOptions();
  options.max_new_tokens = count;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &options));
  std::vector<int64_t> out(static_cast<size_t>(count));
  int64_t got =
      onnxc_generate(generator.get(), prompt.data(), int64_t(prompt.size()), out.data(), count);
  EXPECT_EQ(got, count) << onnxc_generator_error(generator.get());
  return out;
}

} // namespace

TEST(GeneratorJoin, RowsJoiningAndLeavingGetTheirTokensAlone) {
  ToyDecoder toy(true, true);
  onnxc_generate_options options = joinOptions();
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &options));
  ASSERT_TRUE(generator) << onnxc_last_error();
  ASSERT_EQ(onnxc_generator_joinable(generator.get()), 1) << onnxc_generator_error(generator.get());
  ASSERT_EQ(onnxc_generator_reserve_rows(generator.get(), 3), 0)
      << onnxc_generator_error(generator.get());
  std::vector<int64_t> a = {3, 9, 4}, b = {5, 1, 1, 6}, c(40, 1);
  std::vector<std::vector<int64_t>> got(3);
  int64_t first = -1;
  ASSERT_EQ(onnxc_generator_add_row(generator.get(), a.data(), 3, nullptr, &first), 0);
  got[0].push_back(first);
  std::vector<int64_t> tokens(3);
  std::vector<int32_t> produced(3);
  std::vector<int> owner = {0}; // batch row -> prompt
  auto step = [&] {
    ASSERT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 1)
        << onnxc_generator_error(generator.get());
    for (size_t r = 0; r < owner.size(); ++r)
      if (produced[r])
        got[size_t(owner[r])].push_back(tokens[r]);
  };
  step(); // a's sequence is 4 long: b (4 tokens) joins without padding
  ASSERT_EQ(onnxc_generator_add_row(generator.get(), b.data(), 4, nullptr, &first), 1)
      << onnxc_generator_error(generator.get());
  got[1].push_back(first);
  owner.push_back(1);
  step();
  step();
  // a leaves and b moves to row 0; c is longer than the capacity.
  ASSERT_EQ(onnxc_generator_remove_row(generator.get(), 0), 0);
  owner.erase(owner.begin());
  EXPECT_EQ(onnxc_generator_rows(generator.get()), 1);
  ASSERT_EQ(onnxc_generator_add_row(generator.get(), c.data(), 40, nullptr, &first), -1);
  EXPECT_NE(std::string(onnxc_generator_error(generator.get())).find("capacity"),
            std::string::npos);
  step();
  step();
  EXPECT_EQ(got[0], alone(toy, a, int64_t(got[0].size())));
  EXPECT_EQ(got[1], alone(toy, b, int64_t(got[1].size())));
  EXPECT_EQ(got[1].size(), 5u);
}

TEST(GeneratorJoin, RowOptionsAndRefusals) {
  ToyDecoder toy(true, true);
  onnxc_generate_options options = joinOptions();
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &options));
  ASSERT_EQ(onnxc_generator_reserve_rows(generator.get(), 2), 0);
  std::vector<int64_t> a = {3, 9, 4};
  onnxc_generate_options row = joinOptions();
  row.max_new_tokens = 0;
  int64_t first = -1;
  EXPECT_EQ(onnxc_generator_add_row(generator.get(), a.data(), 3, &row, &first), -1);
  EXPECT_NE(std::string(onnxc_generator_error(generator.get())).find("max_new_tokens"),
            std::string::npos);
  row.max_new_tokens = 2;
  ASSERT_EQ(onnxc_generator_add_row(generator.get(), a.data(), 3, &row, &first), 0);
  EXPECT_EQ(onnxc_generator_reserve_rows(generator.get(), 4), -1);
  EXPECT_EQ(onnxc_generator_remove_row(generator.get(), 5), -1);
  EXPECT_NE(std::string(onnxc_generator_error(generator.get())).find("row 5"), std::string::npos);
  std::vector<int64_t> tokens(2);
  std::vector<int32_t> produced(2);
  EXPECT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 1);
  // The row's own max_new_tokens (2) ends it; the generator's is 8.
  EXPECT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 0);
  EXPECT_EQ(onnxc_generator_remove_row(generator.get(), 0), 0);
  EXPECT_EQ(onnxc_generator_rows(generator.get()), 0);

  ToyDecoder noPositions(true);
  GeneratorPtr plain(onnxc_generator_create(noPositions.descriptor(), &options));
  EXPECT_EQ(onnxc_generator_joinable(plain.get()), 0);
  EXPECT_NE(std::string(onnxc_generator_error(plain.get())).find("position ids"),
            std::string::npos);
}

TEST(GeneratorJoin, PaddedJoinsShiftsLeavesAndCompaction) {
  ToyDecoder toy(true, true, true);
  onnxc_generate_options options = joinOptions();
  options.capacity = 14;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &options));
  ASSERT_EQ(onnxc_generator_reserve_rows(generator.get(), 3), 0)
      << onnxc_generator_error(generator.get());
  onnxc_generate_options row = joinOptions();
  row.max_new_tokens = 10;
  std::vector<std::vector<int64_t>> prompts = {{3, 9, 4}, {5, 1}, {2, 2, 8, 1, 7, 6, 5, 4}};
  std::vector<std::vector<int64_t>> got(3);
  std::vector<int> owner; // batch row -> prompt
  auto join = [&](int p) {
    int64_t first = -1;
    int64_t index = onnxc_generator_add_row(generator.get(), prompts[size_t(p)].data(),
                                            int64_t(prompts[size_t(p)].size()), &row, &first);
    ASSERT_EQ(index, int64_t(owner.size())) << onnxc_generator_error(generator.get());
    got[size_t(p)].push_back(first);
    owner.push_back(p);
  };
  auto leave = [&](int p) {
    size_t r = size_t(std::find(owner.begin(), owner.end(), p) - owner.begin());
    ASSERT_EQ(onnxc_generator_remove_row(generator.get(), int64_t(r)), 0);
    owner[r] = owner.back(); // the last row takes the freed index
    owner.pop_back();
  };
  std::vector<int64_t> tokens(3);
  std::vector<int32_t> produced(3);
  auto step = [&] {
    ASSERT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 1)
        << onnxc_generator_error(generator.get());
    for (size_t r = 0; r < owner.size(); ++r)
      if (produced[r])
        got[size_t(owner[r])].push_back(tokens[r]);
  };
  join(0); // a: 3 positions
  step();
  step();  // 5 positions
  join(1); // b (2 ids) behind 3 positions of padding
  step();  // 6
  join(2); // c (8 ids) pushes a and b right by 2
  step();
  step();   // 10 positions
  leave(2); // c leaves: a (padding 2) and b (5) stay, row 2 goes to... none (it was last)
  // a and b go on to 14 positions and past: the 2 positions both have of
  // padding are dropped when the sequence reaches the capacity.
  while (got[0].size() < 10 || got[1].size() < 10)
    step();
  EXPECT_EQ(got[0].size() + got[1].size(), 20u);
  for (int p = 0; p < 3; ++p)
    EXPECT_EQ(got[size_t(p)], alone(toy, prompts[size_t(p)], int64_t(got[size_t(p)].size())))
        << "prompt " << p;
  leave(0);
  EXPECT_EQ(onnxc_generator_rows(generator.get()), 1);
}

TEST(GeneratorJoin, TheLastRowTakesALeavingRowsPlace) {
  ToyDecoder toy(true, true, true);
  onnxc_generate_options options = joinOptions();
  options.capacity = 14;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &options));
  ASSERT_EQ(onnxc_generator_reserve_rows(generator.get(), 3), 0)
      << onnxc_generator_error(generator.get());
  onnxc_generate_options row = joinOptions();
  row.max_new_tokens = 10;
  std::vector<std::vector<int64_t>> prompts = {{3, 9, 4}, {5, 1}, {2, 2, 8, 1, 7, 6, 5, 4}};
  std::vector<std::vector<int64_t>> got(3);
  std::vector<int> owner; // batch row -> prompt
  auto join = [&](int p) {
    int64_t first = -1;
    int64_t index = onnxc_generator_add_row(generator.get(), prompts[size_t(p)].data(),
                                            int64_t(prompts[size_t(p)].size()), &row, &first);
    ASSERT_EQ(index, int64_t(owner.size())) << onnxc_generator_error(generator.get());
    got[size_t(p)].push_back(first);
    owner.push_back(p);
  };
  auto leave = [&](int p) {
    size_t r = size_t(std::find(owner.begin(), owner.end(), p) - owner.begin());
    ASSERT_EQ(onnxc_generator_remove_row(generator.get(), int64_t(r)), 0);
    owner[r] = owner.back(); // the last row takes the freed index
    owner.pop_back();
  };
  std::vector<int64_t> tokens(3);
  std::vector<int32_t> produced(3);
  auto step = [&] {
    ASSERT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 1)
        << onnxc_generator_error(generator.get());
    for (size_t r = 0; r < owner.size(); ++r)
      if (produced[r])
        got[size_t(owner[r])].push_back(tokens[r]);
  };
  join(0);
  step();
  step();
  join(1);
  step();
  join(2); // rows a, b, c
  step();
  leave(0); // c's cache moves to row 0
  step();
  step();
  leave(1); // b was row 1: the last row now, nothing moves
  step();
  EXPECT_EQ(got[2].size(), 5u);
  for (int p = 0; p < 3; ++p)
    EXPECT_EQ(got[size_t(p)], alone(toy, prompts[size_t(p)], int64_t(got[size_t(p)].size())))
        << "prompt " << p;
  EXPECT_EQ(onnxc_generator_rows(generator.get()), 1);
}

TEST(GeneratorJoin, SeveralPromptsJoinTogether) {
  ToyDecoder toy(true, true, true);
  onnxc_generate_options options = joinOptions();
  options.capacity = 24;
  GeneratorPtr generator(onnxc_generator_create(toy.descriptor(), &options));
  ASSERT_EQ(onnxc_generator_reserve_rows(generator.get(), 8), 0)
      << onnxc_generator_error(generator.get());
  // Two start together; six more (of 1 to 7 ids, two groups of the join
  // buffers' 4 rows) join them two steps later.
  std::vector<std::vector<int64_t>> prompts = {
      {3, 9, 4},       {5, 1}, {2, 2, 8, 1, 7, 6, 5}, {4}, {9, 9, 9, 9},
      {1, 2, 3, 4, 5}, {7, 7}, {6, 5, 4, 3, 2, 1}};
  std::vector<std::vector<int64_t>> got(prompts.size());
  auto add = [&](size_t from, size_t to) {
    std::vector<const int64_t *> starts;
    std::vector<int64_t> counts, firsts(to - from);
    for (size_t p = from; p < to; ++p) {
      starts.push_back(prompts[p].data());
      counts.push_back(int64_t(prompts[p].size()));
    }
    ASSERT_EQ(onnxc_generator_add_rows(generator.get(), starts.data(), counts.data(),
                                       int64_t(to - from), nullptr, firsts.data()),
              int64_t(from))
        << onnxc_generator_error(generator.get());
    for (size_t p = from; p < to; ++p)
      got[p].push_back(firsts[p - from]);
  };
  std::vector<int64_t> tokens(prompts.size());
  std::vector<int32_t> produced(prompts.size());
  auto step = [&] {
    ASSERT_EQ(onnxc_generator_next_batch(generator.get(), tokens.data(), produced.data()), 1)
        << onnxc_generator_error(generator.get());
    for (size_t r = 0; r < size_t(onnxc_generator_rows(generator.get())); ++r)
      if (produced[r])
        got[r].push_back(tokens[r]);
  };
  add(0, 2);
  step();
  step();
  add(2, prompts.size());
  for (int s = 0; s < 5; ++s)
    step();
  for (size_t p = 0; p < prompts.size(); ++p)
    EXPECT_EQ(got[p], alone(toy, prompts[p], int64_t(got[p].size()))) << "prompt " << p;
  EXPECT_EQ(got[0].size(), 8u);
  EXPECT_EQ(got[7].size(), 6u);
}
