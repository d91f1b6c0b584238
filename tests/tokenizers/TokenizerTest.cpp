//===- tests/tokenizers/TokenizerTest.cpp - The tokenizers' C++ and C API ----===//
//
// Small hand-written tokenizer.json files whose answers can be worked out by
// hand: BPE merge order, byte fallback, added tokens with lstrip/rstrip and
// single_word, streaming of a character split across tokens, and the C API's
// checks of every pointer, count and flag. Runs in the sanitizer builds too
// (tests/tokenizers/test_tokenizers.py compares with HF in the normal build).
//
//===----------------------------------------------------------------------===//
#include "text/Tokenizer.h"
#include "ir/Error.h"
#include "onnxc/onnxc_tokenizer.h"
#include "text/DecodeStream.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

using namespace onnxc::text;

namespace {

/// A BPE over a, b, c with merges "a b" (rank 0) then "ab c" and "b c".
std::string bpeJson(const std::string &extra = "") {
  return R"({"added_tokens": [
      {"id": 10, "content": "<eos>", "special": true, "normalized": false},
      {"id": 11, "content": "[M]", "special": true, "normalized": false, "lstrip": true, "rstrip": true},
      {"id": 12, "content": "cat", "special": false, "normalized": true, "single_word": true}],
    "normalizer": null, "pre_tokenizer": {"type": "WhitespaceSplit"},
    "post_processor": {"type": "TemplateProcessing",
      "single": [{"Sequence": {"id": "A", "type_id": 0}}, {"SpecialToken": {"id": "<eos>", "type_id": 0}}],
      "pair": [], "special_tokens": {"<eos>": {"id": "<eos>", "ids": [10], "tokens": ["<eos>"]}}},
    "decoder": {"type": "Fuse"},)" +
         extra + R"(
    "model": {"type": "BPE", "unk_token": "<unk>", "fuse_unk": true, "byte_fallback": true,
      "vocab": {"<unk>": 0, "a": 1, "b": 2, "c": 3, "ab": 4, "abc": 5, "bc": 6,
                "<0xC3>": 7, "<0xA9>": 8, "t": 9},
      "merges": ["a b", "ab c", "b c"]}})";
}

std::vector<uint32_t> ids(std::initializer_list<uint32_t> list) { return list; }

TEST(TokenizerTest, BpeMergesLowestRankFirst) {
  auto tokenizer = tokenizerFromJson(bpeJson(), "bpe.json");
  // "abc": a+b (rank 0) first, then ab+c; "bc" alone merges by rank 2.
  EXPECT_EQ(tokenizer->encode("abc", false), ids({5}));
  EXPECT_EQ(tokenizer->encode("bcab", false), ids({6, 4}));
  EXPECT_EQ(tokenizer->encode("abc abc", true), ids({5, 5, 10}));
  // Byte fallback for é (C3 A9); unknown characters without byte tokens fuse into one <unk>.
  EXPECT_EQ(tokenizer->encode("\xC3\xA9", false), ids({7, 8}));
  EXPECT_EQ(tokenizer->encode("xyz", false), ids({0}));
  EXPECT_EQ(tokenizer->decode(ids({5, 7, 8, 10}), true), "abc<0xC3><0xA9>");
}

TEST(TokenizerTest, AddedTokensFollowHfRules) {
  auto tokenizer = tokenizerFromJson(bpeJson(), "bpe.json");
  // lstrip/rstrip take the spaces around [M]; <eos> inside a word is still split out.
  EXPECT_EQ(tokenizer->encode("ab  [M]  c", false), ids({4, 11, 3}));
  EXPECT_EQ(tokenizer->encode("ab<eos>c", false), ids({4, 10, 3}));
  // single_word: "cat" alone is the added token, inside "bcat" it is not.
  EXPECT_EQ(tokenizer->encode("cat", false), ids({12}));
  EXPECT_EQ(tokenizer->encode("bcat", false), ids({6, 1, 9}));
  EXPECT_EQ(tokenizer->tokenToId("[M]"), 11u);
  EXPECT_EQ(tokenizer->idToToken(5), "abc");
  EXPECT_EQ(tokenizer->vocabSize(), 13u);
}

