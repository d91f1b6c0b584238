//===- text/chat/ChatTemplate.h - A model's chat template, loaded and applied -===//
//
// The chat template of a model folder (tokenizer_config.json's
// "chat_template", or chat_template.jinja) rendered as transformers 4.40's
// apply_chat_template renders it: jinja2 with trim_blocks and lstrip_blocks,
// the context holding `messages`, `add_generation_prompt`, the special tokens
// of tokenizer_config.json (bos_token, eos_token, ...) and any extra
// variables (tools, date_string, ...). The interpreter is onnxc's own
// (Lexer, Parser, Renderer): no C++ Jinja library is packaged in Debian.
//
//===----------------------------------------------------------------------===//
#pragma once

#include "text/chat/Ast.h"
#include "text/chat/Renderer.h"

#include <memory>
#include <string>
#include <string_view>

namespace onnxc::text::chat {

class ChatTemplate {
public:
  /// Parses template text; throws Error on a malformed or unsupported template.
  static std::unique_ptr<ChatTemplate> fromString(std::string_view source);
  /// A model folder, its tokenizer_config.json, or a .jinja file (special tokens then come
  /// from a tokenizer_config.json beside it, if any).
  static std::unique_ptr<ChatTemplate> load(const std::string &path);

  /// Renders `messages` (a list of dicts) with the special tokens and `variables` (which
  /// override them) in the context.
  std::string apply(const Value &messages, bool addGenerationPrompt,
                    const ValueDict &variables = {}) const;
  /// The same with JSON text: `messagesJson` a list of messages, `variablesJson` an object
  /// (or empty).
  std::string applyJson(std::string_view messagesJson, bool addGenerationPrompt,
                        std::string_view variablesJson = {}) const;

  const ValueDict &specialTokens() const { return specialTokens_; }
  const std::string &source() const { return source_; }
  RenderLimits &limits() { return limits_; }

private:
  std::string source_;
  StmtList body_;
  ValueDict specialTokens_;
  RenderLimits limits_;
};

} // namespace onnxc::text::chat
