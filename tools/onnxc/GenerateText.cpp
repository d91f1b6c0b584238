//===- tools/onnxc/GenerateText.cpp - onnxc generate --prompt "text" --------===//
#include "tools/onnxc/GenerateText.h"

#include "ir/Error.h"
#include "tools/onnxc/ChatPrompt.h"
#include "tools/onnxc/JsonOutput.h"

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>

namespace onnxc {
namespace {

using Clock = std::chrono::steady_clock;

/// The runtime this program links: the generator it creates is its own.
const onnxc_text_generation_api linkedApi = ONNXC_TEXT_GENERATION_API_LINKED;

std::string tokenizerPath(const ParsedArgs &args, const ModelFolder *folder,
                          const std::string &modelPath) {
  if (args.has("tokenizer"))
    return args.get("tokenizer");
  if (folder) {
    if (folder->tokenizerPath.empty())
      fail(folder->folder, ": no tokenizer.json or tokenizer.model in the ", folder->kindName(),
           " folder; --prompt needs one (give it with --tokenizer PATH)");
    return folder->tokenizerPath;
  }
  // A model file: the tokenizer beside it, as in its folder.
  std::string beside = findTokenizer(std::filesystem::path(modelPath).parent_path().string());
  if (beside.empty())
    fail(modelPath, ": no tokenizer.json or tokenizer.model beside the model; --prompt needs one "
                    "(give it with --tokenizer PATH, or pass the model folder)");
  return beside;
}

/// Prints one prompt's text as it comes (--stream).
int printPiece(int64_t, const char *text, size_t length, void *) {
  std::cout.write(text, std::streamsize(length)).flush();
  return 0;
}

std::string jsonString(const std::string &text) {
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << jsonText(text);
  return stream.str();
}

/// --chat: the one prompt the chat template makes of the messages.
std::string chatTemplatePrompt(const ParsedArgs &args, const ModelFolder *folder,
                               const std::string &modelPath) {
  if (args.has("prompt"))
    throw UsageError("--chat and --prompt exclude each other (the chat template makes the prompt)");
  std::string templatePath = args.has("chat-template") ? args.get("chat-template")
                             : folder                  ? folder->folder
                                      : std::filesystem::path(modelPath).parent_path().string();
  return chatPrompt(templatePath, args.get("chat"), /*addGenerationPrompt=*/true);
}

} // namespace

TextPrompts::TextPrompts(const ParsedArgs &args, const ModelFolder *folder,
                         const std::string &modelPath)
    : prompts_(args.has("chat")
                   ? std::vector<std::string>{chatTemplatePrompt(args, folder, modelPath)}
                   : args.getAll("prompt")),
      stops_(args.getAll("stop")) {
  if (args.has("chat-template") && !args.has("chat"))
    throw UsageError("--chat-template applies with --chat");
  for (size_t i = 0; i < stops_.size(); ++i)
    if (stops_[i].empty())
      throw UsageError("--stop needs a non-empty string (stop " + std::to_string(i + 1) + ")");
  std::string path = tokenizerPath(args, folder, modelPath);
  tokenizer_ = onnxc_tokenizer_create(path.c_str());
  if (!tokenizer_)
    fail(onnxc_tokenizer_last_error());
  onnxc_text_generate_options_init(&options_);
  for (const std::string &stop : stops_)
    stopPointers_.push_back(stop.c_str());
  options_.stop = stopPointers_.data();
  options_.num_stop = int32_t(stopPointers_.size());
  if (args.has("no-special-tokens"))
    options_.encode_flags &= ~ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS;
  if (args.has("keep-special-tokens"))
    options_.decode_flags |= ONNXC_TOKENIZER_KEEP_SPECIAL_TOKENS;
  if (folder && folder->bosTokenId && folder->addBosToken) {
    options_.bos_token_id = *folder->bosTokenId;
    options_.add_bos = *folder->addBosToken ? 1 : 0;
  }
  if (args.has("chat")) { // the template wrote bos and the other special tokens
    options_.encode_flags &= ~ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS;
    options_.add_bos = 0;
  }
}

TextPrompts::~TextPrompts() { onnxc_tokenizer_destroy(tokenizer_); }

std::vector<int64_t> TextPrompts::longestPromptIds() const {
  std::vector<int64_t> longest;
  for (const std::string &prompt : prompts_) {
    int64_t *ids = nullptr;
    size_t count = 0;
    if (onnxc_text_encode_prompt(tokenizer_, prompt.data(), prompt.size(), &options_, &ids,
                                 &count) != 0)
      fail(onnxc_tokenizer_last_error());
    if (count >= longest.size())
      longest.assign(ids, ids + count);
    onnxc_tokenizer_free_ids(ids);
  }
  return longest;
}

void TextPrompts::generate(onnxc_generator *generator, const std::string &path, bool stream,
                           bool bench) {
  onnxc_text_generate_options options = options_;
  if (stream)
    options.on_text = printPiece;
  std::vector<const char *> texts;
  std::vector<size_t> lengths;
  for (const std::string &prompt : prompts_) {
    texts.push_back(prompt.data());
    lengths.push_back(prompt.size());
  }
  Clock::time_point start = Clock::now();
  onnxc_text_result *result = nullptr;
  if (onnxc_text_generate(tokenizer_, generator, &linkedApi, texts.data(), lengths.data(),
                          int64_t(texts.size()), &options, &result) != 0) {
    if (stream)
      std::cout << "\n";
    fail(path, ": ", onnxc_tokenizer_last_error());
  }
  double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  std::unique_ptr<onnxc_text_result, decltype(&onnxc_text_result_destroy)> owned(
      result, onnxc_text_result_destroy);
  int64_t tokens = 0;
  for (int64_t r = 0; r < onnxc_text_result_rows(result); ++r) {
    size_t length = 0;
    const char *text = onnxc_text_result_text(result, r, &length);
    const int64_t *ids = nullptr;
    tokens += onnxc_text_result_ids(result, r, &ids);
    if (prompts_.size() > 1)
      std::cout << jsonString(std::string(text, length));
    else if (!stream)
      std::cout.write(text, std::streamsize(length));
    std::cout << "\n";
  }
  if (bench) {
    char line[160];
    std::snprintf(line, sizeof line, "%lld tokens in %.3f ms, %.1f tokens/s (prefill included)\n",
                  (long long)tokens, seconds * 1e3, double(tokens) / seconds);
    std::cerr << line;
  }
}

void TextPrompts::generateBeams(onnxc_generator *generator, const std::string &path) {
  if (!stops_.empty())
    throw UsageError("--stop applies to greedy decoding and sampling, not to --num-beams");
  std::vector<int64_t> prompt = longestPromptIds();
  int64_t found = onnxc_generator_beam_search(generator, prompt.data(), int64_t(prompt.size()));
  if (found < 0)
    fail(path, ": ", onnxc_generator_error(generator));
  for (int64_t i = 0; i < found; ++i) {
    const int64_t *tokens = nullptr;
    float score = 0;
    int64_t count = onnxc_generator_sequence(generator, i, &tokens, &score);
    char *text = nullptr;
    size_t length = 0;
    if (onnxc_tokenizer_decode(tokenizer_, tokens, size_t(count), options_.decode_flags, &text,
                               &length) != 0)
      fail(onnxc_tokenizer_last_error());
    std::string decoded(text, length);
    onnxc_tokenizer_free_text(text);
    std::cout << (found > 1 ? jsonString(decoded) : decoded) << "\n";
    std::cerr << "sequence " << i << ": score " << score << "\n";
  }
}

std::vector<OptionSpec> textOptionSpecs() {
  return {
      {"prompt", "TEXT",
       "the prompt as text, encoded with the model folder's tokenizer (or --tokenizer); given "
       "several times, a batch with one output line per prompt (a JSON string)",
       true},
      {"tokenizer", "PATH",
       "with --prompt: the tokenizer.json, tokenizer.model or folder to use (default: the model "
       "folder's, or the one beside the model file)"},
      {"stop", "TEXT",
       "with --prompt: end when the text contains TEXT, and cut it before (repeatable)", true},
      {"no-special-tokens", "",
       "with --prompt: encode without the tokenizer's special tokens (bos...)"},
      {"keep-special-tokens", "", "with --prompt: keep special tokens in the generated text"},
      {"chat", "MESSAGES.json",
       "the prompt is the chat template applied to these messages ([{\"role\": ..., "
       "\"content\": ...}, ...]) with the generation prompt, encoded without added special "
       "tokens (the template writes them), as transformers' apply_chat_template"},
      {"chat-template", "PATH",
       "with --chat: the folder, tokenizer_config.json or .jinja file whose template to use "
       "(default: the model folder's, or the folder of the model file)"},
  };
}

} // namespace onnxc
