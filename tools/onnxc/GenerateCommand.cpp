//===- tools/onnxc/GenerateCommand.cpp - onnxc generate ---------------------===//
//
// Generates tokens with a compiled decoder through the runtime's generator
// (onnxc_generate.h): the prompt once, then one step per token, in one
// process, with the cache kept in the generator's buffers. Prints the ids as
// one comma-separated line (the --prompt-ids format), or with --prompt the
// text (GenerateText.cpp); what the generator found (KV cache or full
// re-run) and --bench timings go to stderr. MODEL may be a model folder
// (driver/ModelFolder.h): its configs give the stop ids and the defaults.
//
//===----------------------------------------------------------------------===//
#include "tools/onnxc/Commands.h"

#include "codegen/ModelCompiler.h"
#include "driver/HalfInterface.h"
#include "driver/LastPositionLogits.h"
#include "driver/MergedDecoder.h"
#include "driver/ModelFolder.h"
#include "driver/RunnableModel.h"
#include "ir/Error.h"
#include "onnxc/onnxc_generate.h"
#include "tools/onnxc/GenerateSearch.h"
#include "tools/onnxc/GenerateText.h"
#include "tools/onnxc/ModelFiles.h"
#include "tools/onnxc/ProgressLine.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace onnxc {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

/// The comma-separated ids of --`option`.
std::vector<int64_t> idList(const ParsedArgs &args, const std::string &option) {
  return idListText(args.get(option), option);
}

std::vector<int64_t> promptIds(const ParsedArgs &args) {
  if (!args.has("prompt-ids") && args.has("prompt-ids-file"))
    return promptFileRows(args).front();
  if (!args.has("prompt-ids"))
    throw UsageError(args.has("encoder")
                         ? "onnxc generate needs --prompt-ids, the decoder's start (e.g. "
                           "--prompt-ids 2 for BART's decoder_start_token_id)"
                         : "onnxc generate needs --prompt \"text\" or --prompt-ids, e.g. "
                           "--prompt-ids 464,3290,318");
  return idList(args, "prompt-ids");
}

/// The options of the command line; a model folder's configs (`genai`, may
/// be null) supply the roles and the defaults the command line leaves open.
onnxc_generate_options generateOptions(const ParsedArgs &args, const ModelFolder *genai,
                                       size_t promptLength, std::string &mapping,
                                       std::vector<int64_t> &stopIds) {
  onnxc_generate_options options;
  onnxc_generate_options_init(&options);
  std::string maxNew = "32";
  // max_length counts the prompt: what is left of it is generated.
  if (genai && genai->maxNewTokens)
    maxNew = std::to_string(*genai->maxNewTokens);
  else if (genai && genai->maxLength)
    maxNew = std::to_string(std::max<int64_t>(0, *genai->maxLength - int64_t(promptLength)));
  options.max_new_tokens = integerArgument(args.get("max-new-tokens", maxNew), "max-new-tokens", 0);
  options.capacity = integerArgument(args.get("capacity", "0"), "capacity", 0);
  bool sampling = args.has("sample") || (genai && genai->doSample.value_or(false));
  for (const char *option : {"temperature", "top-k", "top-p"})
    if (args.has(option) && !sampling)
      throw UsageError(std::string("--") + option + " applies to sampling; add --sample");
  options.do_sample = sampling ? 1 : 0;
  float temperature = genai && genai->temperature ? float(*genai->temperature) : 1.0f;
  options.temperature = floatArgument(args, "temperature", temperature);
  std::string topK = genai && genai->topK ? std::to_string(*genai->topK) : "0";
  options.top_k = int32_t(integerArgument(args.get("top-k", topK), "top-k", 0));
  options.top_p = floatArgument(args, "top-p", genai && genai->topP ? float(*genai->topP) : 1.0f);
  if (!(options.top_p > 0.0f && options.top_p <= 1.0f))
    throw UsageError("--top-p must be in (0, 1], got " +
                     (args.has("top-p") ? args.get("top-p") : std::to_string(options.top_p)));
  options.seed = uint64_t(integerArgument(args.get("seed", "0"), "seed", 0));
  readSearchOptions(args, sampling, genai ? genai->eosTokenIds : std::vector<int64_t>(), options,
                    stopIds);
  if (genai && genai->repetitionPenalty && !args.has("repetition-penalty"))
    options.repetition_penalty = float(*genai->repetitionPenalty);
  if (genai && genai->padTokenId && !args.has("pad-id"))
    options.pad_token_id = *genai->padTokenId;
  options.num_threads = threadCount(args);
  if (genai)
    mapping = genai->mapping();
  for (const std::string &entry : args.getAll("map"))
    mapping += (mapping.empty() ? "" : ",") + entry;
  options.mapping = mapping.c_str();
  return options;
}

