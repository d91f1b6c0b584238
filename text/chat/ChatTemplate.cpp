//===- text/chat/ChatTemplate.cpp - A model's chat template, loaded and applied -===//
//
// tokenizer_config.json is read with the chat module's own JSON reader
// (Json.cpp), which bounds nesting depth and keeps key order, so that one
// reader serves the config, the messages and the extra variables alike.
//
//===----------------------------------------------------------------------===//
#include "text/chat/ChatTemplate.h"

#include "ir/Error.h"
#include "text/Unicode.h"
#include "text/chat/Json.h"
#include "text/chat/Lexer.h"
#include "text/chat/Parser.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace onnxc::text::chat {
namespace {

namespace fs = std::filesystem;

std::string readFile(const fs::path &path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    fail(path.string(), ": cannot open the file");
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad())
    fail(path.string(), ": cannot read the file");
  return contents.str();
}

/// The special tokens transformers puts in the context (its special_tokens_map).
ValueDict readSpecialTokens(const Value &config) {
  ValueDict tokens;
  for (const char *name : {"bos_token", "eos_token", "unk_token", "sep_token", "pad_token",
                           "cls_token", "mask_token", "additional_special_tokens"}) {
    const Value *value = config.asDict().find(name);
    if (!value || value->isNone())
      continue;
    // An AddedToken is written as {"content": "<s>", "__type": "AddedToken", ...}.
    auto content = [](const Value &token) {
      if (token.kind() == Value::Kind::Dict)
        if (const Value *text = token.asDict().find("content"))
          return *text;
      return token;
    };
    if (value->kind() == Value::Kind::List) {
      ValueList items;
      for (const Value &item : value->asList())
        items.push_back(content(item));
      tokens.set(name, Value::list(std::move(items)));
    } else {
      tokens.set(name, content(*value));
    }
  }
  return tokens;
}

/// "chat_template": a string, or a list of {"name", "template"} of which "default" is used.
std::string templateFromConfig(const Value &config, const std::string &where) {
  const Value *chat = config.asDict().find("chat_template");
  if (!chat || chat->isNone())
    fail(where, ": no chat_template in the file");
  if (chat->isString())
    return chat->asString();
  if (chat->kind() != Value::Kind::List)
    fail(where, ": chat_template must be a string or a list of {name, template}");
  std::string names;
  for (const Value &entry : chat->asList()) {
    if (entry.kind() != Value::Kind::Dict)
      fail(where, ": chat_template entries must be {name, template} objects");
    const Value *name = entry.asDict().find("name");
    const Value *text = entry.asDict().find("template");
    if (!name || !name->isString() || !text || !text->isString())
      fail(where, ": chat_template entries must be {name, template} objects");
    if (name->asString() == "default")
      return text->asString();
    names += (names.empty() ? "" : ", ") + name->asString();
  }
  fail(where, ": chat_template has no 'default' entry (it has: ", names, ")");
}

/// Runs `body`, keeping its error to one line: names and messages from the template (a key
/// 'a\nb', raise_exception's text) may hold line breaks, which are written as escapes.
template <typename Body> auto oneLineErrors(Body body) -> decltype(body()) {
  try {
    return body();
  } catch (const Error &e) {
    std::string line;
    for (unsigned char c : std::string(e.what())) {
      if (c == '\n')
        line += "\\n";
      else if (c == '\r')
        line += "\\r";
      else if (c < 0x20 && c != '\t')
        line += "\\x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
      else
        line += char(c);
    }
    throw Error(line);
  }
}

Value readConfig(const fs::path &path) {
  std::string text = readFile(path);
  requireUtf8(text, path.string());
  Value config = parseJson(text, path.string());
  if (config.kind() != Value::Kind::Dict)
    fail(path.string(), ": expected a JSON object");
  return config;
}

} // namespace

std::unique_ptr<ChatTemplate> ChatTemplate::fromString(std::string_view source) {
  requireUtf8(source, "chat template");
  auto chat = std::make_unique<ChatTemplate>();
  chat->source_ = std::string(source);
  chat->body_ = oneLineErrors([&] { return parseTemplate(lexTemplate(source)); });
  return chat;
}

std::unique_ptr<ChatTemplate> ChatTemplate::load(const std::string &path) {
  std::error_code error;
  fs::path file = path;
  fs::path folder = file;
  if (!fs::is_directory(file, error)) {
    if (!fs::exists(file, error))
      fail(path, ": no such file or folder");
    folder = file.parent_path();
  }
  fs::path configPath = fs::is_directory(file, error) ? folder / "tokenizer_config.json" : file;
  if (file.extension() != ".json")
    configPath = folder / "tokenizer_config.json";
  std::optional<Value> config;
  if (fs::is_regular_file(configPath, error))
    config = readConfig(configPath);
  std::string source;
  if (fs::is_directory(file, error)) {
    if (fs::is_regular_file(folder / "chat_template.jinja", error))
      source = readFile(folder / "chat_template.jinja");
    else if (config)
      source = templateFromConfig(*config, configPath.string());
    else
      fail(path, ": no chat_template.jinja or tokenizer_config.json in the folder");
  } else if (file.extension() == ".json") {
    source = templateFromConfig(*config, configPath.string());
  } else {
    source = readFile(file);
  }
  std::unique_ptr<ChatTemplate> chat = fromString(source);
  if (config)
    chat->specialTokens_ = readSpecialTokens(*config);
  return chat;
}

std::string ChatTemplate::apply(const Value &messages, bool addGenerationPrompt,
                                const ValueDict &variables) const {
  ValueDict context = specialTokens_;
  for (const auto &[name, value] : variables.entries)
    context.set(name, value);
  context.set("messages", messages);
  context.set("add_generation_prompt", Value::boolean(addGenerationPrompt));
  return oneLineErrors([&] { return renderTemplate(body_, context, limits_); });
}

std::string ChatTemplate::applyJson(std::string_view messagesJson, bool addGenerationPrompt,
                                    std::string_view variablesJson) const {
  requireUtf8(messagesJson, "messages");
  Value messages = parseJson(messagesJson, "messages");
  if (messages.kind() != Value::Kind::List)
    fail("messages: expected a JSON array of {\"role\", \"content\"} objects");
  ValueDict variables;
  if (!variablesJson.empty()) {
    requireUtf8(variablesJson, "variables");
    Value parsed = parseJson(variablesJson, "variables");
    if (parsed.kind() != Value::Kind::Dict)
      fail("variables: expected a JSON object");
    variables = parsed.asDict();
  }
  return apply(messages, addGenerationPrompt, variables);
}

} // namespace onnxc::text::chat
