//===- serve/Embeddings.cpp - /v1/embeddings ---------------------------------===//
//
// Each input (text through the model's tokenizer, or token ids) becomes the
// encoder's mean-pooled, L2-normalized output (Embedder.h), answered in
// OpenAI's list shape with the tokens counted in `usage`.
//
//===----------------------------------------------------------------------===//
#include "serve/Requests.h"
#include "serve/Router.h"
#include "serve/Sse.h"

namespace onnxc::serve {

namespace {

/// The embedding's float32 bytes (little-endian, as x86 holds them) in base64.
std::string base64Floats(const std::vector<float> &values) {
  static const char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const auto *bytes = reinterpret_cast<const unsigned char *>(values.data());
  size_t size = values.size() * sizeof(float);
  std::string out;
  out.reserve((size + 2) / 3 * 4);
  for (size_t i = 0; i < size; i += 3) {
    uint32_t group = uint32_t(bytes[i]) << 16;
    if (i + 1 < size)
      group |= uint32_t(bytes[i + 1]) << 8;
    if (i + 2 < size)
      group |= bytes[i + 2];
    out += kAlphabet[(group >> 18) & 63];
    out += kAlphabet[(group >> 12) & 63];
    out += i + 1 < size ? kAlphabet[(group >> 6) & 63] : '=';
    out += i + 2 < size ? kAlphabet[group & 63] : '=';
  }
  return out;
}

} // namespace

int embeddings(ServerState &state, const HttpRequest &http, ResponseWriter &writer) {
  std::variant<EmbeddingRequest, ApiError> parsed = parseEmbedding(http.body);
  if (auto *error = std::get_if<ApiError>(&parsed))
    return sendError(writer, *error);
  EmbeddingRequest &request = std::get<EmbeddingRequest>(parsed);
  ServedModel *model = state.find(request.model);
  if (!model)
    return sendError(writer,
                     {404, "the model '" + request.model + "' does not exist; see /v1/models",
                      "invalid_request_error", "model", "model_not_found"});
  if (!model->embedder())
    return sendError(
        writer, badRequest("model '" + request.model + "' is a decoder: it answers /v1/completions",
                           "model"));
  std::vector<std::vector<int64_t>> inputs = std::move(request.inputIds);
  for (const std::string &text : request.inputs) {
    if (!model->tokenizer())
      return sendError(writer, badRequest("model '" + request.model +
                                              "' was served without a tokenizer: send token ids",
                                          "input"));
    int64_t *ids = nullptr;
    size_t count = 0;
    if (onnxc_tokenizer_encode(model->tokenizer(), text.data(), text.size(),
                               ONNXC_TOKENIZER_ADD_SPECIAL_TOKENS, &ids, &count) != 0)
      return sendError(writer, badRequest(std::string("an input cannot be tokenized: ") +
                                              onnxc_tokenizer_last_error(),
                                          "input"));
    inputs.emplace_back(ids, ids + count);
    onnxc_tokenizer_free_ids(ids);
  }
  llvm::json::Array data;
  int64_t tokens = 0;
  std::vector<float> embedding;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i].empty() || int64_t(inputs[i].size()) > state.options.maxPromptTokens)
      return sendError(writer,
                       badRequest("input " + std::to_string(i) + " has " +
                                      std::to_string(inputs[i].size()) + " tokens; give 1 to " +
                                      std::to_string(state.options.maxPromptTokens),
                                  "input"));
    std::string error;
    if (!model->embedder()->embed(inputs[i], embedding, error))
      return sendError(writer,
                       {500, "model '" + request.model + "': " + error, "server_error", "", ""});
    tokens += int64_t(inputs[i].size());
    llvm::json::Value values = llvm::json::Array();
    if (request.base64)
      values = base64Floats(embedding);
    else
      for (float value : embedding)
        values.getAsArray()->push_back(double(value));
    data.push_back(llvm::json::Object{
        {"object", "embedding"}, {"index", int64_t(i)}, {"embedding", std::move(values)}});
  }
  state.metrics.promptTokens.fetch_add(uint64_t(tokens));
  writer.send(
      200, "application/json",
      jsonText(llvm::json::Object{
          {"object", "list"},
          {"data", std::move(data)},
          {"model", request.model},
          {"usage", llvm::json::Object{{"prompt_tokens", tokens}, {"total_tokens", tokens}}}}));
  return 200;
}

} // namespace onnxc::serve
