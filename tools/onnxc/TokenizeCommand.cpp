//===- tools/onnxc/TokenizeCommand.cpp - onnxc tokenize ----------------------===//
//
// Text to ids and ids to text with a model's tokenizer, through the same C
// API (libonnxc_text, onnxc_tokenizer.h) C programs and Python use. Ids are
// printed as one comma-separated line, the format --decode and
// `onnxc generate --prompt-ids` read. With --chat MESSAGES.json the text is
// the folder's chat template applied to those messages (onnxc_chat.h), encoded
// without added special tokens as transformers' apply_chat_template does;
// --print-chat prints that text instead of its ids.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/ChatPrompt.h"
#include "tools/onnxc/Commands.h"

#include "ir/Error.h"
#include "onnxc/onnxc_tokenizer.h"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

namespace onnxc {

namespace {

using TokenizerPtr = std::unique_ptr<onnxc_tokenizer, decltype(&onnxc_tokenizer_destroy)>;

bool booleanArgument(const ParsedArgs &args, const std::string &option, bool fallback) {
  if (!args.has(option))
    return fallback;
  std::string value = args.get(option);
  if (value == "true" || value == "1")
    return true;
  if (value == "false" || value == "0")
    return false;
  throw UsageError("--" + option + " takes true or false, got '" + value + "'");
}

std::vector<int64_t> parseIds(const std::string &text) {
  std::vector<int64_t> ids;
  std::stringstream stream(text);
  std::string item;
  while (std::getline(stream, item, ',')) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(item, &used);
    } catch (const std::exception &) {
      used = 0;
    }
    if (used == 0 || used != item.size() || id < 0)
      throw UsageError("--decode takes comma-separated token ids, got '" + item + "'");
    ids.push_back(id);
  }
  return ids;
}

std::string textArgument(const ParsedArgs &args) {
  if (int(args.has("text")) + int(args.has("text-file")) + int(args.has("chat")) != 1)
    throw UsageError("tokenize needs one of --text, --text-file, --chat or --decode");
  if (args.has("text"))
    return args.get("text");
  if (args.has("chat"))
    return chatPrompt(args.positionals[0], args.get("chat"),
                      booleanArgument(args, "add-generation-prompt", true));
  return readTextFile(args.get("text-file"));
}

int decodeIds(const onnxc_tokenizer *tokenizer, const ParsedArgs &args) {
  std::vector<int64_t> ids = parseIds(args.get("decode"));
  uint32_t flags =
      booleanArgument(args, "skip-special-tokens", true) ? 0 : ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS;
  char *text = nullptr;
  size_t length = 0;
  if (onnxc_tokenizer_decode(tokenizer, ids.data(), ids.size(), flags, &text, &length) != 0)
    fail(onnxc_tokenizer_last_error());
  std::cout.write(text, static_cast<std::streamsize>(length)) << "\n";
  onnxc_tokenizer_free_text(text);
  return 0;
}

int encodeText(const onnxc_tokenizer *tokenizer, const ParsedArgs &args) {
  std::string text = textArgument(args);
  uint32_t flags = 0;
  // A chat template writes the special tokens itself (bos_token, ...).
  if (booleanArgument(args, "add-special-tokens", !args.has("chat")))
    flags |= ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS;
  if (args.has("no-truncation"))
    flags |= ONNXC_TOKENIZER_NO_TRUNCATION;
  int64_t *ids = nullptr;
  size_t count = 0;
  if (onnxc_tokenizer_encode(tokenizer, text.data(), text.size(), flags, &ids, &count) != 0)
    fail(onnxc_tokenizer_last_error());
  std::unique_ptr<int64_t, decltype(&onnxc_tokenizer_free_ids)> owned(ids,
                                                                      onnxc_tokenizer_free_ids);
  if (args.has("show-tokens")) {
    // One "id<TAB>'text'" line per id, each id decoded alone (special tokens kept).
    for (size_t i = 0; i < count; ++i) {
      char *piece = nullptr;
      size_t length = 0;
      if (onnxc_tokenizer_decode(tokenizer, &ids[i], 1, ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS, &piece,
                                 &length) != 0)
        fail(onnxc_tokenizer_last_error());
      std::cout << ids[i] << "\t'" << std::string(piece, length) << "'\n";
      onnxc_tokenizer_free_text(piece);
    }
    return 0;
  }
  for (size_t i = 0; i < count; ++i)
    std::cout << (i ? "," : "") << ids[i];
  std::cout << "\n";
  return 0;
}

int runTokenize(const ParsedArgs &args) {
  if (args.positionals.size() != 1)
    throw UsageError("tokenize takes one TOKENIZER file or model FOLDER (see 'onnxc tokenize "
                     "--help')");
  if (args.has("print-chat")) {
    if (!args.has("chat"))
      throw UsageError("--print-chat needs --chat MESSAGES.json");
    std::cout << textArgument(args);
    return 0;
  }
  TokenizerPtr tokenizer(onnxc_tokenizer_create(args.positionals[0].c_str()),
                         onnxc_tokenizer_destroy);
  if (!tokenizer)
    fail(onnxc_tokenizer_last_error());
  if (args.has("decode")) {
    if (args.has("text") || args.has("text-file"))
      throw UsageError("--decode does not combine with --text, --text-file or --chat");
    return decodeIds(tokenizer.get(), args);
  }
  return encodeText(tokenizer.get(), args);
}

} // namespace

Command tokenizeCommand() {
  return {"tokenize",
          "text to token ids (or ids to text) with a tokenizer.json, .model or model folder",
          "tokenize TOKENIZER.json|TOKENIZER.model|FOLDER --text \"...\" | --text-file FILE | "
          "--decode 1,2,3 | --chat MESSAGES.json [--print-chat]",
          {{"text", "TEXT", "the text to encode"},
           {"text-file", "FILE", "encode the contents of FILE"},
           {"chat", "FILE",
            "encode the folder's chat template applied to the JSON list of messages in FILE"},
           {"print-chat", "", "with --chat: print the rendered prompt, not its ids"},
           {"add-generation-prompt", "BOOL",
            "with --chat: end with the assistant's turn header (default true)"},
           {"decode", "IDS", "print the text of these comma-separated ids"},
           {"add-special-tokens", "BOOL",
            "add the special tokens the tokenizer's post-processor says (default true, as HF; "
            "false with --chat)"},
           {"no-truncation", "", "ignore the truncation and padding the tokenizer file asks for"},
           {"skip-special-tokens", "BOOL", "leave special tokens out of --decode (default true)"},
           {"show-tokens", "", "print one \"id<TAB>'text'\" line per id, each decoded alone"}},
          runTokenize};
}

} // namespace onnxc
