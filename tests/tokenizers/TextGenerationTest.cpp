//===- tests/tokenizers/TextGenerationTest.cpp - Text generation over a scripted generator -===//
//
// onnxc_text_generate's loop (text/TextGeneration) against a fake generator
// that plays back fixed ids through the onnxc_text_generation_api functions,
// so stop strings, held-back text and characters split across tokens are
// checked on ids chosen by hand: a stop string spanning two tokens, one that
// only begins to match, an é split into two byte tokens next to a stop, and
// rows of a batch that stop at different steps. The model's part is
// tests/textgen's.
//
//===----------------------------------------------------------------------===//
#include "text/TextGeneration.h"
#include "ir/Error.h"
#include "onnxc/onnxc_text_generate.h"
#include "text/StopStrings.h"
#include "text/Tokenizer.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace onnxc::text;

/// The fake: each row plays back its script, then ends.
struct onnxc_generator {
  std::vector<std::vector<int64_t>> scripts;
  std::vector<size_t> next;
  std::vector<std::vector<int64_t>> prompts;
  std::string error;
};

namespace {

int fakePrefill(onnxc_generator *g, const int64_t *ids, int64_t count) {
  g->prompts = {std::vector<int64_t>(ids, ids + count)};
  g->next.assign(g->scripts.size(), 0);
  return 0;
}
int fakeNext(onnxc_generator *g, int64_t *token) {
  if (g->next[0] >= g->scripts[0].size())
    return 0;
  *token = g->scripts[0][g->next[0]++];
  return 1;
}
int fakePrefillBatch(onnxc_generator *g, const int64_t *const *prompts, const int64_t *counts,
                     int64_t rows) {
  g->prompts.clear();
  for (int64_t r = 0; r < rows; ++r)
    g->prompts.emplace_back(prompts[r], prompts[r] + counts[r]);
  g->next.assign(g->scripts.size(), 0);
  return 0;
}
int fakeNextBatch(onnxc_generator *g, int64_t *tokens, int32_t *produced) {
  int any = 0;
  for (size_t r = 0; r < g->scripts.size(); ++r) {
    produced[r] = g->next[r] < g->scripts[r].size();
    tokens[r] = produced[r] ? g->scripts[r][g->next[r]++] : -1;
    any |= produced[r];
  }
  return any;
}
const char *fakeError(const onnxc_generator *g) { return g->error.c_str(); }

const onnxc_text_generation_api fakeApi = {fakePrefill, fakeNext, fakePrefillBatch, fakeNextBatch,
                                           fakeError};

/// Byte-fallback BPE: "a"=1, "b"=2, " "=3, "ab"=4, <0xC3>=7, <0xA9>=8 (é), <eos>=10.
std::unique_ptr<Tokenizer> tokenizer() {
  return tokenizerFromJson(R"({"added_tokens": [
      {"id": 10, "content": "<eos>", "special": true, "normalized": false}],
    "normalizer": null, "pre_tokenizer": null, "post_processor": null,
    "decoder": {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]},
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
      "vocab": {"<unk>": 0, "a": 1, "b": 2, " ": 3, "ab": 4, "<0xC3>": 7, "<0xA9>": 8},
      "merges": ["a b"]}})",
                           "fake.json");
}

struct Outcome {
  std::vector<TextRow> rows;
  std::vector<std::string> pieces; ///< per row, the streamed pieces joined with '|'
};

Outcome run(std::vector<std::vector<int64_t>> scripts, std::vector<std::string> stops,
            std::vector<std::string_view> prompts = {"ab"}) {
  auto t = tokenizer();
  onnxc_generator g{std::move(scripts), {}, {}, ""};
  Outcome out;
  out.pieces.resize(prompts.size());
  TextRequest request;
  request.stops = std::move(stops);
  request.onText = [&](int64_t row, std::string_view piece) {
    std::string &joined = out.pieces[size_t(row)];
    joined += (joined.empty() ? "" : "|") + std::string(piece);
    return false;
  };
  out.rows = generateText(*t, &g, fakeApi, prompts, request);
  return out;
}

} // namespace

TEST(TextGenerationTest, PiecesConcatenateToTheDecodedText) {
  // a b é(2 byte tokens) ab: é waits for its second byte.
  Outcome r = run({{1, 3, 7, 8, 4}}, {});
  EXPECT_EQ(r.rows[0].text, "a \xC3\xA9"
                            "ab");
  EXPECT_EQ(r.pieces[0], "a| |\xC3\xA9|ab");
  EXPECT_EQ(r.rows[0].ids, (std::vector<int64_t>{1, 3, 7, 8, 4}));
  EXPECT_EQ(r.rows[0].promptIds, (std::vector<int64_t>{4}));
  EXPECT_EQ(r.rows[0].stopIndex, -1);
}

