//===- serve/ChatPrompt.cpp - Chat messages to a prompt --------------------===//
#include "serve/ChatPrompt.h"

namespace onnxc::serve {

std::optional<std::string> chatPrompt(const ServedModel &model, const CompletionRequest &request,
                                      ApiError &error) {
  if (!model.chatTemplate()) {
    error =
        badRequest(model.chatProblem() + "; use /v1/completions with the prompt text", "messages");
    return std::nullopt;
  }
  char *text = nullptr;
  size_t length = 0;
  if (onnxc_chat_template_apply(model.chatTemplate(), request.messagesJson.c_str(), nullptr, 1,
                                &text, &length) != 0) {
    // The template's own raise_exception (a role it does not take...) is the client's mistake.
    error = badRequest(std::string("the messages do not fit the model's chat template: ") +
                           onnxc_chat_template_last_error(),
                       "messages");
    return std::nullopt;
  }
  std::string prompt(text, length);
  onnxc_chat_template_free_text(text);
  return prompt;
}

} // namespace onnxc::serve
