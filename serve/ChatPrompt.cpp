//===- serve/ChatPrompt.cpp - Chat messages to a prompt (the chat-template seam) -===//
#include "serve/ChatPrompt.h"

namespace onnxc::serve {

std::optional<std::string> chatPrompt(const std::string &modelName,
                                      const std::vector<ChatMessage> &, ApiError &error) {
  error = {
      501,
      "chat completions need the model's chat template, and this onnxc has no chat-template "
      "engine yet (text/chat, issue 30); use /v1/completions with the prompt text for model '" +
          modelName + "'",
      "not_implemented_error", "messages", "chat_template_unavailable"};
  return std::nullopt;
}

} // namespace onnxc::serve
