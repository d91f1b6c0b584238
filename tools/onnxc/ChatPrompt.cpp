//===- tools/onnxc/ChatPrompt.cpp - Messages to a prompt with a chat template -===//
#include "tools/onnxc/ChatPrompt.h"

#include "ir/Error.h"
#include "onnxc/onnxc_chat.h"

#include <fstream>
#include <memory>
#include <sstream>

namespace onnxc {

std::string readTextFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path, ": cannot open the file");
  std::ostringstream contents;
  contents << in.rdbuf();
  return contents.str();
}

std::string chatPrompt(const std::string &templatePath, const std::string &messagesFile,
                       bool addGenerationPrompt) {
  std::unique_ptr<onnxc_chat_template, decltype(&onnxc_chat_template_destroy)> chat(
      onnxc_chat_template_load(templatePath.c_str()), onnxc_chat_template_destroy);
  if (!chat)
    fail(onnxc_chat_template_last_error());
  std::string messages = readTextFile(messagesFile);
  char *text = nullptr;
  size_t length = 0;
  if (onnxc_chat_template_apply(chat.get(), messages.c_str(), nullptr, addGenerationPrompt, &text,
                                &length) != 0)
    fail(messagesFile, ": ", onnxc_chat_template_last_error());
  std::string prompt(text, length);
  onnxc_chat_template_free_text(text);
  return prompt;
}

} // namespace onnxc
