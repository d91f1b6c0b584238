//===- serve/Requests.cpp - Reading and checking the endpoints' JSON bodies -===//
//
// Fields follow OpenAI's completions API: model, prompt (a string, a list of
// one string, or token ids), max_tokens (16), temperature (1; 0 is greedy),
// top_p, stream, stop (a string or up to 4), seed, n (1 only). Fields a
// client may send with neutral values (presence/frequency penalties of 0,
// logprobs null, echo false) are accepted; other values of them are
// refused by name rather than silently ignored. Unknown fields are ignored,
// as OpenAI-compatible servers do.
//
//===----------------------------------------------------------------------===//
#include "serve/Requests.h"

#include <llvm/Support/JSON.h>

#include <random>

namespace onnxc::serve {

namespace {

using llvm::json::Object;
using llvm::json::Value;

struct Reader {
  const Object &object;
  std::optional<ApiError> error;

  const Value *field(const char *name) {
    const Value *value = object.get(name);
    return value && !value->getAsNull() ? value : nullptr;
  }
  void refuse(const std::string &name, const std::string &message) {
    if (!error)
      error = badRequest("'" + name + "' " + message, name);
  }
  std::optional<std::string> string(const char *name) {
    const Value *value = field(name);
    if (!value)
      return std::nullopt;
    if (auto text = value->getAsString())
      return text->str();
    refuse(name, "must be a string");
    return std::nullopt;
  }
  std::optional<double> number(const char *name, double low, double high) {
    const Value *value = field(name);
    if (!value)
      return std::nullopt;
    std::optional<double> number = value->getAsNumber();
    if (!number) {
      refuse(name, "must be a number");
      return std::nullopt;
    }
    if (*number < low || *number > high)
      refuse(name, "is " + std::to_string(*number) + "; it must be in [" + std::to_string(low) +
                       ", " + std::to_string(high) + "]");
    return number;
  }
  std::optional<int64_t> integer(const char *name, int64_t low, int64_t high) {
    const Value *value = field(name);
    if (!value)
      return std::nullopt;
    std::optional<int64_t> integer = value->getAsInteger();
    if (!integer) {
      refuse(name, "must be an integer");
      return std::nullopt;
    }
    if (*integer < low || *integer > high)
      refuse(name, "is " + std::to_string(*integer) + "; it must be in [" + std::to_string(low) +
                       ", " + std::to_string(high) + "]");
    return integer;
  }
  std::optional<bool> boolean(const char *name) {
    const Value *value = field(name);
    if (!value)
      return std::nullopt;
    if (auto flag = value->getAsBoolean())
      return flag;
    refuse(name, "must be a boolean");
    return std::nullopt;
  }
};

std::variant<Value, ApiError> parseObject(const std::string &body) {
  llvm::Expected<Value> value = llvm::json::parse(body);
  if (!value)
    return badRequest("the body is not valid JSON: " + llvm::toString(value.takeError()));
  if (!value->getAsObject())
    return badRequest("the body must be a JSON object");
  return std::move(*value);
}

/// A list of token ids, or false when `value` is not one.
bool readIds(const Value &value, std::vector<int64_t> &ids) {
  const llvm::json::Array *array = value.getAsArray();
  if (!array || array->empty())
    return false;
  for (const Value &item : *array) {
    std::optional<int64_t> id = item.getAsInteger();
    if (!id || *id < 0)
      return false;
    ids.push_back(*id);
  }
  return true;
}

void readPrompt(Reader &reader, CompletionRequest &request) {
  const Value *prompt = reader.field("prompt");
  if (!prompt)
    return reader.refuse("prompt", "is required");
  if (auto text = prompt->getAsString()) {
    request.promptText = text->str();
    return;
  }
  if (readIds(*prompt, request.promptIds))
    return;
  // A list of one prompt (the openai client's form for batches): one only.
  const llvm::json::Array *array = prompt->getAsArray();
  if (array && array->size() == 1) {
    if (auto text = (*array)[0].getAsString()) {
      request.promptText = text->str();
      return;
    }
    if (readIds((*array)[0], request.promptIds))
      return;
  }
  if (array && array->size() > 1 && (*array)[0].getAsString())
    return reader.refuse("prompt", "holds " + std::to_string(array->size()) +
                                       " prompts; send one prompt per request");
  reader.refuse("prompt", "must be a string or a list of token ids (integers >= 0)");
}

void readMessages(Reader &reader, CompletionRequest &request) {
  const Value *messages = reader.field("messages");
  const llvm::json::Array *array = messages ? messages->getAsArray() : nullptr;
  if (!array || array->empty())
    return reader.refuse("messages", "must be a non-empty list of {role, content} objects");
  for (size_t i = 0; i < array->size(); ++i) {
    const Object *message = (*array)[i].getAsObject();
    std::string where = "messages[" + std::to_string(i) + "]";
    if (!message)
      return reader.refuse(where, "must be an object with 'role' and 'content'");
    std::optional<llvm::StringRef> role = message->getString("role");
    std::optional<llvm::StringRef> content = message->getString("content");
    if (!role)
      return reader.refuse(where + ".role", "must be a string");
    if (!content)
      return reader.refuse(where + ".content", "must be a string");
    request.messages.push_back({role->str(), content->str()});
  }
  // The template may read more than role and content (tool_calls, name...).
  std::string text;
  llvm::raw_string_ostream stream(text);
  stream << *messages;
  stream.flush();
  request.messagesJson = std::move(text);
}

void readStop(Reader &reader, CompletionRequest &request) {
  const Value *stop = reader.field("stop");
  if (!stop)
    return;
  if (auto text = stop->getAsString()) {
    request.stop.push_back(text->str());
    return;
  }
  const llvm::json::Array *array = stop->getAsArray();
  if (!array || array->size() > 4)
    return reader.refuse("stop", "must be a string or a list of up to 4 strings");
  for (const Value &item : *array) {
    auto text = item.getAsString();
    if (!text)
      return reader.refuse("stop", "must be a string or a list of up to 4 strings");
    if (!text->empty())
      request.stop.push_back(text->str());
  }
}

void readSampling(Reader &reader, CompletionRequest &request, bool chat) {
  SamplingRequest &sampling = request.sampling;
  const char *maxName =
      chat && reader.field("max_completion_tokens") ? "max_completion_tokens" : "max_tokens";
  sampling.maxTokens = reader.integer(maxName, 1, int64_t(1) << 31).value_or(chat ? 0 : 16);
  float temperature = float(reader.number("temperature", 0, 2).value_or(1));
  sampling.sample = temperature > 0;
  sampling.temperature = temperature > 0 ? temperature : 1;
  sampling.topP = float(reader.number("top_p", 0, 1).value_or(1));
  if (sampling.topP <= 0)
    reader.refuse("top_p", "must be greater than 0");
  sampling.topK = int32_t(reader.integer("top_k", 0, 1 << 30).value_or(0));
  // Without a seed each request draws its own, as OpenAI's sampling does.
  std::optional<int64_t> seed = reader.integer("seed", INT64_MIN, INT64_MAX);
  sampling.seed =
      seed ? uint64_t(*seed) : (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  request.stream = reader.boolean("stream").value_or(false);
  if (reader.integer("n", 1, 1).value_or(1) != 1)
    return;
  for (const char *penalty : {"presence_penalty", "frequency_penalty"})
    if (reader.number(penalty, -2, 2).value_or(0) != 0)
      reader.refuse(penalty, "is not supported per request by this server; send 0 or leave it out");
  if (reader.field("logprobs") && reader.field("logprobs")->getAsBoolean() != false)
    reader.refuse("logprobs", "is not supported by this server yet");
  if (reader.boolean("echo").value_or(false))
    reader.refuse("echo", "is not supported by this server");
}

} // namespace

std::string ApiError::body() const {
  llvm::json::Object error{{"message", message}, {"type", type}};
  error["param"] = param.empty() ? Value(nullptr) : Value(param);
  error["code"] = code.empty() ? Value(nullptr) : Value(code);
  std::string out;
  llvm::raw_string_ostream stream(out);
  stream << Value(llvm::json::Object{{"error", std::move(error)}});
  stream.flush();
  return out;
}

std::variant<CompletionRequest, ApiError> parseCompletion(const std::string &body, bool chat) {
  std::variant<Value, ApiError> parsed = parseObject(body);
  if (auto *error = std::get_if<ApiError>(&parsed))
    return *error;
  Reader reader{*std::get<Value>(parsed).getAsObject(), std::nullopt};
  CompletionRequest request;
  std::optional<std::string> model = reader.string("model");
  if (!model && !reader.error)
    reader.refuse("model", "is required");
  request.model = model.value_or("");
  if (chat)
    readMessages(reader, request);
  else
    readPrompt(reader, request);
  readSampling(reader, request, chat);
  readStop(reader, request);
  if (reader.error)
    return *reader.error;
  return request;
}

std::variant<EmbeddingRequest, ApiError> parseEmbedding(const std::string &body) {
  std::variant<Value, ApiError> parsed = parseObject(body);
  if (auto *error = std::get_if<ApiError>(&parsed))
    return *error;
  Reader reader{*std::get<Value>(parsed).getAsObject(), std::nullopt};
  EmbeddingRequest request;
  std::optional<std::string> model = reader.string("model");
  if (!model && !reader.error)
    reader.refuse("model", "is required");
  request.model = model.value_or("");
  if (std::optional<std::string> format = reader.string("encoding_format"); format) {
    if (*format != "float" && *format != "base64")
      reader.refuse("encoding_format", "is '" + *format + "'; give 'float' or 'base64'");
    request.base64 = *format == "base64";
  }
  const Value *input = reader.field("input");
  std::vector<int64_t> ids;
  if (!input) {
    reader.refuse("input", "is required");
  } else if (auto text = input->getAsString()) {
    request.inputs.push_back(text->str());
  } else if (readIds(*input, ids)) {
    request.inputIds.push_back(std::move(ids));
  } else if (const llvm::json::Array *array = input->getAsArray(); array && !array->empty()) {
    for (const Value &item : *array) {
      std::vector<int64_t> itemIds;
      if (auto text = item.getAsString())
        request.inputs.push_back(text->str());
      else if (readIds(item, itemIds))
        request.inputIds.push_back(std::move(itemIds));
      else
        reader.refuse("input", "must be a string, a list of strings or of token-id lists");
    }
  } else {
    reader.refuse("input", "must be a string, a list of strings or of token-id lists");
  }
  if (reader.error)
    return *reader.error;
  return request;
}

} // namespace onnxc::serve