TEST(TokenizerTest, TruncationAndPaddingAsTheFileSays) {
  auto tokenizer =
      tokenizerFromJson(bpeJson(R"("truncation": {"max_length": 3, "direction": "Right"},
                 "padding": {"strategy": {"Fixed": 5}, "direction": "Right", "pad_id": 0},)"),
                        "limits.json");
  EXPECT_EQ(tokenizer->encode("a b c a", true), ids({1, 2, 10, 0, 0}));
  EXPECT_EQ(tokenizer->encode("a b c a", true, false), ids({1, 2, 3, 1, 10}));
}

TEST(TokenizerTest, StreamHoldsBackPartialCharacters) {
  std::string json = bpeJson();
  // With a ByteFallback decoder, <0xC3> alone is half of é: nothing comes out until <0xA9>.
  std::string fallback = json.replace(
      json.find(R"({"type": "Fuse"})"), 16,
      R"({"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]})");
  auto bytes = tokenizerFromJson(fallback, "fallback.json");
  DecodeStream stream(*bytes, true);
  EXPECT_EQ(stream.push(4), "ab");
  EXPECT_EQ(stream.push(7), "");
  EXPECT_EQ(stream.push(8), "\xC3\xA9");
  EXPECT_EQ(stream.push(10), ""); // special, skipped
  EXPECT_EQ(stream.push(4), "ab");
  EXPECT_EQ(stream.push(7), "");
  EXPECT_EQ(stream.finish(), "\xEF\xBF\xBD");
}

TEST(TokenizerTest, BadInputIsOneLineNamingIt) {
  auto tokenizer = tokenizerFromJson(bpeJson(), "bpe.json");
  try {
    tokenizer->encode("ok\xC3(", true);
    FAIL() << "invalid UTF-8 accepted";
  } catch (const onnxc::Error &e) {
    EXPECT_STREQ(e.what(), "the text to encode is not valid UTF-8 (byte 2)");
  }
  std::string json = bpeJson();
  json.replace(json.find("WhitespaceSplit"), 15, "UnicodeScripts");
  try {
    tokenizerFromJson(json, "t.json");
    FAIL() << "unknown pre-tokenizer accepted";
  } catch (const onnxc::Error &e) {
    EXPECT_STREQ(e.what(), "t.json: pre_tokenizer: unsupported component type 'UnicodeScripts'");
  }
  EXPECT_THROW(tokenizerFromJson("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
                                 "\"merges\": [\"a b\"]}}",
                                 "m.json"),
               onnxc::Error);
  EXPECT_THROW(tokenizerFromJson("[1, 2", "x.json"), onnxc::Error);
  // Nesting a million deep is refused before the recursive parser sees it.
  std::string deep = "{\"a\": " + std::string(1000000, '[') + std::string(1000000, ']') + "}";
  try {
    tokenizerFromJson(deep, "deep.json");
    FAIL() << "deep nesting accepted";
  } catch (const onnxc::Error &e) {
    EXPECT_STREQ(e.what(), "deep.json: malformed JSON: nested more than 512 levels deep");
  }
}

TEST(TokenizerTest, OneTokenizerServesSeveralThreads) {
  // The BPE word cache and the regex match state are shared or per thread: concurrent encodes
  // give what one thread gives.
  auto tokenizer = tokenizerFromJson(bpeJson(), "bpe.json");
  std::vector<std::string> texts;
  for (int i = 0; i < 64; ++i)
    texts.push_back(std::string(i % 7, 'a') + " bc" + std::string(i % 5, 'b') + " \xC3\xA9 cat");
  std::vector<std::vector<uint32_t>> expected;
  for (const std::string &text : texts)
    expected.push_back(tokenizer->encode(text));
  std::vector<int> mismatches(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int round = 0; round < 50; ++round)
        for (size_t i = 0; i < texts.size(); ++i)
          mismatches[t] += tokenizer->encode(texts[(i + t * 13) % texts.size()]) !=
                           expected[(i + t * 13) % texts.size()];
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(mismatches, std::vector<int>(4, 0));
}

