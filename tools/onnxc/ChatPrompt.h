//===- tools/onnxc/ChatPrompt.h - Messages to a prompt with a chat template ---===//
//
// `onnxc tokenize --chat` and `onnxc generate --chat` render a JSON file of
// messages with a model folder's chat template (onnxc_chat.h), as
// transformers' apply_chat_template does; the prompt is then encoded without
// the tokenizer's added special tokens, which the template writes itself.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>

namespace onnxc {

/// The contents of a text file; fails in one line naming it.
std::string readTextFile(const std::string &path);

/// The prompt the chat template at `templatePath` (a model folder,
/// tokenizer_config.json or .jinja file) makes of the messages in the JSON
/// file `messagesFile`; fails in one line naming the file and the problem.
std::string chatPrompt(const std::string &templatePath, const std::string &messagesFile,
                       bool addGenerationPrompt);

} // namespace onnxc
