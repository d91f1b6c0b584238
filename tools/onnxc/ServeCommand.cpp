//===- tools/onnxc/ServeCommand.cpp - onnxc serve ------------------------===//
//
// Loads each model argument (a model.so, an .onnx or .ir compiled in the
// process, or a model folder as `onnxc generate FOLDER` reads it: genai,
// Optimum, or a model beside its tokenizer) with its tokenizer, stop ids and
// chat template, and hands them to the server (serve/Server.h). A model's name in the API is its
// file or folder name without the extension.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "driver/HalfInterface.h"
#include "driver/LastPositionLogits.h"
#include "driver/ModelFolder.h"
#include "driver/RunnableModel.h"
#include "ir/Error.h"
#include "serve/Server.h"
#include "tools/onnxc/GenerateSearch.h"
#include "tools/onnxc/ModelFiles.h"
#include "tools/onnxc/ProgressLine.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>

namespace onnxc {

namespace {

namespace fs = std::filesystem;

struct LoadedModel {
  RunnableModel runnable;
  serve::ModelSpec spec;
};

/// The chat template beside a model: chat_template.jinja, or a
/// tokenizer_config.json that has one (onnxc_chat_template_load reads either
/// from the folder).
std::string chatTemplateIn(const fs::path &folder) {
  if (fs::exists(folder / "chat_template.jinja"))
    return folder.string();
  std::ifstream config(folder / "tokenizer_config.json");
  std::string text((std::istreambuf_iterator<char>(config)), std::istreambuf_iterator<char>());
  return text.find("\"chat_template\"") != std::string::npos ? folder.string() : "";
}

LoadedModel loadServedModel(const ParsedArgs &args, const std::string &argument) {
  LoadedModel loaded;
  fs::path path(argument);
  std::string modelPath = argument;
  fs::path folder = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  loaded.spec.name = path.filename().string();
  if (loaded.spec.name.empty())
    loaded.spec.name = path.parent_path().filename().string();
  std::string tokenizerPath = findTokenizer(folder.string());
  if (isFolder(argument)) {
    // A genai, Optimum or plain model folder: the model, the tokenizer, the
    // stop ids and the roles, as `onnxc generate FOLDER` reads them.
    ModelFolder model = readModelFolder(argument);
    modelPath = model.modelPath;
    tokenizerPath = model.tokenizerPath;
    loaded.spec.mapping = model.mapping();
    loaded.spec.eosTokenIds = model.eosTokenIds;
    folder = path;
  } else {
    loaded.spec.name = path.stem().string();
    checkModelFile(argument, "serve", ModelKinds::GraphsAndLibraries);
  }
  if (isModelLibraryPath(modelPath)) {
    loaded.runnable = openModelLibrary(modelPath);
  } else {
    std::unique_ptr<PassManager> pm = buildPipeline(args, "serve", PrintOptions(), 3);
    std::unique_ptr<Graph> graph = loadModel(modelPath);
    runPipeline(*pm, *graph, args);
    // The generator reads the last position's logits only (driver/LastPositionLogits.h); an
    // encoder has no logits and is left as it is.
    keepLastPositionLogits(*graph);
    widenHalfInterface(*graph); // the generator reads f32 (driver/HalfInterface.h)
    loaded.runnable = compileModelInProcess(std::move(graph), selectTarget(args),
                                            ProgressLine::instance().callback());
    loaded.runnable.graph.reset();
  }
  loaded.spec.model = loaded.runnable.descriptor;
  loaded.spec.tokenizerPath = args.has("tokenizer") ? args.get("tokenizer") : tokenizerPath;
  loaded.spec.chatTemplatePath =
      args.has("chat-template") ? args.get("chat-template") : chatTemplateIn(folder);
  if (args.has("eos-id"))
    loaded.spec.eosTokenIds = idListText(args.get("eos-id"), "eos-id");
  return loaded;
}

serve::ServeOptions serveOptions(const ParsedArgs &args) {
  serve::ServeOptions options;
  options.host = args.get("host", options.host);
  options.port = int(integerArgument(args.get("port", "8000"), "port", 0));
  if (options.port > 65535)
    throw UsageError("--port must be at most 65535, got " + args.get("port"));
  const char *fromEnvironment = std::getenv("ONNXC_API_KEY");
  options.apiKey = args.get("api-key", fromEnvironment ? fromEnvironment : "");
  options.maxBatch = int(integerArgument(args.get("max-batch", "8"), "max-batch", 1));
  options.maxQueue = int(integerArgument(args.get("max-queue", "64"), "max-queue", 0));
  options.maxPromptTokens =
      integerArgument(args.get("max-prompt-tokens", "1024"), "max-prompt-tokens", 1);
  options.maxTotalTokens =
      integerArgument(args.get("max-total-tokens", "2048"), "max-total-tokens", 2);
  if (options.maxPromptTokens >= options.maxTotalTokens)
    throw UsageError("--max-prompt-tokens must be less than --max-total-tokens");
  options.requestTimeoutSeconds = double(floatArgument(args, "timeout", 300.0f));
  if (!(options.requestTimeoutSeconds > 0))
    throw UsageError("--timeout must be a positive number of seconds");
  options.maxBodyBytes =
      size_t(integerArgument(args.get("max-body-bytes", "1048576"), "max-body-bytes", 1));
  options.threads = threadCount(args);
  options.logPrompts = args.has("log-prompts");
  return options;
}

int runServe(const ParsedArgs &args) {
  if (args.positionals.empty())
    throw UsageError("missing MODEL argument (see 'onnxc serve --help')");
  for (const char *option : {"tokenizer", "chat-template"})
    if (args.has(option) && args.positionals.size() > 1)
      throw UsageError(std::string("--") + option +
                       " applies to one model; with several, put each beside its model");
  serve::ServeOptions options = serveOptions(args);
  std::vector<LoadedModel> models;
  models.reserve(args.positionals.size());
  for (const std::string &argument : args.positionals)
    models.push_back(loadServedModel(args, argument));
  std::vector<serve::ModelSpec> specs;
  for (const LoadedModel &model : models)
    specs.push_back(model.spec);
  std::string error;
  if (!serve::runServer(options, specs, error))
    throw Error(error);
  return 0;
}

std::vector<OptionSpec> serveOptionSpecs() {
  return joinOptions(
      {{
           {"host", "ADDRESS", "the address to listen on (default 127.0.0.1: this machine only)"},
           {"port", "N", "the port (default 8000; 0: any free port, printed at start)"},
           {"api-key", "KEY",
            "require 'Authorization: Bearer KEY' on every endpoint but /health (default: "
            "$ONNXC_API_KEY; none when unset)"},
           {"tokenizer", "PATH", "the tokenizer (default: tokenizer.json beside the model)"},
           {"chat-template", "PATH",
            "the chat template: a folder, tokenizer_config.json or .jinja file (default: the "
            "one beside the model)"},
           {"eos-id", "IDS", "stop ids, comma-separated (default: the genai folder's)"},
           {"max-batch", "N", "requests a model runs at once (default 8)"},
           {"max-queue", "N", "requests waiting per model before 429 (default 64)"},
           {"max-prompt-tokens", "N", "the longest prompt accepted (default 1024)"},
           {"max-total-tokens", "N", "prompt + max_tokens at most (default 2048)"},
           {"timeout", "SECONDS", "a request still running after this ends (default 300)"},
           {"max-body-bytes", "N", "larger request bodies get 413 (default 1048576)"},
           {"log-prompts", "", "write prompts to the log (off by default)"},
           {"threads", "N", "each model's runtime threads (default: one per core)"},
       },
       targetOptions()});
}

} // namespace

Command serveCommand() {
  return {"serve", "serve models over an OpenAI-compatible HTTP API (continuous batching)",
          "serve MODEL.so|MODEL.onnx|FOLDER ... [--host 127.0.0.1] [--port 8000] [--api-key KEY]",
          serveOptionSpecs(), runServe};
}

} // namespace onnxc
