//===- serve/Completions.cpp - /v1/completions and /v1/chat/completions -===//
//
// Checks the request, tokenizes the prompt, checks the limits, queues it
// with its model's scheduler (429 at once when the queue is full), then
// waits for its tokens: a whole response at the end, or server-sent events
// as tokens come. Text comes from the tokenizer's streaming detokenizer, so
// a character split across tokens is sent whole. Stop strings end the
// generation where they start (the stop itself is not sent); text that
// could be the start of a stop string is held back until it is not. A client
// that disconnects cancels its request, which frees its batch row at the
// scheduler's next step.
//
//===----------------------------------------------------------------------===//
#include "serve/ChatPrompt.h"
#include "serve/Requests.h"
#include "serve/Router.h"
#include "serve/Sse.h"

#include <algorithm>
#include <ctime>
#include <iostream>

namespace onnxc::serve {

namespace {

/// The text of the tokens so far, with stop strings applied.
class TextOutput {
public:
  TextOutput(const onnxc_tokenizer *tokenizer, std::vector<std::string> stops)
      : stream_(tokenizer ? onnxc_token_stream_create(tokenizer, 0) : nullptr),
        stops_(std::move(stops)) {}
  ~TextOutput() { onnxc_token_stream_destroy(stream_); }

  /// Adds tokens; returns the text that may be sent now.
  std::string add(const std::vector<int64_t> &tokens) {
    for (int64_t token : tokens) {
      const char *text = nullptr;
      size_t length = 0;
      if (stream_ && onnxc_token_stream_push(stream_, token, &text, &length) == 0)
        pending_.append(text, length);
      if (!stream_)
        pending_ += (count_++ ? " " : "") + std::to_string(token);
    }
    return release(false);
  }
  /// At the end: everything held back.
  std::string finish() {
    const char *text = nullptr;
    size_t length = 0;
    if (stream_ && onnxc_token_stream_finish(stream_, &text, &length) == 0)
      pending_.append(text, length);
    return release(true);
  }
  bool stopped() const { return stopped_; }

private:
  std::string release(bool end) {
    if (stopped_)
      return "";
    size_t cut = std::string::npos;
    for (const std::string &stop : stops_)
      cut = std::min(cut, pending_.find(stop));
    if (cut != std::string::npos) {
      stopped_ = true;
      std::string out = pending_.substr(0, cut);
      pending_.clear();
      return out;
    }
    size_t keep = 0;
    // Hold back the longest tail that begins a stop string.
    for (const std::string &stop : stops_)
      for (size_t n = std::min(stop.size() - 1, pending_.size()); n > keep && !end; --n)
        if (pending_.compare(pending_.size() - n, n, stop, 0, n) == 0)
          keep = n;
    std::string out = pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }

