//===- tests/unit/serve/ServeRequestsTest.cpp - onnxc serve's request checks, keys, metrics -===//
//
// The parts of the server that need no model: a body's fields read and
// refused by name in OpenAI's error shape, the bearer-key check, and the
// Prometheus text of the metrics.
//
//===----------------------------------------------------------------------===//
#include "serve/Auth.h"
#include "serve/Metrics.h"
#include "serve/Requests.h"

#include <gtest/gtest.h>

using namespace onnxc::serve;

namespace {

ApiError refusal(const std::string &body, bool chat = false) {
  auto parsed = parseCompletion(body, chat);
  EXPECT_TRUE(std::holds_alternative<ApiError>(parsed)) << body;
  return std::holds_alternative<ApiError>(parsed) ? std::get<ApiError>(parsed) : ApiError{};
}

} // namespace

TEST(ServeRequests, CompletionFieldsAreRead) {
  auto parsed = parseCompletion(R"({"model": "m", "prompt": [1, 2, 3], "max_tokens": 5,
                                    "temperature": 0, "stream": true, "stop": ["\n", "end"],
                                    "seed": 7})",
                                false);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(parsed));
  const CompletionRequest &request = std::get<CompletionRequest>(parsed);
  EXPECT_EQ(request.promptIds, (std::vector<int64_t>{1, 2, 3}));
  EXPECT_FALSE(request.promptText);
  EXPECT_EQ(request.sampling.maxTokens, 5);
  EXPECT_FALSE(request.sampling.sample);
  EXPECT_TRUE(request.stream);
  EXPECT_EQ(request.stop.size(), 2u);
  EXPECT_EQ(request.sampling.seed, 7u);
  auto text = parseCompletion(R"({"model": "m", "prompt": ["hello"], "temperature": 0.5})", false);
  ASSERT_TRUE(std::holds_alternative<CompletionRequest>(text));
  EXPECT_EQ(*std::get<CompletionRequest>(text).promptText, "hello");
  EXPECT_TRUE(std::get<CompletionRequest>(text).sampling.sample);
}

TEST(ServeRequests, RefusalsNameTheField) {
  EXPECT_EQ(refusal("{").param, "");
  EXPECT_NE(refusal("{").message.find("not valid JSON"), std::string::npos);
  EXPECT_EQ(refusal("[1]").message, "the body must be a JSON object");
  EXPECT_EQ(refusal(R"({"prompt": "x"})").param, "model");
  EXPECT_EQ(refusal(R"({"model": "m"})").param, "prompt");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": [1, -2]})").param, "prompt");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": ["a", "b"]})").param, "prompt");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": "x", "max_tokens": 0})").param, "max_tokens");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": "x", "max_tokens": 1.5})").param, "max_tokens");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": "x", "temperature": "a"})").param, "temperature");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": "x", "top_p": 0})").param, "top_p");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": "x", "n": 3})").param, "n");
  EXPECT_EQ(refusal(R"({"model": "m", "prompt": "x", "presence_penalty": 1})").param,
            "presence_penalty");
  EXPECT_EQ(refusal(R"({"model": "m", "messages": [{"role": "user"}]})", true).param,
            "messages[0].content");
  ApiError error = refusal(R"({"model": "m", "prompt": "x", "stream": "yes"})");
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.body(), R"({"error":{"code":null,"message":"'stream' must be a boolean",)"
                          R"("param":"stream","type":"invalid_request_error"}})");
}

TEST(ServeRequests, Embeddings) {
  auto parsed =
      parseEmbedding(R"({"model": "e", "input": ["a", [1, 2]], "encoding_format": "base64"})");
  ASSERT_TRUE(std::holds_alternative<EmbeddingRequest>(parsed));
  const EmbeddingRequest &request = std::get<EmbeddingRequest>(parsed);
  EXPECT_EQ(request.inputs, std::vector<std::string>{"a"});
  EXPECT_EQ(request.inputIds.size(), 1u);
  EXPECT_TRUE(request.base64);
  auto bad = parseEmbedding(R"({"model": "e", "input": 3})");
  ASSERT_TRUE(std::holds_alternative<ApiError>(bad));
  EXPECT_EQ(std::get<ApiError>(bad).param, "input");
}

TEST(ServeAuth, BearerKey) {
  EXPECT_TRUE(authorized("", ""));
  EXPECT_TRUE(authorized("k3y", "Bearer k3y"));
  EXPECT_FALSE(authorized("k3y", ""));
  EXPECT_FALSE(authorized("k3y", "Bearer k3z"));
  EXPECT_FALSE(authorized("k3y", "Bearer k3y "));
  EXPECT_FALSE(authorized("k3y", "Basic k3y"));
}

TEST(ServeMetrics, PrometheusText) {
  Metrics metrics;
  metrics.countRequest("/v1/completions", 200);
  metrics.countRequest("/v1/completions", 200);
  metrics.timeToFirstToken.observe(0.003);
  metrics.timeToFirstToken.observe(20);
  std::string text = metrics.render();
  EXPECT_NE(text.find("onnxc_requests_total{endpoint=\"/v1/completions\",status=\"200\"} 2\n"),
            std::string::npos);
  // Cumulative buckets: 0.003 s counts from the 0.005 bound on, 20 s only in 30 and +Inf.
  EXPECT_NE(text.find("onnxc_time_to_first_token_seconds_bucket{le=\"0.0025\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("onnxc_time_to_first_token_seconds_bucket{le=\"0.005\"} 1\n"),
            std::string::npos);
  EXPECT_NE(text.find("onnxc_time_to_first_token_seconds_bucket{le=\"30\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("onnxc_time_to_first_token_seconds_count 2\n"), std::string::npos);
}