TEST(TokenizerCApiTest, ChecksEveryPointerCountAndFlag) {
  std::string json = bpeJson();
  onnxc_tokenizer *tokenizer = onnxc_tokenizer_create_from_json(json.data(), json.size());
  ASSERT_NE(tokenizer, nullptr) << onnxc_tokenizer_last_error();
  int64_t *out = nullptr;
  size_t count = 0;
  ASSERT_EQ(
      onnxc_tokenizer_encode(tokenizer, "abc", 3, ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS, &out, &count),
      0);
  ASSERT_EQ(count, 2u);
  EXPECT_EQ(out[0], 5);
  EXPECT_EQ(out[1], 10);
  char *text = nullptr;
  size_t length = 0;
  ASSERT_EQ(onnxc_tokenizer_decode(tokenizer, out, count, ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS,
                                   &text, &length),
            0);
  EXPECT_EQ(std::string(text, length), "abc<eos>");
  onnxc_tokenizer_free_text(text);
  onnxc_tokenizer_free_ids(out);

  EXPECT_EQ(onnxc_tokenizer_encode(nullptr, "a", 1, 0, &out, &count), -1);
  EXPECT_STREQ(onnxc_tokenizer_last_error(), "onnxc_tokenizer_encode: tokenizer is NULL");
  EXPECT_EQ(onnxc_tokenizer_encode(tokenizer, nullptr, 1, 0, &out, &count), -1);
  EXPECT_EQ(onnxc_tokenizer_encode(tokenizer, nullptr, 0, 0, &out, &count), 0);
  EXPECT_EQ(count, 0u);
  EXPECT_EQ(onnxc_tokenizer_encode(tokenizer, "a", 1, 0, nullptr, &count), -1);
  EXPECT_EQ(onnxc_tokenizer_encode(tokenizer, "a", 1, 0x80, &out, &count), -1);
  EXPECT_STREQ(onnxc_tokenizer_last_error(), "onnxc_tokenizer_encode: unknown flags 0x80");
  int64_t bad[] = {1, -1};
  EXPECT_EQ(onnxc_tokenizer_decode(tokenizer, bad, 2, 0, &text, &length), -1);
  EXPECT_STREQ(onnxc_tokenizer_last_error(),
               "onnxc_tokenizer_decode: id -1 at index 1 is out of range");
  EXPECT_EQ(onnxc_tokenizer_decode(tokenizer, nullptr, 2, 0, &text, &length), -1);
  EXPECT_EQ(onnxc_tokenizer_token_to_id(tokenizer, "abc"), 5);
  EXPECT_EQ(onnxc_tokenizer_token_to_id(tokenizer, "zzz"), -1);
  EXPECT_EQ(onnxc_tokenizer_token_to_id(tokenizer, nullptr), -1);
  EXPECT_EQ(onnxc_tokenizer_vocab_size(nullptr), -1);
  EXPECT_EQ(onnxc_tokenizer_create(nullptr), nullptr);
  EXPECT_EQ(onnxc_tokenizer_create("/no/such/tokenizer"), nullptr);
  EXPECT_STREQ(onnxc_tokenizer_last_error(), "/no/such/tokenizer: no such file or folder");

  onnxc_token_stream *stream = onnxc_token_stream_create(tokenizer, 0);
  ASSERT_NE(stream, nullptr);
  const char *piece = nullptr;
  EXPECT_EQ(onnxc_token_stream_push(stream, 4, &piece, &length), 0);
  EXPECT_EQ(std::string(piece, length), "ab");
  EXPECT_EQ(onnxc_token_stream_push(stream, -3, &piece, &length), -1);
  EXPECT_EQ(onnxc_token_stream_push(nullptr, 4, &piece, &length), -1);
  EXPECT_EQ(onnxc_token_stream_finish(stream, nullptr, &length), -1);
  onnxc_token_stream_destroy(stream);
  onnxc_token_stream_destroy(nullptr);
  onnxc_tokenizer_destroy(tokenizer);
  onnxc_tokenizer_destroy(nullptr);
}

} // namespace