  onnxc_token_stream *stream_;
  std::vector<std::string> stops_;
  std::string pending_;
  size_t count_ = 0;
  bool stopped_ = false;
};

struct Exchange {
  ServerState &state;
  ResponseWriter &writer;
  const CompletionRequest &request;
  bool chat;
  std::string id;
  int64_t created = int64_t(std::time(nullptr));
  int64_t promptTokens = 0, completionTokens = 0;
};

llvm::json::Object choice(const Exchange &x, const std::string &text, const char *finish,
                          bool chunk) {
  llvm::json::Value reason = finish ? llvm::json::Value(finish) : llvm::json::Value(nullptr);
  if (!x.chat)
    return llvm::json::Object{
        {"index", 0}, {"text", text}, {"logprobs", nullptr}, {"finish_reason", std::move(reason)}};
  // A stream's last chunk has an empty delta; its others carry the content.
  llvm::json::Object message;
  if (!chunk)
    message = llvm::json::Object{{"role", "assistant"}, {"content", text}};
  else if (!finish)
    message = llvm::json::Object{{"content", text}};
  return llvm::json::Object{{"index", 0},
                            {chunk ? "delta" : "message", std::move(message)},
                            {"logprobs", nullptr},
                            {"finish_reason", std::move(reason)}};
}

llvm::json::Object envelope(const Exchange &x, llvm::json::Object choiceObject, bool chunk) {
  const char *object =
      x.chat ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
  return llvm::json::Object{{"id", x.id},
                            {"object", object},
                            {"created", x.created},
                            {"model", x.request.model},
                            {"choices", llvm::json::Array{std::move(choiceObject)}}};
}

llvm::json::Object usage(const Exchange &x) {
  return llvm::json::Object{{"prompt_tokens", x.promptTokens},
                            {"completion_tokens", x.completionTokens},
                            {"total_tokens", x.promptTokens + x.completionTokens}};
}

/// The tokens of the prompt, or an error.
std::optional<ApiError> promptIds(ServedModel &model, const CompletionRequest &request, bool chat,
                                  std::vector<int64_t> &ids) {
  std::optional<std::string> text = request.promptText;
  if (chat) {
    ApiError error;
    text = chatPrompt(model, request, error);
    if (!text)
      return error;
  }
  if (!text) {
    ids = request.promptIds;
    return std::nullopt;
  }
  if (!model.tokenizer())
    return badRequest("model '" + model.name() +
                          "' was served without a tokenizer: send the prompt as token ids",
                      "prompt");
  int64_t *encoded = nullptr;
  size_t count = 0;
  // A chat template writes the special tokens itself (transformers encodes
  // its output with add_special_tokens=False).
  uint32_t flags = chat ? 0 : ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS;
  if (onnxc_tokenizer_encode(model.tokenizer(), text->data(), text->size(), flags, &encoded,
                             &count) != 0)
    return badRequest(std::string("the prompt cannot be tokenized: ") +
                          onnxc_tokenizer_last_error(),
                      chat ? "messages" : "prompt");
  ids.assign(encoded, encoded + count);
  onnxc_tokenizer_free_ids(encoded);
  if (ids.empty())
    return badRequest("the prompt is empty after tokenization; give at least one token",
                      chat ? "messages" : "prompt");
  return std::nullopt;
}

std::optional<ApiError> checkLimits(const ServeOptions &options, int64_t modelTotal, int64_t prompt,
                                    const SamplingRequest &sampling, bool chat) {
  const char *param = chat ? "messages" : "prompt";
  if (prompt > options.maxPromptTokens)
    return badRequest("the prompt has " + std::to_string(prompt) + " tokens; this server takes " +
                          std::to_string(options.maxPromptTokens) +
                          " at most (--max-prompt-tokens)",
                      param);
  if (prompt + sampling.maxTokens > modelTotal)
    return badRequest(
        "the prompt's " + std::to_string(prompt) + " tokens and max_tokens " +
            std::to_string(sampling.maxTokens) + " make " +
            std::to_string(prompt + sampling.maxTokens) + " tokens; " +
            (modelTotal < options.maxTotalTokens
                 ? "this model holds " + std::to_string(modelTotal)
                 : "this server allows " + std::to_string(modelTotal) + " (--max-total-tokens)") +
            ": lower max_tokens",
        "max_tokens");
  return std::nullopt;
}

/// The error of a generation that ended without a finish reason.
int sendGenerationError(ResponseWriter &writer, const std::string &error) {
  bool timeout = error.find("timed out") != std::string::npos;
  return sendError(writer, {timeout ? 408 : 500, error, timeout ? "timeout" : "server_error", "",
                            timeout ? "timeout" : ""});
}

/// Waits for the tokens; stop strings and a gone client cancel the generation.
template <typename OnText>
void collect(Exchange &x, Generation &generation, TextOutput &output, OnText &&onText) {
  std::vector<int64_t> tokens;
  while (true) {
    tokens.clear();
    bool arrived = generation.wait(tokens, std::chrono::milliseconds(50));
    x.completionTokens += int64_t(tokens.size());
    if (!tokens.empty() && !onText(output.add(tokens)))
      break;
    if (output.stopped())
      break;
    if (generation.done() && (arrived || tokens.empty())) {
      std::vector<int64_t> rest;
      generation.wait(rest, std::chrono::milliseconds(0));
      x.completionTokens += int64_t(rest.size());
      if (!rest.empty())
        onText(output.add(rest));
      if (!output.stopped())
        onText(output.finish());
      return;
    }
    if (!arrived && x.writer.clientGone())
      break;
  }
  generation.cancelled = true;
}

int streamAnswer(Exchange &x, Generation &generation, TextOutput &output) {
  if (!x.writer.startEvents()) {
    generation.cancelled = true;
    return 499;
  }
  bool open = true;
  if (x.chat)
    open = x.writer.writeEvent(sseEvent(envelope(
        x,
        llvm::json::Object{{"index", 0},
                           {"delta", llvm::json::Object{{"role", "assistant"}, {"content", ""}}},
                           {"logprobs", nullptr},
                           {"finish_reason", nullptr}},
        true)));
  auto send = [&](const std::string &text) {
    if (open && !text.empty())
      open = x.writer.writeEvent(sseEvent(envelope(x, choice(x, text, nullptr, true), true)));
    return open;
  };
  collect(x, generation, output, send);
  if (!open) {
    generation.cancelled = true;
    return 499;
  }
  std::string reason = output.stopped() ? "stop" : generation.finishReason();
  if (!output.stopped() && reason.empty()) {
    // The stream has begun: the error goes in an event, as OpenAI's do.
    ApiError error{500, generation.error(), "server_error", "", ""};
    x.writer.writeEvent("data: " + error.body() + "\n\n");
  } else {
    x.writer.writeEvent(sseEvent(envelope(x, choice(x, "", reason.c_str(), true), true)));
  }
  x.writer.writeEvent(kSseDone);
  return 200;
}

int wholeAnswer(Exchange &x, Generation &generation, TextOutput &output) {
  std::string text;
  bool gone = false;
  collect(x, generation, output, [&](const std::string &piece) {
    text += piece;
    return true;
  });
  gone = generation.cancelled && !output.stopped();
  if (gone)
    return 499;
  std::string reason = output.stopped() ? "stop" : generation.finishReason();
  if (reason.empty())
    return sendGenerationError(x.writer, generation.error());
  llvm::json::Object body = envelope(x, choice(x, text, reason.c_str(), false), false);
  body["usage"] = usage(x);
  x.writer.send(200, "application/json", jsonText(std::move(body)));
  return 200;
}

} // namespace

int completions(ServerState &state, const HttpRequest &http, ResponseWriter &writer, bool chat) {
  std::variant<CompletionRequest, ApiError> parsed = parseCompletion(http.body, chat);
  if (auto *error = std::get_if<ApiError>(&parsed))
    return sendError(writer, *error);
  const CompletionRequest &request = std::get<CompletionRequest>(parsed);
  ServedModel *model = state.find(request.model);
  if (!model)
    return sendError(writer,
                     {404, "the model '" + request.model + "' does not exist; see /v1/models",
                      "invalid_request_error", "model", "model_not_found"});
  if (!model->scheduler())
    return sendError(
        writer, badRequest("model '" + request.model + "' is an encoder: it answers /v1/embeddings",
                           "model"));
  auto generation = std::make_shared<Generation>();
  if (std::optional<ApiError> error = promptIds(*model, request, chat, generation->prompt))
    return sendError(writer, *error);
  generation->sampling = request.sampling;
  // A chat request without max_tokens may use what the limits leave, as OpenAI's chat does.
  int64_t modelTotal = model->scheduler()->maxTotalTokens();
  int64_t promptLength = int64_t(generation->prompt.size());
  if (generation->sampling.maxTokens == 0)
    generation->sampling.maxTokens = std::max<int64_t>(1, modelTotal - promptLength);
  if (std::optional<ApiError> error =
          checkLimits(state.options, modelTotal, promptLength, generation->sampling, chat))
    return sendError(writer, *error);
  generation->deadline =
      generation->arrival +
      std::chrono::milliseconds(int64_t(state.options.requestTimeoutSeconds * 1000));
  if (state.options.logPrompts)
    std::cerr << "onnxc serve: " << request.model << " prompt: "
              << (chat ? request.messagesJson : request.promptText.value_or("(token ids)")) << "\n";
  if (!model->scheduler()->submit(generation)) {
    state.metrics.rejectedFull.fetch_add(1);
    return sendError(writer, {429,
                              "the server is busy: the queue of model '" + request.model +
                                  "' is full (" + std::to_string(state.options.maxQueue) +
                                  " waiting, --max-queue); retry later",
                              "rate_limit_error", "", "queue_full"});
  }
  Exchange x{state, writer, request, chat,
             (chat ? "chatcmpl-" : "cmpl-") + std::to_string(state.nextId.fetch_add(1))};
  x.promptTokens = int64_t(generation->prompt.size());
  TextOutput output(model->tokenizer(), request.stop);
  return request.stream ? streamAnswer(x, *generation, output)
                        : wholeAnswer(x, *generation, output);
}

} // namespace onnxc::serve