TEST(TextGenerationTest, StopStringSpanningTwoTokensCutsBeforeIt) {
  // "ab" then " a": the stop "b a" spans both; the text ends before it, and
  // the ids after the one completing the stop are never asked for.
  Outcome r = run({{4, 3, 1, 2, 2}}, {"zz", "b a"});
  EXPECT_EQ(r.rows[0].text, "a");
  EXPECT_EQ(r.rows[0].stopIndex, 1);
  EXPECT_EQ(r.rows[0].ids, (std::vector<int64_t>{4, 3, 1}));
  EXPECT_EQ(r.pieces[0], "a"); // "b" and " " were held back: they began the stop
}

TEST(TextGenerationTest, HeldBackTextThatDoesNotStopComesOutWhole) {
  // " a" could begin " ab": held, then " b" shows it does not; "b" at the end.
  Outcome r = run({{3, 1, 3, 2}}, {" ab"});
  EXPECT_EQ(r.rows[0].text, " a b");
  EXPECT_EQ(r.rows[0].stopIndex, -1);
  EXPECT_EQ(r.pieces[0], " a| b");
}

TEST(TextGenerationTest, StopAfterASplitCharacter) {
  Outcome r = run({{1, 7, 8, 2, 1}}, {"\xC3\xA9"
                                      "b"});
  EXPECT_EQ(r.rows[0].text, "a");
  EXPECT_EQ(r.rows[0].stopIndex, 0);
}

TEST(TextGenerationTest, BatchRowsStopOnTheirOwn) {
  Outcome r = run({{1, 2, 1, 2}, {2, 2, 2, 2, 2, 2}, {1}}, {"ba"}, {"a", "ab", "b"});
  ASSERT_EQ(r.rows.size(), 3u);
  EXPECT_EQ(r.rows[0].text, "a");
  EXPECT_EQ(r.rows[0].ids, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(r.rows[1].text, "bbbbbb");
  EXPECT_EQ(r.rows[2].text, "a");
  EXPECT_EQ(r.rows[1].promptIds, (std::vector<int64_t>{4}));
}

TEST(TextGenerationTest, StopStringsAloneHoldOnlyWhatMayStop) {
  std::vector<std::string> stops = {"\n\n", "END"};
  StopStrings s(stops);
  EXPECT_EQ(s.add("x\n"), "x");
  EXPECT_EQ(s.add("y"), "\ny");
  EXPECT_EQ(s.add("E"), "");
  EXPECT_EQ(s.add("N"), "");
  EXPECT_EQ(s.add("\n"), "EN");
  EXPECT_EQ(s.add("\nmore"), "");
  EXPECT_EQ(s.text(), "x\nyEN");
  EXPECT_EQ(s.stopIndex(), 0);
}

TEST(TextGenerationTest, ErrorsAreOneLine) {
  auto t = tokenizer();
  onnxc_generator g{{{1}}, {}, {}, "the model failed"};
  TextRequest request;
  request.stops = {""};
  EXPECT_THROW(generateText(*t, &g, fakeApi, {"a"}, request), onnxc::Error);
  request.stops.clear();
  try {
    generateText(*t, &g, fakeApi, {""}, request);
    FAIL() << "an empty prompt generated";
  } catch (const onnxc::Error &e) {
    EXPECT_EQ(std::string(e.what()),
              "the prompt encodes to no tokens; generation needs at least one");
  }
  onnxc_text_generation_api failing = fakeApi;
  failing.next = [](onnxc_generator *, int64_t *) { return -1; };
  try {
    generateText(*t, &g, failing, {"a"}, request);
    FAIL() << "a failing generator was not reported";
  } catch (const onnxc::Error &e) {
    EXPECT_EQ(std::string(e.what()), "after 0 tokens: the model failed");
  }
}

TEST(TextGenerationTest, CApiChecksItsArguments) {
  onnxc_text_result *result = nullptr;
  const char *prompt = "a";
  size_t length = 1;
  EXPECT_EQ(onnxc_text_generate(nullptr, nullptr, &fakeApi, &prompt, &length, 1, nullptr, &result),
            -1);
  EXPECT_NE(std::string(onnxc_tokenizer_last_error()).find("tokenizer is NULL"), std::string::npos);
  EXPECT_EQ(result, nullptr);
  onnxc_text_generation_api api;

  EXPECT_EQ(onnxc_text_generation_api_from_library(nullptr, &api), -1);
}