struct GeneratorDeleter {
  void operator()(onnxc_generator *generator) const { onnxc_generator_destroy(generator); }
};

double median(std::vector<double> values) {
  if (values.empty())
    return 0;
  std::sort(values.begin(), values.end());
  size_t middle = values.size() / 2;
  return values.size() % 2 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

struct Timings {
  double coldPrefillMs = -1;  ///< --bench's untimed warm-up prefill; -1: none.
  double prefillMs = 0;       ///< The prompt's run and the first token.
  std::vector<double> stepMs; ///< Each later token.
};

/// Prefill and the token loop; prints the ids as they come with `stream`.
std::vector<int64_t> generateAll(onnxc_generator *generator, const std::vector<int64_t> &prompt,
                                 bool stream, const std::string &path, Timings &timings,
                                 std::vector<std::string> *logprobs, int32_t topLogprobs) {
  Clock::time_point start = Clock::now();
  if (onnxc_generator_prefill(generator, prompt.data(), int64_t(prompt.size())) != 0)
    fail(path, ": ", onnxc_generator_error(generator));
  std::vector<int64_t> tokens;
  while (true) {
    int64_t token = 0;
    int status = onnxc_generator_next(generator, &token);
    double ms = millisecondsSince(start);
    if (status < 0) {
      if (stream && !tokens.empty())
        std::cout << "\n";
      fail(path, ": after ", tokens.size(), " tokens: ", onnxc_generator_error(generator));
    }
    if (status == 0)
      return tokens;
    // The first token comes from the prompt's logits: it belongs to the prefill.
    if (tokens.empty())
      timings.prefillMs = ms;
    else
      timings.stepMs.push_back(ms);
    tokens.push_back(token);
    if (logprobs)
      logprobs->push_back(logprobText(generator, 0, topLogprobs));
    if (stream)
      std::cout << (tokens.size() > 1 ? "," : "") << token << std::flush;
    start = Clock::now();
  }
}

void printBench(const Timings &timings, size_t promptLength, size_t generated) {
  double total = timings.prefillMs;
  for (double ms : timings.stepMs)
    total += ms;
  char line[320];
  std::snprintf(line, sizeof line,
                "prefill %.3f ms (%zu prompt tokens), per token: median %.3f ms over %zu steps, "
                "%zu tokens in %.3f ms; the cold first prefill took %.3f ms\n",
                timings.prefillMs, promptLength, median(timings.stepMs), timings.stepMs.size(),
                generated, total, timings.coldPrefillMs);
  std::cerr << line;
}

/// --bench's warm-up: one prefill, whose time (page faults on the model's
/// weights, the first plan and arena) is reported apart from the timed run.
double coldPrefill(onnxc_generator *generator, const std::vector<int64_t> &prompt,
                   const std::string &path) {
  Clock::time_point start = Clock::now();
  if (onnxc_generator_prefill(generator, prompt.data(), int64_t(prompt.size())) != 0)
    fail(path, ": ", onnxc_generator_error(generator));
  return millisecondsSince(start);
}

/// A model to generate with: a compiled library, or a graph compiled in
/// the process.
RunnableModel loadGenerateModel(const ParsedArgs &args, const std::string &path) {
  checkModelFile(path, "generate", ModelKinds::GraphsAndLibraries);
  if (isModelLibraryPath(path))
    return openModelLibrary(path);
  TargetSelection target = selectTarget(args);
  std::unique_ptr<PassManager> pm = buildPipeline(args, "generate", PrintOptions(), 3);
  std::unique_ptr<Graph> graph = loadModel(path);
  if (fixCacheBranchForGeneration(*graph))
    std::cerr << "onnxc generate: " << path
              << ": use_cache_branch built in as true (an Optimum merged decoder: the decoder with "
                 "the cache, which also takes the prompt with an empty past)\n";
  runPipeline(*pm, *graph, args);
  // The generator reads the last position's logits only (driver/LastPositionLogits.h).
  keepLastPositionLogits(*graph);
  widenHalfInterface(*graph); // the generator reads f32 (driver/HalfInterface.h)
  RunnableModel model =
      compileModelInProcess(std::move(graph), target, ProgressLine::instance().callback());
  // The generator reads the descriptor only; the graph's weights are not kept twice.
  model.graph.reset();
  return model;
}

/// How the generator carries what the model remembers between steps.
std::string cacheSummary(const onnxc_generator *generator) {
  if (onnxc_generator_mode(generator) != ONNXC_GENERATE_KV_CACHE)
    return "no KV cache in the model, re-running the full sequence at every step";
  const int32_t states = onnxc_generator_state_pairs(generator);
  const int32_t inPlace = onnxc_generator_cache_pairs_in_place(generator);
  std::string kvCache =
      inPlace > 0 ? "using the KV cache in place" : "using the KV cache in two buffers";
  if (states == 0)
    return kvCache;
  std::string carried = "carrying " + std::to_string(states) + " recurrent state" +
                        (states == 1 ? "" : "s") + " between steps";
  // Every pair a state: there is no KV cache to speak of.
  return states == onnxc_generator_cache_pairs(generator) ? carried : kvCache + ", " + carried;
}

int runGenerate(const ParsedArgs &args) {
  if (printTargetHelp(args))
    return 0;
  if (args.positionals.size() != 1)
    throw UsageError(std::string(args.positionals.empty() ? "missing MODEL argument"
                                                          : "expected one MODEL argument") +
                     " (see 'onnxc generate --help')");
  // A model folder (onnxruntime-genai, Optimum, or one model with its
  // tokenizer) stands for its model; its configs give the defaults.
  std::string path = args.positionals[0];
  std::optional<ModelFolder> folder;
  if (isFolder(path)) {
    folder = readModelFolder(path);
    path = folder->modelPath;
  }
  const ModelFolder *genai = folder ? &*folder : nullptr;
  std::unique_ptr<TextPrompts> text;
  if (args.has("prompt") || args.has("chat")) {
    if (args.has("prompt-ids") || args.has("prompt-ids-file"))
      throw UsageError("--prompt does not combine with --prompt-ids or --prompt-ids-file");
    if (args.has("encoder"))
      throw UsageError("--prompt applies to decoder-only models; an encoder-decoder takes "
                       "--source-ids and --prompt-ids");
    for (const char *option : {"logprobs", "top-logprobs"})
      if (args.has(option))
        throw UsageError(std::string("--") + option + " applies to --prompt-ids");
    text = std::make_unique<TextPrompts>(args, genai, path);
  } else {
    for (const char *option :
         {"stop", "tokenizer", "no-special-tokens", "keep-special-tokens", "chat-template"})
      if (args.has(option))
        throw UsageError(std::string("--") + option + " applies to --prompt \"text\"");
  }
  std::string encoderPath = args.get("encoder", "");
  if (args.has("encoder") != args.has("source-ids"))
    throw UsageError(args.has("encoder")
                         ? "--encoder needs --source-ids, the ids the encoder reads"
                         : "--source-ids applies to an encoder-decoder model; add --encoder "
                           "ENCODER.so");
  for (const std::string &model : {path, encoderPath})
    if (!model.empty() && isModelLibraryPath(model))
      refuseCompileOptions(args, model, "generate");
  std::vector<int64_t> prompt = text ? text->longestPromptIds() : promptIds(args);
  std::vector<int64_t> source =
      args.has("source-ids") ? idList(args, "source-ids") : std::vector<int64_t>();
  // A batch: --prompt-ids given several times and the lines of --prompt-ids-file.
  std::vector<std::vector<int64_t>> batch;
  for (const std::string &ids : args.getAll("prompt-ids"))
    batch.push_back(idListText(ids, "prompt-ids"));
  for (std::vector<int64_t> &row : promptFileRows(args))
    batch.push_back(std::move(row));
  size_t rows = text ? text->rows() : batch.size();
  std::string mapping;
  std::vector<int64_t> stopIds;
  onnxc_generate_options options = generateOptions(args, genai, prompt.size(), mapping, stopIds);
  if (rows > 1 && options.num_beams > 1)
    throw UsageError("--num-beams takes one prompt; a batch of " + std::to_string(rows) +
                     " prompts is given");
  bool stream = args.has("stream");
  if (text && stream && (rows > 1 || options.num_beams > 1))
    throw UsageError("--stream takes one prompt without --num-beams");

  RunnableModel encoder;
  if (!encoderPath.empty())
    encoder = loadGenerateModel(args, encoderPath);
  RunnableModel decoder = loadGenerateModel(args, path);
  std::unique_ptr<onnxc_generator, GeneratorDeleter> generator(
      encoder.descriptor
          ? onnxc_generator_create_seq2seq(encoder.descriptor, decoder.descriptor, &options)
          : onnxc_generator_create(decoder.descriptor, &options));
  if (!generator)
    fail(path, ": ", onnxc_last_error());
  std::cerr << "onnxc generate: " << (encoder.descriptor ? "encoder-decoder, " : "")
            << cacheSummary(generator.get()) << " (" << onnxc_generator_describe(generator.get())
            << ")\n";
  Clock::time_point encodeStart = Clock::now();
  if (encoder.descriptor &&
      onnxc_generator_encode(generator.get(), source.data(), int64_t(source.size())) != 0)
    fail(encoderPath, ": ", onnxc_generator_error(generator.get()));
  double encodeMs = millisecondsSince(encodeStart);
  if (text) {
    if (options.num_beams > 1)
      text->generateBeams(generator.get(), path);
    else
      text->generate(generator.get(), path, stream, args.has("bench"));
    return 0;
  }
  if (batch.size() > 1 || options.num_beams > 1) {
    if (options.num_beams > 1)
      generateBeams(generator.get(), prompt, path, args.has("bench"));
    else
      generateBatch(generator.get(), batch, path, options.logprobs != 0, args.has("bench"));
    return 0;
  }
  Timings timings;
  if (args.has("bench"))
    timings.coldPrefillMs = coldPrefill(generator.get(), prompt, path);
  std::vector<std::string> logprobs;
  std::vector<int64_t> tokens =
      generateAll(generator.get(), prompt, stream, path, timings,
                  options.logprobs ? &logprobs : nullptr, options.top_logprobs);
  if (!stream)
    for (size_t i = 0; i < tokens.size(); ++i)
      std::cout << (i ? "," : "") << tokens[i];
  std::cout << "\n";
  for (size_t i = 0; i < logprobs.size(); ++i)
    std::cout << (i ? "," : "") << logprobs[i] << (i + 1 == logprobs.size() ? "\n" : "");
  if (args.has("bench")) {
    if (encoder.descriptor) {
      char line[96];
      std::snprintf(line, sizeof line, "encode %.3f ms (%zu source tokens), ", encodeMs,
                    source.size());
      std::cerr << line;
    }
    printBench(timings, prompt.size(), tokens.size());
  }
  return 0;
}

std::vector<OptionSpec> generateOptionSpecs() {
  return joinOptions(
      {{
           {"prompt-ids", "IDS",
            "the prompt's token ids, comma-separated (or --prompt TEXT; with --encoder, the "
            "decoder's start); given several times, a batch with one output line per prompt",
            true},
           {"encoder", "ENCODER.so",
            "an encoder-decoder model's encoder (.so, .onnx or .ir), run once on --source-ids"},
           {"source-ids", "IDS", "the ids the encoder reads, comma-separated"},
           {"max-new-tokens", "N", "tokens to generate at most (default 32)"},
           {"eos-id", "IDS", "stop after generating this id (a comma-separated list: any of them)"},
           {"sample", "", "sample instead of greedy decoding"},
           {"temperature", "T", "sampling temperature (default 1; 0 is greedy)"},
           {"top-k", "K", "sample among the K most likely ids (default: all)"},
           {"top-p", "P", "sample among the most likely ids whose mass reaches P (default 1)"},
           {"seed", "N", "the sampler's seed (default 0)"},
           {"capacity", "N",
            "positions the cache holds, preallocated (default: prompt + max-new-tokens)"},
           {"map", "ROLE=NAME",
            "name a role the generator cannot guess: input_ids, attention_mask, position_ids, "
            "logits=OUTPUT, PAST_INPUT=PRESENT_OUTPUT, or (with --encoder) "
            "INPUT=encoder:OUTPUT or INPUT=source_mask",
            true},
           {"stream", "",
            "print each id (with --prompt, each piece of text) as soon as it is generated"},
           {"bench", "",
            "print the prefill time and the median per-token latency on stderr (after one "
            "untimed warm-up prefill)"},
           {"threads", "N", "runtime threads (default: one per core)"},
       },
       textOptionSpecs(),
       searchOptionSpecs(),
       targetOptions(),
       pipelineOptions()});
}

} // namespace

Command generateCommand() {
  return {"generate", "generate text or token ids with a decoder (KV cache when the model has one)",
          "generate MODEL.so|MODEL.onnx|MODEL.ir|FOLDER --prompt \"text\" [--stream] [--stop S] | "
          "--prompt-ids 464,3290,318 "
          "[--max-new-tokens 32] "
          "[--sample --temperature 0.8 --top-k 40 --top-p 0.9 --seed 1] [--eos-id N] [--stream] "
          "[--bench] [--encoder ENCODER.so --source-ids IDS] [--repetition-penalty 1.2] "
          "[--num-beams 4] [--prompt-ids IDS --prompt-ids IDS ...] [--logprobs]",
          generateOptionSpecs(), runGenerate};
}

} // namespace onnxc
