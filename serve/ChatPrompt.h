//===- serve/ChatPrompt.h - Chat messages to a prompt (the chat-template seam) -===//
//
// /v1/chat/completions turns its messages into one prompt text through the
// model's chat template (tokenizer_config.json's Jinja template). onnxc's
// template engine (text/chat, onnxc_chat.h) is not in this tree yet, so
// this seam refuses with 501 naming why; when it lands, this is the one
// function to write, and the chat endpoint (Completions.cpp) is ready.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "serve/ApiError.h"
#include "serve/Requests.h"

#include <optional>
#include <string>
#include <vector>

namespace onnxc::serve {

/// The prompt text for `messages`, or the error to answer with.
std::optional<std::string> chatPrompt(const std::string &modelName,
                                      const std::vector<ChatMessage> &messages, ApiError &error);

} // namespace onnxc::serve
