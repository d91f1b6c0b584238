//===- serve/ChatPrompt.h - Chat messages to a prompt --------------------===//
//
// /v1/chat/completions turns its messages into one prompt text with the
// model's chat template (onnxc_chat.h: tokenizer_config.json's Jinja
// template, rendered as transformers' apply_chat_template renders it, with
// the generation prompt added). The prompt is then encoded without the
// tokenizer's added special tokens: the template writes them itself.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "serve/ApiError.h"
#include "serve/Requests.h"
#include "serve/ServedModel.h"

#include <optional>
#include <string>

namespace onnxc::serve {

/// The prompt text for the request's messages, or the error to answer with.
std::optional<std::string> chatPrompt(const ServedModel &model, const CompletionRequest &request,
                                      ApiError &error);

} // namespace onnxc::serve
