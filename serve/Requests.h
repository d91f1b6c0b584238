//===- serve/Requests.h - Reading and checking the endpoints' JSON bodies -===//
//
// The bodies of /v1/completions, /v1/chat/completions and /v1/embeddings,
// parsed and checked field by field: malformed JSON, a field of the wrong
// type or out of range, or an option the server does not implement is a
// 400 whose message names the field (and `param` holds it).
//
//===----------------------------------------------------------------------===//
#pragma once

#include "serve/ApiError.h"
#include "serve/Generation.h"

#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace onnxc::serve {

struct ChatMessage {
  std::string role, content;
};

struct CompletionRequest {
  std::string model;
  /// The prompt as text, or as token ids (OpenAI accepts both).
  std::optional<std::string> promptText;
  std::vector<int64_t> promptIds;
  std::vector<ChatMessage> messages; ///< Chat only.
  std::string messagesJson;          ///< Chat only: the messages as sent (every field kept).
  SamplingRequest sampling;
  bool stream = false;
  std::vector<std::string> stop;
};

struct EmbeddingRequest {
  std::string model;
  std::vector<std::string> inputs;
  std::vector<std::vector<int64_t>> inputIds; ///< Token-id inputs.
  bool base64 = false; ///< encoding_format "base64": little-endian f32 bytes, base64 (the openai
                       ///< client's default).
};

/// Parses a completion (`chat` false) or chat completion body; the error
/// names the field at fault.
std::variant<CompletionRequest, ApiError> parseCompletion(const std::string &body, bool chat);
std::variant<EmbeddingRequest, ApiError> parseEmbedding(const std::string &body);

} // namespace onnxc::serve
